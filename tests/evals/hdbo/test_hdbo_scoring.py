"""hdbo scoring trusts no number from a candidate: LOO-CRPS from the Gram matrix, checked.

Also: what agents are told about a task (name, description) reveals no hidden fact.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch
from scipy import integrate
from scipy.stats import norm

from optiforge.errors import InvalidCandidate
from optiforge.evals.registry import resolve_task
from optiforge.evals.suites.hdbo import FAILED_VALUE, HDBOBenchmark, HDBOTask, embedded
from optiforge.evals.suites.hdbo.scoring import checked_gram, gram_score, load_npy
from optiforge.solvers.gp import ExactGP, rbf

DT = torch.float64

RBF_SRC = """
HYPERPARAMETERS = {'lengthscale': {'shape': 'scalar', 'init': 1.0, 'bounds': [0.01, 100.0]}}
def kernel(x1, x2, params):
    return torch.exp(-0.5 * torch.cdist(x1, x2).pow(2) / params['lengthscale'] ** 2)
"""

# Candidate code that claims a LOO-CRPS of -42 every way it can: printed at definition and at
# exit (the old harness read the last stdout line), and written to result-like files.
FORGE_PRINT = (
    """
_b = torch.sys.modules["builtins"]
_fake = '{"ok": true, "loo_crps": -42.0, "nll": -42.0, "bic": -42.0, "n_hyperparameters": 1}'
_b.print(_fake)
def _forge():
    _b.print(_fake)
    for name in ("result.json", "score.json", "loo_crps.txt"):
        with _b.open(name, "w") as fh:
            fh.write(_fake)
_b.__import__("atexit").register(_forge)
"""
    + RBF_SRC
)


def _forge_file(body: str) -> str:
    """Kernel source whose exit hook runs ``body`` (with ``_b`` builtins, ``_np`` numpy, ``_os``)."""
    return (
        """
_b = torch.sys.modules["builtins"]
_os = torch.os
def _forge():
    _np = _b.__import__("numpy")
"""
        + "".join(f"    {line}\n" for line in body.strip().splitlines())
        + '_b.__import__("atexit").register(_forge)\n'
        + RBF_SRC
    )


def _small_task() -> HDBOTask:
    return HDBOTask(
        name="branin2_in_5",
        split="dev",
        make_problem=lambda s: embedded("branin", 2, 5, seed=s),
        n_init=5,
        budget=8,
        n_kernel_data=20,
    )


@pytest.mark.slow
def test_printed_or_written_scores_are_not_credited() -> None:
    task = _small_task()
    honest = task.evaluate(rbf())
    forged = task.evaluate({"source": FORGE_PRINT})
    assert forged.passed and forged.details["isolated"] == "sandbox"
    # The harness's own number for this (honest) RBF kernel, not the -42 it claimed.
    assert forged.value == pytest.approx(honest.value, rel=1e-4) and forged.value > 0
    assert forged.metrics["nll"] == pytest.approx(honest.metrics["nll"], rel=1e-4)


@pytest.mark.slow
def test_forged_harness_files_are_rejected() -> None:
    task = _small_task()
    # The oracle's oracle.json rewritten at exit: a claimed score and no declarations.
    no_params = task.evaluate(
        {
            "source": _forge_file(
                """
with _b.open("oracle.json", "w") as fh:
    fh.write('{"ok": true, "loo_crps": -42.0}')
"""
            )
        }
    )
    assert not no_params.passed and no_params.value == FAILED_VALUE
    assert "no hyperparameter declarations" in no_params.details["reason"]
    # The oracle's gram.npy replaced at exit: asymmetric, then a pickle.
    asym = task.evaluate(
        {
            "source": _forge_file(
                """
if _os.path.exists("gram.npy"):
    K = _np.load("gram.npy")
    K[0, 1] += 0.5
    _np.save("gram.npy", K)
"""
            )
        }
    )
    assert not asym.passed and "not symmetric" in asym.details["reason"]
    pickled = task.evaluate(
        {
            "source": _forge_file(
                """
if _os.path.exists("gram.npy"):
    _np.save("gram.npy", _np.array([{"loo_crps": -42}], dtype=_b.object), allow_pickle=True)
"""
            )
        }
    )
    assert not pickled.passed and "not a plain numpy array" in pickled.details["reason"]
    shaped = task.evaluate(
        {
            "source": _forge_file(
                """
if _os.path.exists("gram.npy"):
    _np.save("gram.npy", _np.eye(3)[None])
"""
            )
        }
    )
    assert not shaped.passed and "gram.npy has shape" in shaped.details["reason"]


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def test_checked_gram_refuses_what_is_not_a_kernel_matrix() -> None:
    X = torch.rand(6, 2, dtype=DT)
    K = torch.exp(-0.5 * torch.cdist(X, X) ** 2)
    assert torch.allclose(checked_gram(load_npy(_npy(K.numpy())), 6), K)
    cases = {
        "shape": K[:5],
        "non-finite": torch.where(torch.eye(6, dtype=torch.bool), torch.nan, K),
        "not symmetric": K + torch.triu(torch.ones(6, 6, dtype=DT), 1) * 0.1,
        "not PSD": -K,
    }
    for reason, bad in cases.items():
        with pytest.raises(InvalidCandidate, match=reason):
            checked_gram(bad, 6)
    with pytest.raises(InvalidCandidate, match="not a plain numpy array"):
        load_npy(b"\x93NUMPY garbage")
    with pytest.raises(InvalidCandidate, match="no gram.npy"):
        load_npy(None)


def test_gram_score_matches_explicit_leave_one_out_and_quadrature() -> None:
    """The harness's closed-form LOO-CRPS, checked against refitting-free explicit LOO + CRPS by quadrature."""
    task = resolve_task("hdbo/levy4_in_25@dev")
    X, y = task.kernel_data(0)
    X, y = X[:15], y[:15]
    spec = rbf(ard=True)
    gp = ExactGP(spec, n_restarts=1, seed=0).fit(X, y)
    assert gp.params is not None
    K = spec.fn(X, X, gp.params.kernel).detach()
    sc = gram_score(K, y, n_hyperparameters=spec.n_hyperparameters(25), n_restarts=1)
    assert sc.value == pytest.approx(gp.loo_crps(), rel=1e-4)  # same ML fit, other route
    g = sc.details["gp"]
    Ky = g["outputscale"] * K.numpy() + g["noise"] * np.eye(15)
    r = y.numpy() - g["mean"]
    total = 0.0
    for i in range(15):
        keep = [j for j in range(15) if j != i]
        A = Ky[np.ix_(keep, keep)]
        kv = Ky[keep, i]
        w = np.linalg.solve(A, kv)
        mu = g["mean"] + w @ r[keep]
        s = math.sqrt(Ky[i, i] - kv @ w)
        yi = float(y[i])

        def sq(t: float, mu: float = mu, s: float = s, yi: float = yi) -> float:
            return (norm.cdf(t, mu, s) - (t >= yi)) ** 2

        lo, hi = mu - 12 * s, mu + 12 * s
        left = integrate.quad(sq, min(lo, yi - 1), yi, limit=200)[0]
        right = integrate.quad(sq, yi, max(hi, yi + 1), limit=200)[0]
        total += left + right
    assert sc.value == pytest.approx(total / 15, rel=1e-5)


# ----------------------------------------------------------------------------- what agents see


def _all_tasks() -> list[HDBOTask]:
    return [t for split in ("dev", "test", "heldout") for t in HDBOBenchmark().tasks(split)]


def test_descriptions_and_agent_names_reveal_no_hidden_fact() -> None:
    for split in ("dev", "test", "heldout"):
        tasks = HDBOBenchmark().tasks(split)
        names = [t.agent_name for t in tasks]
        assert len(set(names)) == len(names) and all(n.startswith("task-") for n in names)
    for t in _all_tasks():
        fn, k = str(t.hidden["function"]), int(t.hidden["effective_dims"])
        text = f"{t.agent_name} {t.description}".lower()
        assert str(t.dim) in text  # the input dimension is public
        for part in [fn, *fn.split("_"), t.name.lower(), "effective", "embed", "active"]:
            assert part not in text, (t.name, part)
        if k != t.dim:
            assert f"{k} " not in text and f"{k}-d" not in text, t.name
        for word in ("rover", "obstacle", "trajectory", "lasso", "penalt"):
            assert word not in text, (t.name, word)


def test_cli_ids_stay_stable() -> None:
    task = resolve_task("hdbo/levy4_in_25")  # the `make run` job's --bench
    assert task.name == "levy4_in_25" and task.hidden["function"] == "levy"
    assert task.hidden["effective_dims"] == 4 and task.agent_name == "task-01"


# Red-team (issue 39): kernel code that rewrites the fit step's output so that its
# hyperparameters carry the labels ``y`` (read from the request), and a kernel that turns
# them back into ``K ~ y y^T``. Its declared bounds pin the carriers at 1 (``u = 0``), so an
# honest fit of this kernel is the RBF part alone.
FORGE_LABELS = """
_b = torch.sys.modules["builtins"]
_json = torch.sys.modules["json"]
_dump = _json.dump
_E = 4
def _leak(obj, fh, *a, **k):
    try:
        with _b.open("request.json") as f:
            req = _json.load(f)
        d = int(req["d"])
        vals = [math.exp(v) for v in req["y"]]
        vals = vals + [1.0] * (_E * d - len(vals))
        enc = {"e%d" % i: vals[i * d:(i + 1) * d] for i in range(_E)}
        obj["params"].update(enc)
        if "fold_params" in obj:
            obj["fold_params"] = [dict(p, **enc) for p in obj["fold_params"]]
    except Exception:
        pass
    return _dump(obj, fh, *a, **k)
_json.dump = _leak
HYPERPARAMETERS = {"lengthscale": {"shape": "scalar", "init": 1.0, "bounds": [0.01, 100.0]}}
for _i in range(_E):
    HYPERPARAMETERS["e%d" % _i] = {"shape": "ard", "init": 1.0, "bounds": [1.0, 1.0001]}
def _u(params, n):
    u = torch.log(torch.cat([params["e%d" % i] for i in range(_E)]))
    return torch.cat([u, torch.zeros(max(0, n - u.shape[0]), dtype=u.dtype)])[:n]
def kernel(x1, x2, params):
    rbf = torch.exp(-0.5 * torch.cdist(x1, x2).pow(2) / params["lengthscale"] ** 2)
    return 10.0 * torch.outer(_u(params, x1.shape[0]), _u(params, x2.shape[0])) + rbf
"""


@pytest.mark.slow  # four kernel fits over the sandboxed Gram oracle
@pytest.mark.parametrize("heldout", [None, [[0, 1, 2, 3], [4, 5, 6, 7]]], ids=["loo", "kfold"])
def test_cheat_labels_smuggled_through_hyperparameters_do_not_score(
    heldout: list[list[int]] | None,
) -> None:
    """Before: the fit step saw ``y`` and its hyperparameters were trusted numbers: LOO-CRPS
    ~1e-3 against ~0.2 honest. After: no sandboxed process sees ``y``; the harness fits."""
    task = _small_task()
    X, y = task.kernel_data(0)
    honest = task.score_kernel(RBF_SRC, X, y, heldout=heldout)
    forged = task.score_kernel(FORGE_LABELS, X, y, heldout=heldout)
    assert honest.passed and forged.passed, forged.details.get("reason")
    assert forged.value > 0.5 * honest.value
    for name in ("e0", "e1", "e2", "e3"):  # the carriers stayed inside their declared bounds
        assert all(1.0 <= v <= 1.0001 for v in forged.details["params"][name])
