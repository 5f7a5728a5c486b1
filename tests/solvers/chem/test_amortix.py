"""Unit tests of the molecule back end: scaffolds, decoding, oracles, the graph transformer,
the RL advantages and training loop, and the scaffold-preserving GA."""

import itertools

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit")

from rdkit import Chem  # noqa: E402

from optiforge.errors import InvalidTask  # noqa: E402
from optiforge.solvers.chem import (  # noqa: E402
    FRAGMENTS,
    OBJECTIVES,
    GraphTransformerPolicy,
    Oracle,
    assemble,
    decode,
    graph_ga,
    load_scaffolds,
    scaffold,
    train,
)
from optiforge.solvers.chem.amortix import featurize, group_advantages, make_batch  # noqa: E402
from optiforge.solvers.chem.graph_ga import fragment_neighbours  # noqa: E402
from optiforge.solvers.chem.molecules import start_molecule  # noqa: E402

F = {f: i for i, f in enumerate(FRAGMENTS)}


def test_shipped_scaffolds_are_split_disjoint_and_valid() -> None:
    train_s, held = load_scaffolds("train"), load_scaffolds("heldout")
    assert len(train_s) >= 20 and len(held) >= 10
    assert not {s.smiles for s in train_s} & {s.smiles for s in held}
    for s in train_s + held:
        assert start_molecule(s).GetNumAtoms() > 3
    with pytest.raises(InvalidTask):
        load_scaffolds("test")


def test_scaffold_rejects_bad_attachment_numbering() -> None:
    with pytest.raises(InvalidTask):
        scaffold("[*:1]c1ccc([*:3])cc1")
    with pytest.raises(InvalidTask):
        scaffold("c1ccccc1")


def test_assemble_attaches_fragments_and_checks_valence() -> None:
    benz = scaffold("[*:1]c1ccc([*:2])cc1")
    mol = assemble(benz, [F["*F"], F["*c1ccccc1"]])
    assert Chem.MolToSmiles(mol) == Chem.CanonSmiles("Fc1ccc(-c2ccccc2)cc1")
    assert Chem.MolToSmiles(assemble(benz, [0, 0])) == "c1ccccc1"
    # a double-bonded oxygen on one aromatic carbon breaks the ring: invalid
    assert assemble(benz, [F["*=O"], F["*F"]]) is None
    # ... but on a ring CH2 it is a ketone
    cyc = scaffold("[*:1]C1CCC([*:2])CC1")
    assert Chem.MolToSmiles(assemble(cyc, [F["*=O"], 0])) == Chem.CanonSmiles("O=C1CCCCC1")
    # a ring nitrogen cannot take a double bond
    pip = scaffold("[*:1]C1CCN([*:2])CC1")
    assert assemble(pip, [0, F["*=C"]]) is None
    with pytest.raises(InvalidTask):
        assemble(benz, [0])


def test_oracle_counts_distinct_calls_and_scores_invalid_zero() -> None:
    benz = scaffold("[*:1]c1ccc([*:2])cc1")
    o = Oracle("qed_logp_sim")
    a = o(benz, [F["*F"], F["*C"]])
    assert o(benz, (F["*F"], F["*C"])) == a and o.calls == 1
    assert o(benz, [F["*=O"], F["*F"]]) == 0.0 and o.calls == 2
    assert not o.is_valid(benz, [F["*=O"], F["*F"]])
    for obj in OBJECTIVES:
        v = Oracle(obj)(benz, [F["*Cl"], F["*OC"]])
        assert np.isfinite(v)
        if obj != "plogp":
            assert 0.0 <= v <= 1.0
    assert Oracle("similarity")(benz, [0, 0]) == pytest.approx(1.0)
    with pytest.raises(InvalidTask):
        Oracle("nope")


def test_featurize_shapes_and_distances() -> None:
    s = scaffold("[*:1]c1ccc([*:2])cc1")
    g = featurize(s)
    n = g.features.shape[0]
    assert g.features.shape == (n, 6) and g.distance.shape == (n, n)
    assert torch.equal(g.distance, g.distance.T) and int(g.distance.diagonal().sum()) == 0
    # the two attachment points are para: 1 + 3 + 1 bonds apart
    assert int(g.distance[g.points[0], g.points[1]]) == 5


def test_policy_output_is_per_point_and_padding_invariant() -> None:
    torch.manual_seed(0)
    pol = GraphTransformerPolicy(d_model=32, n_layers=2).eval()
    small, big = scaffold("[*:1]c1ccc([*:2])cc1"), load_scaffolds("train")[12]
    alone, _ = pol.logits([small])
    both, owner = pol.logits([small, big])
    assert both.shape == (small.n_points + big.n_points, len(FRAGMENTS))
    assert owner.tolist() == [0] * small.n_points + [1] * big.n_points
    torch.testing.assert_close(alone, both[: small.n_points], atol=1e-5, rtol=1e-5)
    dec = decode(pol, [small, big])
    assert [len(d) for d in dec] == [small.n_points, big.n_points]
    batch = make_batch([small, big])
    assert batch.mask.sum().item() == sum(featurize(x).features.shape[0] for x in (small, big))


def test_group_advantages() -> None:
    r = torch.tensor([[0.1, 0.2, 0.3, 0.4], [5.0, 5.0, 5.0, 5.0], [0.9, 0.1, 0.5, 0.5]])
    a = group_advantages(r, "grpo")
    torch.testing.assert_close(a.mean(1), torch.zeros(3), atol=1e-6, rtol=0)
    assert torch.all(a[1] == 0)  # an all-equal group carries no signal
    torch.testing.assert_close(a[0].std(unbiased=False), torch.tensor(1.0), atol=1e-4, rtol=0)
    # scale and shift invariant within a group; plain REINFORCE is not
    torch.testing.assert_close(group_advantages(10 * r - 3, "grpo")[0], a[0], atol=1e-4, rtol=0)
    assert torch.equal(group_advantages(r, "reinforce"), r)
    torch.testing.assert_close(group_advantages(r, "reinforce_baseline").mean(), torch.tensor(0.0))
    with pytest.raises(InvalidTask):
        group_advantages(r, "ppo")  # type: ignore[arg-type]


def test_train_runs_counts_calls_and_kl_keeps_policy_near_init() -> None:
    scafs = load_scaffolds("train")[:6]
    kls = []
    for kl_coef in (0.0, 5.0):
        torch.manual_seed(0)
        pol = GraphTransformerPolicy(d_model=32, n_layers=1)
        init = [p.detach().clone() for p in pol.parameters()]
        with torch.no_grad():
            ref = torch.log_softmax(pol.logits(scafs)[0], -1)
        o = Oracle("qed")
        h = train(pol, scafs, o, steps=8, batch_scaffolds=3, group=4, lr=1e-2, kl_coef=kl_coef)
        assert len(h.reward) == len(h.entropy) == len(h.validity) == 8
        assert h.oracle_calls == o.calls > 0
        assert any(not torch.equal(a, b) for a, b in zip(init, pol.parameters(), strict=True))
        with torch.no_grad():
            lp = torch.log_softmax(pol.logits(scafs)[0], -1)
        kls.append(float((lp.exp() * (lp - ref)).sum(-1).mean()))
    assert kls[1] < kls[0]
    with pytest.raises(InvalidTask):
        train(pol, scafs, Oracle(), method="sgd", steps=1)  # type: ignore[arg-type]


def test_ga_respects_budget_and_finds_the_optimum_of_a_small_space() -> None:
    s = scaffold("[*:1]c1ccc(-c2ccccc2)cc1")  # one point: 26 decorations
    o = Oracle("qed_logp_sim")
    res = graph_ga(s, o, budget=10, seed=0)
    assert o.calls == 10 == len(res.trace)
    assert all(b >= a for a, b in itertools.pairwise(res.trace))
    assert res.trace[0] == o(s, [0])  # the population starts from the start molecule
    full = graph_ga(s, Oracle("qed_logp_sim"), budget=100, seed=1)
    exact = max(o(s, [i]) for i in range(len(FRAGMENTS)))
    assert full.best_value == pytest.approx(exact) and len(full.trace) == len(FRAGMENTS)
    assert full.best_at(0) == float("-inf") and full.best_at(1000) == full.best_value


def test_fragment_neighbours_are_chemically_near() -> None:
    neigh = fragment_neighbours(4)
    assert len(neigh) == len(FRAGMENTS)
    assert F["*OCC"] in neigh[F["*OC"]]
    assert all(i not in n for i, n in enumerate(neigh))
