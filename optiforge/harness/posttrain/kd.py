"""Kernel Discovery rows: kernel code for the compositional search's kernel forms, verified
on hdbo dev tasks.

Format ``kernel-code``: the proposer's second stage (``code_prompt``: a kernel form and the
code protocol, one user message, as ``_code`` sends it); the reply is one ```python block
defining ``NAME``, ``HYPERPARAMETERS`` and ``kernel``. The forms are the offline search's
own (``grammar``: the config's base kernels, their sums and products, up to
``MAX_COMPLEXITY`` factors), the code is written here from the library's kernel
definitions (``solvers.gp.kernels``) and admitted only when the agent's validator passes
it and the task scores it (``task.evaluate``: LOO-CRPS on the task's kernel data) in the
sandbox, and its Gram matrix equals the library kernel's at the same hyperparameters.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.proposers import KernelForm, code_prompt
from optiforge.harness.posttrain.data import Row, Verdict, make_row
from optiforge.llm.structured import extract_code_block

AGENT, SUITE, FORMAT = "kernel-discovery", "hdbo", "kernel-code"
MAX_COMPLEXITY = 2
FORMS = 24
"""Forms per ``scale`` (each costs about 40 s of sandboxed validation and scoring)."""
DEV_TASKS = ("levy4_in_25", "hartmann6_in_25", "branin2_in_100")
"""hdbo dev tasks whose kernel data verify the code (taken in turn)."""

_SQDIST = """def _sqdist(x1, x2, ls):
    a = x1 / ls
    b = x2 / ls
    c = a.mean(dim=-2, keepdim=True)
    a = a - c
    b = b - c
    d2 = (a * a).sum(-1, keepdim=True) + (b * b).sum(-1).unsqueeze(-2) - 2.0 * a @ b.transpose(-1, -2)
    return d2.clamp_min(0.0)
"""

# base -> (math form, extra hyperparameters, body lines computing ``k{i}`` from ``p`` (prefix))
_BASES: dict[str, tuple[str, dict[str, str], str]] = {
    "RBF": ("exp(-|x - x'|^2 / (2 l^2))", {}, "k{i} = torch.exp(-0.5 * _sqdist(x1, x2, params['{p}lengthscale']))"),
    "Matern12": ("exp(-|x - x'| / l)", {},
                 "k{i} = torch.exp(-_sqdist(x1, x2, params['{p}lengthscale']).clamp_min(1e-30).sqrt())"),
    "Matern32": ("(1 + sqrt(3) r) exp(-sqrt(3) r), r = |x - x'| / l", {},
                 "r{i} = math.sqrt(3.0) * _sqdist(x1, x2, params['{p}lengthscale']).clamp_min(1e-30).sqrt()\n"
                 "    k{i} = (1.0 + r{i}) * torch.exp(-r{i})"),
    "Matern52": ("(1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r), r = |x - x'| / l", {},
                 "d{i} = _sqdist(x1, x2, params['{p}lengthscale'])\n"
                 "    r{i} = math.sqrt(5.0) * d{i}.clamp_min(1e-30).sqrt()\n"
                 "    k{i} = (1.0 + r{i} + 5.0 / 3.0 * d{i}) * torch.exp(-r{i})"),
    "RQ": ("(1 + |x - x'|^2 / (2 alpha l^2))^(-alpha)", {"alpha": "scalar"},
           "k{i} = (1.0 + _sqdist(x1, x2, params['{p}lengthscale']) / (2.0 * params['{p}alpha']))"
           ".pow(-params['{p}alpha'])"),
    "Periodic": ("exp(-2 sum_j sin^2(pi |x_j - x'_j| / period) / l^2)", {"period": "same"},
                 "s{i} = torch.sin(math.pi * (x1.unsqueeze(-2) - x2.unsqueeze(-3)) / params['{p}period'])"
                 " / params['{p}lengthscale']\n    k{i} = torch.exp(-2.0 * (s{i} * s{i}).sum(-1))"),
    "Linear": ("x x'^T / l^2 + offset", {"offset": "scalar"},
               "w{i} = 1.0 / params['{p}lengthscale']\n"
               "    k{i} = (x1 * w{i}) @ (x2 * w{i}).transpose(-1, -2) + params['{p}offset']"),
}  # fmt: skip


def _hp(shape: str, init: float, lo: float, hi: float) -> str:
    return f'{{"shape": "{shape}", "init": {init}, "bounds": [{lo}, {hi}]}}'


def kernel_source(expr: str) -> str:
    """Kernel code (the ``CODE_PROTOCOL`` shape) for a grammar expression: each factor's
    formula from the library, a product per term, a sum with one variance per term (as
    ``grammar.build_kernel`` composes them)."""
    from optiforge.solvers.gp import grammar

    terms = grammar.canonical_terms(grammar.parse(expr))
    hyper: list[str] = []
    body: list[str] = []
    k = 0
    term_vars = []
    for ti, term in enumerate(terms):
        factors = []
        if len(terms) > 1:  # the term's variance first: the library's order (scale(k))
            hyper.append(f'    "t{ti}_scale": {_hp("scalar", 1.0, 0.01, 100.0)},')
        for name in term:
            ard = name.endswith("_ARD")
            base = name[:-4] if ard else name
            _, extra, code = _BASES[base]
            p = f"t{ti}_{k}_" if len(terms) > 1 or len(term) > 1 else ""
            shape = "ard" if ard else "scalar"
            hyper.append(f'    "{p}lengthscale": {_hp(shape, 1.0, 0.01, 100.0)},')
            for hname, hshape in extra.items():
                s = shape if hshape == "same" else hshape
                init, lo = (0.01, 0.0001) if hname == "offset" else (1.0, 0.01)
                hyper.append(f'    "{p}{hname}": {_hp(s, init, lo, 100.0)},')
            body.append("    " + code.replace("{i}", str(k)).replace("{p}", p))
            factors.append(f"k{k}")
            k += 1
        term_vars.append(" * ".join(factors))
    if len(terms) == 1:
        ret = f"    return {term_vars[0]}"
    else:
        ret = "    return " + " + ".join(
            f"params['t{ti}_scale'] * {v}" for ti, v in enumerate(term_vars)
        )
    head = f'NAME = "{expr}"\nHYPERPARAMETERS = {{\n' + "\n".join(hyper) + "\n}\n\n"
    return (
        head + _SQDIST + "\n\ndef kernel(x1, x2, params):\n" + "\n".join(body) + "\n" + ret + "\n"
    )


def form_text(expr: str) -> str:
    """The form as mathematics (what stage one of the proposer is asked for)."""
    from optiforge.solvers.gp import grammar

    parts = []
    for term in grammar.canonical_terms(grammar.parse(expr)):
        fs = []
        for name in term:
            ard = name.endswith("_ARD")
            base = name[:-4] if ard else name
            fs.append(f"{base}{' (ARD: one l per dimension)' if ard else ''}: {_BASES[base][0]}")
        parts.append(" times ".join(fs))
    scaled = len(parts) > 1
    return " plus ".join(f"s{i} * [{p}]" if scaled else p for i, p in enumerate(parts))


def prompt(expr: str) -> list[dict[str, str]]:
    """``_code``'s first request for the form of ``expr``."""
    return [{"role": "user", "content": code_prompt(KernelForm(name=expr, form=form_text(expr)))}]


def expressions() -> list[str]:
    """The forms: every base of the default config, then sums and products of two (in a
    fixed shuffled order: ``rows`` takes the first ``FORMS * scale``)."""
    from optiforge.solvers.gp import grammar

    bases = KernelDiscoveryConfig().bases
    out = list(bases)
    for a, b in itertools.combinations(bases, 2):
        out += [f"{a} * {b}", f"{a} + {b}"]
    seen: set[str] = set()
    uniq = []
    for e in out:
        c = grammar.canonical(e)
        if c not in seen and grammar.complexity(c) <= MAX_COMPLEXITY:
            seen.add(c)
            uniq.append(c)
    head, pairs = uniq[: len(bases)], uniq[len(bases) :]
    random.Random(41).shuffle(pairs)
    return head + pairs


def _same_gram(src: str, expr: str, d: int) -> bool:
    """The code's Gram matrix equals the library kernel's at matching hyperparameters."""
    import torch

    from optiforge.solvers.gp import grammar
    from optiforge.solvers.gp.validation import kernel_from_source

    ours = kernel_from_source(src)
    lib = grammar.build_kernel(expr)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(7, d, generator=gen, dtype=torch.float64)
    y = torch.rand(5, d, generator=gen, dtype=torch.float64)
    lp = {k: torch.rand(h.size(d), generator=gen, dtype=torch.float64).add(0.5).reshape(() if h.shape == "scalar" else (d,))
          for k, h in lib.hyperparameters.items()}  # fmt: skip
    vals = list(lp.values())
    op = (
        {k: vals[i] for i, k in enumerate(ours.hyperparameters)}
        if len(vals) == len(ours.hyperparameters)
        else None
    )
    if op is None or any(v.shape != (() if h.shape == "scalar" else (d,)) for v, h in
                         zip(op.values(), ours.hyperparameters.values(), strict=True)):  # fmt: skip
        return False
    try:
        return bool(torch.allclose(ours(x, y, op), lib(x, y, lp), rtol=1e-9, atol=1e-12))
    except RuntimeError:
        return False


def verify(
    task: str, messages: list[dict[str, Any]], reply: str, sandbox: Any | None = None
) -> Verdict:
    """The proposer's extraction and its validator (``validate_source``: PSD, finite,
    gradients, batch independence, in the sandbox), then the task's score of the kernel
    (LOO-CRPS on its kernel data, in the sandbox). score: the LOO-CRPS (lower is better)."""
    from optiforge.agents.kernel_discovery.problem import validate_source
    from optiforge.agents.kit import RunContext
    from optiforge.evals.registry import resolve_task

    t = resolve_task(task)
    src = extract_code_block(reply)
    why = validate_source(src, t.dim, RunContext(sandbox=sandbox), t.max_hyperparameters)
    if why is not None:
        return Verdict(valid=False, detail=why[:300])
    s = t.evaluate({"source": src}, sandbox)
    if not s.passed or not math.isfinite(s.value):
        return Verdict(valid=False, detail=f"scoring failed: {s.details.get('reason', '')}"[:300])
    return Verdict(valid=True, score=float(s.value), detail=f"LOO-CRPS {s.value:.4f}")


def rows(
    scale: int = 1, progress: Callable[[str], None] | None = None, limit: int | None = None
) -> Iterator[Row]:
    """One row per form (``limit``: the first forms only); the dev task verifying it is
    taken in turn from ``DEV_TASKS``."""
    from optiforge.evals.registry import resolve_task

    made = 0
    for j, expr in enumerate(expressions()[: FORMS * scale if limit is None else limit]):
        ref = f"{SUITE}/{DEV_TASKS[j % len(DEV_TASKS)]}"
        t = resolve_task(ref)
        if t.split != "dev":
            raise AssertionError(f"{ref} is not a dev task")
        src = kernel_source(expr)
        if not _same_gram(src, expr, 3):
            if progress:
                progress(f"{AGENT}: {expr}: the code differs from the library kernel: skipped")
            continue
        msgs = prompt(expr)
        reply = f"```python\n{src.rstrip()}\n```"
        v = verify(ref, msgs, reply)
        if v.valid:
            made += 1
            yield make_row(
                AGENT, FORMAT, ref, msgs, reply, "kernel-discovery.grammar-forms", v, "loo_crps"
            )
        elif progress:
            progress(f"{AGENT}: {expr}: not valid: {v.detail[:120]}")
    if progress:
        progress(f"{AGENT}: {made} rows")


def heldout_texts() -> list[dict[str, Any]]:
    """The code prompt carries no task data (the form and the protocol only), so a
    held-out task has no prompt or answer of its own to leak: none are listed. The
    form prompt (stage one), which names the task, is not in the data."""
    return []
