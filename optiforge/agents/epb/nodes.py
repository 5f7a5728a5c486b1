"""EPB's graph nodes (``collect``, ``step``) and the refits, tour guard and block II they
share, as module-level functions reading the run from ``runtime.context`` (``Ctx``).

- **collect**: the teacher is queried on fresh training instances (its greedy tours and
  per-step distributions: ``task.teacher_trajectories``), split into fitting and
  validation trajectories; the seed bank's scores along them are computed in the sandbox
  and the router is fitted (``problem.fit_router``).
- **step**, block I (capacity fixed), a hybrid numerical / textual descent. Numerical
  half: a few Adam steps on the router (kept when the validation divergence falls).
  Textual half: in the validation states where the mixture diverges most, the loss
  gradient names the program carrying the most loss (``problem.blame``); it is replaced by
  an edit. Offline: blended with another program at a few weights (``problem.blend``).
  With an LLM: a textual-gradient step (``proposers.py``): the LLM reads concrete failure
  cases and writes a critique, and the rewrite follows that critique
  (``gradient="template"``: the agent's own summary instead, the stand-in). An edit is
  accepted when the router refitted on the edited bank diverges less on the validation
  states *and* the portfolio's greedy tours on fresh practice instances of the teacher's
  distribution get no longer on average (``tour_guard``).
- **block II** (``block2``, every ``block2_every`` rounds; capacity adapts): boosting adds
  the program that alone best fits the teacher on the worst-fit fitting states (offline: a
  seed or a flat blend; with an LLM: a new program the LLM writes from those residual
  failures, ``boost_proposer``), if the refitted portfolio diverges less; pruning drops
  the program whose removal costs least, if that cost is under ``prune_tolerance``; both
  pass the same tour guard.

Program code only ever runs in the sandbox (``task.program_scores``); the router is fitted
here on the numbers it returned. The program scores along the trajectories are computed
once per program source per run (``ProgramScores``, kept in ``ctx.memo``; a resumed run
recomputes them: they are deterministic).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.epb.config import EPBConfig
from optiforge.agents.epb.problem import (
    Data,
    EPBState,
    blame,
    blend,
    combo_source,
    describe,
    divergence,
    fit_router,
    mixture,
    router_weights,
    stack,
    subset,
)
from optiforge.agents.epb.proposers import (
    failure_cases,
    feedback,
    llm_boost,
    llm_gradient,
    llm_rewrites,
)
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.evals.suites.nco.protocol import NCOTask

Ctx = AgentContext[NCOTask, EPBConfig]
"""EPB's runtime context: the run's handles, its ``NCOTask``, ``EPBConfig`` and budget."""
Trajectories = tuple[list[dict[str, Any]], list[dict[str, Any]]]
Fit = dict[str, Any]
Refit = tuple[Fit | None, float, dict[str, str]]
"""``(router fit or None, validation divergence, errors per program)``."""


class ProgramScores:
    """Program scores along the fitting and validation trajectories, computed in the sandbox
    once per program source (a resumed run recomputes them: they are deterministic)."""

    def __init__(self, task: NCOTask, config: EPBConfig) -> None:
        self.task, self.config = task, config
        self.cache: dict[str, tuple[Data, Data]] = {}
        self.traj: Trajectories | None = None

    def trajectories(self, seed: int) -> Trajectories:
        if self.traj is None:
            c = self.config
            trajs = self.task.teacher_trajectories(c.train_tours + c.val_tours, seed)
            self.traj = trajs[: c.train_tours], trajs[c.train_tours :]
        return self.traj

    def data(self, ctx: RunContext, bank: dict[str, str]) -> tuple[Data, Data, dict[str, str]]:
        """``(fit data, validation data, errors)`` for ``bank``; a program that fails is
        left out and named in ``errors``."""
        train, val = self.trajectories(ctx.seed)
        todo = {k: s for k, s in bank.items() if _key(s) not in self.cache}
        errors: dict[str, str] = {}
        if todo:
            runs = self.task.program_scores(todo, train + val, ctx.sandbox)
            bad = next((r["error"] for r in runs if "error" in r), None)
            if bad is not None:  # find which program fails: one by one
                for k, s in todo.items():
                    one = self.task.program_scores({k: s}, train + val, ctx.sandbox)
                    err = next((r["error"] for r in one if "error" in r), None)
                    if err:
                        errors[k] = err
                    else:
                        self._store(k, s, one, train, val)
            else:
                for k, s in todo.items():
                    self._store(k, s, runs, train, val)
        names = [k for k in bank if k not in errors]
        if not names:
            empty: Data = {"names": [], "z": np.zeros((0, 0, 0))}
            return empty, empty, errors
        tr = [self.cache[_key(bank[k])][0] for k in names]
        va = [self.cache[_key(bank[k])][1] for k in names]
        return _merge(names, tr), _merge(names, va), errors

    def _store(self, k: str, src: str, runs: list[dict[str, Any]],
               train: list[dict[str, Any]], val: list[dict[str, Any]]) -> None:  # fmt: skip
        one = [{"features": r["features"], "z": {k: r["z"][k]}} for r in runs]
        self.cache[_key(src)] = (
            stack([k], one[: len(train)], train),
            stack([k], one[len(train) :], val),
        )


def _cases(
    worst: np.ndarray, q: np.ndarray, data: Data, order: np.ndarray, count: int
) -> np.ndarray:
    """Up to ``count`` of the ``worst`` states as failure cases: those where the portfolio's
    choice is not the teacher's first, then by ``order`` (ascending)."""
    idx = np.flatnonzero(worst)
    wrong = q[idx].argmax(-1) != data["teacher"][idx].argmax(-1)
    return idx[np.lexsort((order[idx], ~wrong))][:count]


def _key(src: str) -> str:
    return hashlib.sha256(src.encode()).hexdigest()[:16]


def _merge(names: list[str], parts: list[Data]) -> Data:
    base = parts[0]
    return {**base, "z": np.concatenate([p["z"] for p in parts], 0), "names": list(names)}


def rounds_max(task: NCOTask, budget: int | None) -> int:
    """Block I rounds a run makes (its budget)."""
    return int(budget or task.budget or 24)


def program_scores(ctx: Ctx) -> ProgramScores:
    """The run's program-score cache (one per run, rebuilt after a resume)."""
    return ctx.memo("scores", lambda: ProgramScores(ctx.task, ctx.config))


def refit(ctx: Ctx, bank: dict[str, str], init: Fit | None, steps: int,
          only: list[str] | None = None) -> Refit:  # fmt: skip
    """The router fitted on ``bank`` (warm-started from ``init``) and its validation divergence."""
    tr, va, errors = program_scores(ctx).data(ctx, bank)
    if not tr["names"]:
        return None, float("inf"), errors
    fit = fit_router(tr, steps, ctx.config.router_lr, init, seed=ctx.seed, only=only)
    return fit, float(divergence(va, fit).mean()), errors


def tour_length_of(ctx: Ctx, bank: dict[str, str], fit: Fit) -> float:
    """Mean greedy tour length of the portfolio on ``guard_tours`` practice instances
    (fresh, of the teacher's distribution, not the test), built in the sandbox (``inf``
    when a tour fails); 0 with the guard off."""
    config = ctx.config
    if not config.tour_guard:
        return 0.0
    from optiforge.solvers.nco.tsp import tour_length

    pf = {"programs": {k: bank[k] for k in fit["names"]}, "router": fit["router"],
          "beta": fit["beta"]}  # fmt: skip
    xs = list(ctx.task.practice_instances(config.guard_tours, ctx.seed))
    try:
        built = ctx.task.construct(pf, xs, ctx.sandbox)
    except RuntimeError:
        return float("inf")
    tours = [b for b in built if b is not None]
    if len(tours) < len(built):
        return float("inf")
    return float(np.mean([tour_length(x, b) for x, b in zip(xs, tours, strict=True)]))


def guarded(ctx: Ctx, ranked: list[tuple[Any, ...]], tour: float,
            tries: int = 3) -> tuple[tuple[Any, ...] | None, float, int]:  # fmt: skip
    """The first of ``ranked`` (``(bank, val, fit, ...)``, best divergence first) whose
    tours are no longer than ``tour`` (within ``tour_tolerance``): ``(it, its tour,
    how many the guard rejected)``."""
    rejected = 0
    for cand in ranked[:tries]:
        length = tour_length_of(ctx, cand[0], cand[2])
        if length <= tour * (1 + ctx.config.tour_tolerance):
            return cand, length, rejected
        rejected += 1
    return None, tour, rejected


def collect(state: EPBState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """The seed bank's scores along the teacher's trajectories and the first router fit."""
    from optiforge.solvers.nco.programs import SEED_BANK

    ctx = runtime.context
    config, limit = ctx.config, rounds_max(ctx.task, ctx.eval_budget)
    bank = {k: s for k, s in SEED_BANK.items() if config.seeds is None or k in config.seeds}
    if ctx.progress:  # the sandbox runs before round 1 take tens of seconds: say so
        ctx.progress({"evaluations": 0, "max_evaluations": limit,
                      "status": f"running the {len(bank)} seed programs in the sandbox"})  # fmt: skip
    fit, val, errors = refit(ctx, bank, None, config.router_steps)
    if fit is None:
        raise RuntimeError(f"the seed bank does not run: {errors}")
    tour = tour_length_of(ctx, bank, fit)
    ctx.tracer.event("epb_collect", programs=len(bank), val=round(val, 4), tour=round(tour, 4))
    return {"atoms": dict(bank), "coefs": {k: {k: 1.0} for k in bank}, "bank": bank,
            "fit": fit, "val": val, "tour": tour, "rounds": 0, "history": [], "errors": [],
            "done": limit == 0}  # fmt: skip


def step(state: EPBState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """One block I round (router steps, then the blamed program's edits), and block II
    every ``block2_every`` rounds."""
    ctx = runtime.context
    task, config, limit = ctx.task, ctx.config, rounds_max(ctx.task, ctx.eval_budget)
    scores = program_scores(ctx)
    bank, fit, val = dict(state["bank"]), dict(state["fit"]), float(state["val"])
    tour = float(state["tour"]) if "tour" in state else tour_length_of(ctx, bank, fit)
    atoms = dict(state["atoms"])
    coefs = {k: dict(v) for k, v in state["coefs"].items()}
    history, errors = list(state.get("history", [])), list(state.get("errors", []))
    rounds = int(state.get("rounds", 0)) + 1
    if ctx.progress:
        ctx.progress({"evaluations": rounds - 1, "max_evaluations": limit,
                      "status": f"round {rounds}: the bank's runs in the sandbox"})  # fmt: skip
    tr, va, _ = scores.data(ctx, bank)
    # ---- block I, numerical half: router gradient steps on the current bank
    f1 = fit_router(tr, max(50, config.router_steps // 3), config.router_lr, fit, seed=ctx.seed)
    v1 = float(divergence(va, f1).mean())
    router_moved = False
    if v1 < val - 1e-6:
        t1 = tour_length_of(ctx, bank, f1)
        if t1 <= tour * (1 + config.tour_tolerance):
            fit, val, tour, router_moved = f1, v1, t1, True
    # ---- block I, textual half: replace the program the gradient blames by an edit
    per_state = divergence(va, fit)
    worst = per_state >= np.quantile(per_state, 0.8)
    weights = router_weights(va, fit)
    blames = blame(va, fit)
    tried = set(state.get("tried", []))
    names = list(va["names"])
    share = blames[worst].mean(0)
    untried = [i for i, k in enumerate(names) if _key(bank[k]) not in tried] or list(
        range(len(names))
    )
    blamed = names[max(untried, key=lambda i: share[i])]
    new_coefs: dict[str, dict[str, float]] = {}
    candidates: list[tuple[str, str, str]] = []
    gradient_note: dict[str, Any] = {}
    if ctx.llm is not None:
        k = names.index(blamed)
        q = mixture(va, fit)
        idx = _cases(worst, q, va, -blames[:, k], config.cases)
        cases = failure_cases(va, idx, q, scores.trajectories(ctx.seed)[1], k)
        summary = feedback(blamed, bank, va, blames, worst, weights, cases)
        grad = None
        if config.gradient == "llm":
            grad, grad_errors = llm_gradient(ctx, task, blamed, bank[blamed], summary, cases)
            errors += grad_errors
        gradient_note = {"gradient": "llm" if grad else "template",
                         "gradient_text": (grad or summary)[:3000],
                         "cases": [{"step": c.step, "teacher": c.teacher, "program": c.program,
                                    "portfolio": c.portfolio} for c in cases]}  # fmt: skip
        rewrites, llm_errors = llm_rewrites(ctx, task, blamed, bank[blamed], summary, grad)
        errors += llm_errors
        for i, src in enumerate(rewrites):
            atom = f"llm{rounds}_{i}"
            atoms[atom] = src
            new_coefs[atom] = {atom: 1.0}
            candidates.append((atom, src, f"rewrite {blamed} (LLM)"))
    else:
        for other in bank:
            for w in config.blends if other != blamed else []:
                c = blend(coefs[blamed], coefs[other], w)
                name = describe(c)
                if name in bank or name in new_coefs:
                    continue
                new_coefs[name] = c
                doc = f"{blamed} blended with {other} at {w:g}"
                candidates.append((name, combo_source(c, atoms, doc), f"blend {doc}"))
    if candidates:
        scores.data(ctx, {name: src for name, src, _ in candidates})  # one sandbox batch
    improving: list[tuple[dict[str, str], float, dict[str, Any], str]] = []
    for name, src, what in candidates:
        trial = {(name if k == blamed else k): (src if k == blamed else s) for k, s in bank.items()}
        # the rewrite inherits the blamed program's router row and sharpness
        init = {**fit, "names": [name if k == blamed else k for k in fit["names"]],
                "beta": {(name if k == blamed else k): b for k, b in fit["beta"].items()}}  # fmt: skip
        f2, v2, errs = refit(ctx, trial, init, max(50, config.router_steps // 3))
        if errs:
            errors += [f"{what}: {e}"[:300] for e in errs.values()]
            continue
        if f2 is not None and v2 < val - 1e-6:
            improving.append((trial, v2, f2, what))
    improving.sort(key=lambda c: c[1])
    best, new_tour, rejected = guarded(ctx, improving, tour)
    event: dict[str, Any] = {"round": rounds, "block": "I", "blamed": blamed,
                             "router_step": router_moved, "candidates": len(candidates),
                             "improving": len(improving), "guard_rejected": rejected,
                             "val_before": round(val, 5), "tour_before": round(tour, 4),
                             **gradient_note}  # fmt: skip
    if best is not None:
        bank, val, fit, tour = best[0], best[1], best[2], new_tour
        event |= {"accepted": best[3], "val_after": round(val, 5), "tour_after": round(tour, 4)}
        tried = set()
        coefs = {k: coefs.get(k) or new_coefs[k] for k in bank}
    else:
        tried.add(_key(bank[blamed]))
    history.append(event)
    ctx.tracer.event("epb_round", **event)
    # ---- block II: boost and prune
    if config.boost and rounds % config.block2_every == 0:
        bank, fit, val, coefs, tour = block2(ctx, bank, coefs, atoms, fit, val, tour, history,
                                             rounds, errors)  # fmt: skip
    if ctx.progress:
        ctx.progress({"evaluations": rounds, "max_evaluations": limit, "best": val})
    atoms = {a: src for a, src in atoms.items() if any(a in c for c in coefs.values())
             or a in state["atoms"]}  # fmt: skip
    return {"atoms": atoms, "coefs": coefs, "bank": bank, "fit": fit, "val": val, "tour": tour,
            "rounds": rounds,
            "history": history, "errors": errors[-20:], "tried": sorted(tried),
            "done": rounds >= limit}  # fmt: skip


def block2(ctx: Ctx, bank: dict[str, str], coefs: dict[str, dict[str, float]],
           atoms: dict[str, str], fit: Fit, val: float, tour: float,
           history: list[dict[str, Any]], rounds: int, errors: list[str],
           ) -> tuple[dict[str, str], Fit, float, dict[str, dict[str, float]], float]:  # fmt: skip
    """Block II: boost (add the program that best fits the residual failures) and prune
    (drop the program whose removal costs least); appends to ``history`` and ``errors``
    and returns the new ``(bank, fit, val, coefs, tour)``."""
    task, config, scores = ctx.task, ctx.config, program_scores(ctx)
    tr, _, _ = scores.data(ctx, bank)
    per = divergence(tr, fit)
    worst = per >= np.quantile(per, 0.8)
    q = mixture(tr, fit)
    teacher = tr["teacher"].argmax(-1)
    agree_before = float((q.argmax(-1) == teacher)[worst].mean())
    if len(bank) < config.max_programs:
        pool: dict[str, dict[str, float]] = {}
        proposer = "offline"
        if ctx.llm is not None and config.boost_proposer == "llm":
            proposer = "llm"
            idx = _cases(worst, q, tr, -per, config.cases)
            cases = failure_cases(tr, idx, q, scores.trajectories(ctx.seed)[0], None)
            progs, boost_errors = llm_boost(ctx, task, bank, cases, agree_before)
            errors += boost_errors
            for i, src in enumerate(progs):
                atoms[f"boost{rounds}_{i}"] = src
                pool[f"boost{rounds}_{i}"] = {f"boost{rounds}_{i}": 1.0}
        else:
            pool = {a: {a: 1.0} for a in atoms}
            for a in bank:
                for b in bank:
                    if a != b:
                        c = blend(coefs[a], coefs[b], 0.5)
                        pool[describe(c)] = c
        pool = {k: c for k, c in pool.items() if k not in bank}
        srcs = {k: combo_source(c, atoms, f"boost: {k}") for k, c in pool.items()}
        cand_tr, _, cand_errors = scores.data(ctx, srcs)  # one sandbox batch
        errors += [f"boost {k}: {e}"[:300] for k, e in cand_errors.items()]
        alone = []
        for k in cand_tr["names"]:
            one = subset(cand_tr, [k])
            f1 = {"names": [k], "router": [[0.0] * tr["features"].shape[1]], "beta": {k: 2.0}}
            alone.append((float(divergence(one, f1)[worst].mean()), k))
        if alone:
            _, k = min(alone)
            # how many residual failures the new program alone gets right
            z = np.nan_to_num(subset(cand_tr, [k])["z"][0], nan=-np.inf)
            agree_new = float((z.argmax(-1) == teacher)[worst].mean())
            trial = {**bank, k: srcs[k]}
            # stagewise: only the new program's row and sharpness are fitted (refitting
            # every row from here mostly overfits the fitting states)
            f2, v2, _ = refit(ctx, trial, fit, max(50, config.router_steps // 3), only=[k])
            # boosting's aim: the residual (the validation states the portfolio fits
            # worst) falls by a tenth, at no more than prune_tolerance overall; or the
            # whole validation divergence falls
            _, va_now, _ = scores.data(ctx, bank)
            per_va = divergence(va_now, fit)
            resid = per_va >= np.quantile(per_va, 0.8)
            r_before, r_after = float(per_va[resid].mean()), float("inf")
            if f2 is not None:
                _, va_trial, _ = scores.data(ctx, trial)
                r_after = float(divergence(va_trial, f2)[resid].mean())
            ok = f2 is not None and (
                v2 < val * (1 - config.prune_tolerance)
                or (r_after < 0.9 * r_before and v2 <= val * (1 + config.prune_tolerance))
            )
            t2 = tour_length_of(ctx, trial, f2) if ok and f2 is not None else tour
            guard_ok = t2 <= tour * (1 + config.tour_tolerance)
            history.append({"round": rounds, "block": "II", "boost": k, "accepted": ok and guard_ok,
                            "proposer": proposer, "guard_rejected": int(ok and not guard_ok),
                            "residual_agree_before": round(agree_before, 4),
                            "residual_agree_new": round(agree_new, 4),
                            "residual_val_before": round(r_before, 5),
                            "residual_val_after": round(r_after, 5),
                            "val_before": round(val, 5), "val_after": round(v2, 5)})  # fmt: skip
            if ok and guard_ok and f2 is not None:
                bank, fit, val, tour = trial, f2, v2, t2
                coefs = {**coefs, k: pool[k]}
    if len(bank) > 1:
        costs = []
        for k in bank:
            trial = {j: s for j, s in bank.items() if j != k}
            f2, v2, _ = refit(ctx, trial, fit, max(50, config.router_steps // 3))
            if f2 is not None:
                costs.append((v2, k, trial, f2))
        if costs:
            v2, k, trial, f2 = min(costs, key=lambda c: c[0])
            ok = v2 <= val * (1 + config.prune_tolerance)
            t2 = tour_length_of(ctx, trial, f2) if ok else tour
            guard_ok = t2 <= tour * (1 + config.tour_tolerance)
            history.append({"round": rounds, "block": "II", "prune": k, "accepted": ok and guard_ok,
                            "guard_rejected": int(ok and not guard_ok),
                            "val_before": round(val, 5), "val_after": round(v2, 5)})  # fmt: skip
            if ok and guard_ok:
                bank, fit, val, tour = trial, f2, v2, t2
                coefs = {j: c for j, c in coefs.items() if j != k}
    return bank, fit, val, coefs, tour


def after(state: EPBState) -> str:
    """The next node after ``collect`` or ``step``: another round, or the end."""
    return END if state.get("done") else "step"
