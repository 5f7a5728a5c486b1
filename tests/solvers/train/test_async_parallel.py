"""The asynchronous-parallel rules in one process: look-ahead, shared sparse indices, the
EMA correction, the flat parameter buffer, the grammar (no communication here; the
4-process runs are in test_async_parallel_claims.py)."""

from __future__ import annotations

import pytest
import torch

from optiforge.solvers.train.async_parallel.rules import (
    EMACorrection,
    flatten_params,
    lookahead,
    make_stages,
    sparse_indices,
)
from optiforge.solvers.train.async_parallel.text import INDEX, VOCAB, LMData, sentence


def test_lookahead_extrapolates_the_last_step_over_the_staleness() -> None:
    w = [torch.tensor([1.0, 2.0]), torch.tensor([[0.5]])]
    d = [torch.tensor([0.1, -0.2]), torch.tensor([[-0.05]])]
    out = lookahead(w, d, 3)
    assert torch.allclose(out[0], torch.tensor([1.3, 1.4]))
    assert torch.allclose(out[1], torch.tensor([[0.35]]))
    assert torch.equal(w[0], torch.tensor([1.0, 2.0]))  # the live weights are untouched
    assert all(torch.equal(a, b) for a, b in zip(lookahead(w, d, 0), w, strict=True))


def test_sparse_indices_are_shared_distinct_and_change_per_round() -> None:
    a = sparse_indices(1000, 0.1, seed=3, stage=0, round_=5)
    b = sparse_indices(1000, 0.1, seed=3, stage=0, round_=5)  # the peer replica's draw
    assert torch.equal(a, b)
    assert a.numel() == 100 and a.unique().numel() == 100
    assert bool((a[1:] > a[:-1]).all()) and int(a.min()) >= 0 and int(a.max()) < 1000
    assert not torch.equal(a, sparse_indices(1000, 0.1, seed=3, stage=0, round_=6))
    assert not torch.equal(a, sparse_indices(1000, 0.1, seed=3, stage=1, round_=5))
    assert sparse_indices(10, 1e-6, 0, 0, 0).numel() == 1


def test_plain_sparse_averaging_is_the_stale_average_plus_own_progress() -> None:
    """beta = 0, gamma = 1: after folding in an exchange sent before local steps p1, p2,
    each replica holds the pair's average at send time plus its own progress since."""
    idx = torch.tensor([0, 2])
    s1, s2 = torch.tensor([1.0, 5.0, 3.0]), torch.tensor([3.0, 7.0, -1.0])
    p1, p2 = torch.tensor([0.1, 0.1, 0.1]), torch.tensor([-0.2, 0.0, 0.3])
    x1, x2 = s1 + p1, s2 + p2
    c1, c2 = EMACorrection(x1, 0.0, 1.0), EMACorrection(x2, 0.0, 1.0)
    c1.receive(idx, s1[idx], s2[idx])
    c2.receive(idx, s2[idx], s1[idx])
    c1.apply()
    c2.apply()
    avg = (s1 + s2) / 2
    assert torch.allclose(x1[idx], avg[idx] + p1[idx]) and torch.allclose(x2[idx], avg[idx] + p2[idx])  # fmt: skip
    assert x1[1] == s1[1] + p1[1]  # a coordinate not exchanged is left alone
    assert torch.count_nonzero(c1.offset) == 0


def test_ema_correction_by_hand() -> None:
    x = torch.zeros(3)
    c = EMACorrection(x, beta=0.5, gamma=0.25)
    c.receive(torch.tensor([1]), torch.tensor([0.0]), torch.tensor([4.0]))  # c = 2
    assert torch.allclose(c.offset, torch.tensor([0.0, 1.0, 0.0]))  # 0 + (1 - 0.5) * 2
    c.apply()
    assert torch.allclose(x, torch.tensor([0.0, 0.25, 0.0]))
    assert torch.allclose(c.offset, torch.tensor([0.0, 0.75, 0.0]))
    c.receive(torch.tensor([1]), torch.tensor([0.0]), torch.tensor([-2.0]))  # c = -1
    assert torch.allclose(c.offset, torch.tensor([0.0, 0.75 - 0.5, 0.0]))
    assert torch.allclose(c.estimate(torch.tensor([1])), torch.tensor([0.5]))  # z = x + o
    # the corrections of a pair cancel: the replicas' sum is unchanged by averaging
    x1, x2 = torch.tensor([1.0, 2.0]), torch.tensor([3.0, -2.0])
    e1, e2 = EMACorrection(x1, 0.3, 0.4), EMACorrection(x2, 0.3, 0.4)
    idx = torch.tensor([0, 1])
    e1.receive(idx, x1.clone(), x2.clone())
    e2.receive(idx, x2.clone(), x1.clone())
    for _ in range(5):
        e1.apply()
        e2.apply()
    assert torch.allclose(x1 + x2, torch.tensor([4.0, 0.0]))
    assert float((x1 - x2).abs().max()) < float(torch.tensor([2.0, 4.0]).abs().max())
    with pytest.raises(ValueError):
        EMACorrection(x, beta=1.0, gamma=0.5)


def test_flat_buffer_backs_the_parameters() -> None:
    s0, s1 = make_stages(0, len(VOCAB), 6, 16, 32)
    t0, _ = make_stages(0, len(VOCAB), 6, 16, 32)
    assert all(torch.equal(a, b) for a, b in zip(s0.parameters(), t0.parameters(), strict=True))
    before = torch.nn.utils.parameters_to_vector(s0.parameters()).detach()
    flat = flatten_params(s0)
    assert torch.equal(flat, before)
    flat[0] += 1.0
    assert float(s0.emb.weight[0, 0].detach()) == float(before[0]) + 1.0
    opt = torch.optim.Adam(s0.parameters(), lr=0.1)
    x = torch.randint(0, len(VOCAB), (4, 6))
    s1(s0(x)).sum().backward()
    opt.step()
    assert torch.equal(flat, torch.nn.utils.parameters_to_vector(s0.parameters()))
    assert not torch.equal(flat, before)


def test_grammar_agrees_and_batches_are_reproducible() -> None:
    import random

    rng = random.Random(0)
    for _ in range(200):
        words = sentence(rng)
        assert words[-1] == "." and all(w in INDEX for w in words)
        if words[0] in ("some", "these"):
            verb = next(w for w in words[1:] if w in ("see", "like", "chase", "find", "sleep", "run", "sees", "likes", "chases", "finds", "sleeps", "runs"))  # fmt: skip
            assert not verb.endswith("s")
    data = LMData(context=6, n_train=5_000, n_val=64, data_seed=1)
    x, y = data.batch(replica=1, step=7, size=8)
    x2, y2 = data.batch(replica=1, step=7, size=8)
    assert x.shape == (8, 6) and y.shape == (8,) and torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(x, data.batch(replica=0, step=7, size=8)[0])
    assert data.val_x.shape == (64, 6)


def test_config_refuses_what_the_schedules_cannot_run() -> None:
    from optiforge.solvers.train.async_parallel import Config

    for bad in ({"batch": 30, "microbatches": 4}, {"in_flight": 0}, {"fraction": 1.5}, {"mode": "x"}):  # fmt: skip
        with pytest.raises(ValueError):
            Config(**bad)  # type: ignore[arg-type]
