"""HALO (optiforge/solvers/halo.py): the homotopy's properties and the train() contract."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from optiforge.solvers.halo import (  # noqa: E402
    HaloConfig,
    StepInfo,
    auxiliary,
    lowest_active_block,
    train,
)

N_BLOCKS = 4


class _Count(torch.autograd.Function):
    """Identity whose backward counts how often the backward pass reaches it."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, box: list[int]) -> torch.Tensor:
        ctx.box = box
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        ctx.box[0] += 1
        return g, None


class _Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.backwards = [0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Counted at the block's output: reached only if backward enters this block.
        return _Count.apply(x + torch.tanh(self.lin(x)), self.backwards)


class _Net(nn.Module):
    def __init__(self, d: int = 8, n: int = N_BLOCKS) -> None:
        super().__init__()
        self.embed = nn.Linear(3, d)
        self.layers = nn.ModuleList(_Block(d) for _ in range(n))
        self.out = nn.Linear(d, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        for b in self.layers:
            h = b(h)
        return self.out(h).squeeze(-1)


def _setup(seed: int = 0) -> tuple[_Net, list[tuple[torch.Tensor, torch.Tensor]]]:
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = _Net()
    net.embed.requires_grad_(False)  # below the blocks: frozen, as train() asks
    x = torch.randn(64, 3, generator=g)
    y = torch.sin(x.sum(-1)) + 0.5 * x[:, 0] * x[:, 1]
    return net, [(x[i : i + 16], y[i : i + 16]) for i in range(0, 64, 16)]


def _mse(net: _Net) -> Any:
    return lambda b: torch.mean((net(b[0]) - b[1]) ** 2)


# --- the auxiliary functions -------------------------------------------------------


@pytest.mark.parametrize("homotopy", [True, False])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_auxiliary_functions_are_monotone_in_t_and_join_output_first(
    n: int, homotopy: bool
) -> None:
    cfg = HaloConfig(homotopy=homotopy)
    ts = [i / 200 for i in range(201)]
    rows = [auxiliary(t, n, cfg) for t in ts]
    for a in rows:
        assert all(0.0 <= x <= 1.0 for x in a)
        # INPUT->OUTPUT order: a block never leads the block above it.
        assert all(a[i] <= a[i + 1] for i in range(n - 1))
    for i in range(n):
        col = [r[i] for r in rows]
        assert all(u <= v for u, v in zip(col, col[1:], strict=False))
    assert rows[0] == [0.0] * n and rows[-1] == [1.0] * n
    if not homotopy:
        assert {x for r in rows for x in r} <= {0.0, 1.0}
    elif n > 1:
        # The smooth ramps take intermediate values and overlap (two blocks mid-ramp).
        assert any(sum(1 for x in r if 0.0 < x < 1.0) >= 2 for r in rows)


def test_output_block_starts_first_and_input_block_finishes_at_t_one() -> None:
    a = auxiliary(0.05, N_BLOCKS)
    assert a[-1] > 0.0 and a[:-1] == [0.0] * (N_BLOCKS - 1)
    assert lowest_active_block(a) == N_BLOCKS - 1
    assert auxiliary(0.999, N_BLOCKS)[0] < 1.0
    assert auxiliary(1.0, N_BLOCKS)[0] == 1.0
    assert lowest_active_block([0.0, 0.0]) is None


# --- train() ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["halo", "full", "blockwise"])
def test_train_reduces_the_loss_and_reports_every_step(method: str) -> None:
    net, batches = _setup()
    loss = _mse(net)
    with torch.no_grad():
        before = sum(float(loss(b)) for b in batches)
    seen: list[StepInfo] = []
    res = train(
        loss,
        batches,
        blocks=net.layers,
        head=[net.out],
        steps=80,
        method=method,
        lr=1e-2,
        on_step=seen.append,
    )
    assert res.steps == 80 and len(res.history) == 80 and seen == res.history
    assert [h.step for h in res.history] == list(range(80))
    assert res.final_loss == res.history[-1].loss
    assert all(0.0 <= h.t <= 1.0 and h.cpu_seconds >= 0.0 for h in res.history)
    with torch.no_grad():
        after = sum(float(loss(b)) for b in batches)
    assert after < 0.7 * before
    active = [h.active_blocks for h in res.history]
    if method == "full":
        assert set(active) == {N_BLOCKS}
    elif method == "blockwise":
        assert set(active) == {1}
    else:
        assert active[0] == 0 and active[-1] == N_BLOCKS
        assert all(u <= v for u, v in zip(active, active[1:], strict=False))
        assert res.history[-1].t == 1.0


def test_frozen_blocks_get_no_gradient_and_no_backward_pass() -> None:
    net, batches = _setup()
    cfg = HaloConfig(ramp=1.0)
    rows: list[tuple[int, list[int], list[bool]]] = []
    last = [0] * N_BLOCKS

    def watch(info: StepInfo) -> None:
        counts = [b.backwards[0] for b in net.layers]
        reached = [c - p for c, p in zip(counts, last, strict=True)]
        last[:] = counts
        has_grad = [net.layers[i].lin.weight.grad is not None for i in range(N_BLOCKS)]
        rows.append((info.active_blocks, reached, has_grad))

    train(
        _mse(net),
        batches,
        blocks=net.layers,
        head=[net.out],
        steps=40,
        config=cfg,
        lr=1e-2,
        on_step=watch,
    )
    for active, reached, has_grad in rows:
        lowest = N_BLOCKS - active  # blocks join output first, so they are the top `active`
        assert reached == [1 if i >= lowest else 0 for i in range(N_BLOCKS)]
        assert has_grad == [i >= lowest for i in range(N_BLOCKS)]
    assert {r[0] for r in rows} == set(range(N_BLOCKS + 1))


def test_blockwise_trains_one_block_at_a_time_from_the_output() -> None:
    net, batches = _setup()
    trained: list[int] = []

    def watch(info: StepInfo) -> None:
        trained.append(
            next(i for i in range(N_BLOCKS) if net.layers[i].lin.weight.grad is not None)
        )

    train(
        _mse(net),
        batches,
        blocks=net.layers,
        head=[net.out],
        steps=8,
        method="blockwise",
        on_step=watch,
    )
    assert trained == [3, 3, 2, 2, 1, 1, 0, 0]


@pytest.mark.parametrize("deformation", ["reparam", "step"])
def test_blocks_stay_at_the_pretrained_weights_until_their_turn(deformation: str) -> None:
    net, batches = _setup()
    w0 = [b.lin.weight.detach().clone() for b in net.layers]
    cfg = HaloConfig(ramp=1.0, deformation=deformation)
    checked = [0]

    def watch(info: StepInfo) -> None:
        lowest = N_BLOCKS - info.active_blocks
        for i in range(N_BLOCKS):
            if i < lowest:
                assert torch.equal(net.layers[i].lin.weight, w0[i]), (info.step, i)
                checked[0] += 1

    train(
        _mse(net),
        batches,
        blocks=net.layers,
        head=[net.out],
        steps=40,
        config=cfg,
        lr=1e-2,
        on_step=watch,
    )
    assert checked[0] > 40  # the lower blocks were frozen for many steps
    assert all(not torch.equal(b.lin.weight, w) for b, w in zip(net.layers, w0, strict=True))


def test_train_restores_requires_grad_and_keeps_the_model_at_its_final_weights() -> None:
    net, batches = _setup()
    w0 = [b.lin.weight.detach().clone() for b in net.layers]
    net.layers[1].requires_grad_(False)  # the caller's flags come back as they were
    flags = [p.requires_grad for p in net.parameters()]
    res = train(_mse(net), batches, blocks=net.layers, head=[net.out], steps=60, lr=1e-2)
    assert [p.requires_grad for p in net.parameters()] == flags
    assert all(p.grad is None for p in net.parameters())
    assert all(not torch.equal(b.lin.weight, w) for b, w in zip(net.layers, w0, strict=True))
    # The module holds theta (not theta0): its loss is the trained loss, not the initial.
    assert abs(_mse(net)(batches[-1]).item() - res.final_loss) < 0.5


def test_same_seed_same_history() -> None:
    runs = []
    for _ in range(2):
        net, batches = _setup()
        drop = nn.Dropout(0.2)
        fn = lambda b, net=net, drop=drop: torch.mean((drop(net(b[0])) - b[1]) ** 2)  # noqa: E731
        runs.append(
            [
                h.loss
                for h in train(
                    fn, batches, blocks=net.layers, head=[net.out], steps=20, seed=3
                ).history
            ]
        )
    assert runs[0] == runs[1]


def test_warns_when_something_below_the_blocks_is_trainable() -> None:
    net, batches = _setup()
    net.embed.requires_grad_(True)  # e.g. tied embeddings
    with pytest.warns(UserWarning, match="frozen blocks are still back-propagated"):
        train(_mse(net), batches, blocks=net.layers, head=[net.out], steps=3)
    net.embed.requires_grad_(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train(_mse(net), batches, blocks=net.layers, head=[net.out], steps=3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "lora"}, "method must be one of"),
        ({"steps": 0}, "steps must be >= 1"),
        ({"lr": 0.0}, "lr must be > 0"),
        ({"blocks": []}, "blocks is empty"),
    ],
)
def test_bad_input_is_one_clear_error(kwargs: dict[str, Any], match: str) -> None:
    net, batches = _setup()
    args: dict[str, Any] = {"blocks": net.layers, "head": [net.out], "steps": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        train(_mse(net), batches, **args)
    with pytest.raises(ValueError, match="batches is empty"):
        train(_mse(net), [], blocks=net.layers, head=[net.out], steps=2)
    with pytest.raises(ValueError, match="scalar"):
        train(lambda b: net(b[0]), batches, blocks=net.layers, head=[net.out], steps=2)
    with pytest.raises(Exception, match="extra"):
        HaloConfig(rampp=0.3)  # type: ignore[call-arg]
