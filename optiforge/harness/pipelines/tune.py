"""The ``tune`` step: AutoSaddler tunes the harness of an earlier AutoREM node.

The input node's own AutoREM config (its ``max_attempts``, ``tools.use`` and ``timeout_s``,
the parts ``autosaddler.meta.AUTOREM_PARTS`` names) is the base harness; AutoSaddler's
existing meta entry point (``autosaddler.tune`` with ``meta.AutoREMTarget``) runs AutoREM
on ``autoro`` dev tasks with the pipeline's model as AutoREM's writer (offline: the
reference reformulator, which rarely fails, so nothing is patched), diagnoses the failed
runs, proposes one patch per round (the rule library; ``proposer: llm`` asks the
pipeline's model) and keeps it only when the paired validation gate accepts it. The
``harness`` artifact (``handoff.HarnessHandoff``) feeds a later AutoREM node's config:
``agent.max_attempts: ${tune.artifact.extra.values.max_attempts}``. Options (``set``):
AutoSaddler's round sizes (``iterations``, ``batch``, ``runs``, ``val_tasks``,
``val_runs``), ``tasks`` (the first N autoro dev tasks it may use) and ``proposer``.
"""

from __future__ import annotations

import json
from typing import Any

from optiforge.errors import ConfigError
from optiforge.harness.pipelines.handoff import HarnessHandoff, require_artifact
from optiforge.harness.pipelines.step_input import StepInput


def base_harness(inp: StepInput) -> tuple[dict[str, Any], int]:
    """The input AutoREM node's harness parts and seed, read from its run's manifest."""
    from optiforge.agents.autorem import AutoREMConfig

    res = inp.results.get(inp.node) or {}
    if res.get("kind") != "agent" or res.get("agent") != "autorem":
        raise ConfigError(
            f"tune: AutoSaddler tunes an autorem node's harness; input {inp.node!r} "
            f"is {res.get('agent') or res.get('step') or 'unknown'}"
        )
    require_artifact(inp.results, inp.node, "formulation", "tune")
    assert inp.run_dir is not None
    manifest = json.loads((inp.run_dir / "manifest.json").read_text())
    agent_set = ((manifest.get("config") or {}).get("settings") or {}).get("agent") or {}
    cfg = AutoREMConfig.model_validate(agent_set)
    return {"max_attempts": cfg.max_attempts, "tools_use": list(cfg.tools.use),
            "timeout_s": float(cfg.timeout_s)}, int(manifest.get("seed") or 0)  # fmt: skip


def tune_step(inp: StepInput) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``tune`` step (see the module doc): ``(result, artifact)``."""
    from optiforge.agents.autosaddler import SaddlerConfig, tune
    from optiforge.agents.autosaddler.meta import AutoREMTarget
    from optiforge.agents.kit import RunContext
    from optiforge.sandboxes import get_sandbox

    base, seed = base_harness(inp)
    opts = dict(inp.options)
    proposer = str(opts.pop("proposer", "rules"))
    if proposer not in ("rules", "llm"):
        raise ConfigError(f"tune: proposer must be rules or llm, got {proposer!r}")
    n_tasks = int(opts.pop("tasks", 6))
    sizes = {"iterations": 1, "batch": 2, "runs": 1, "val_tasks": 2, "val_runs": 1, **opts}
    config = SaddlerConfig.model_validate({**sizes, "proposer": proposer, "workers": 1})
    sandbox = get_sandbox(inp.sandbox)
    writer = inp.llm
    target = AutoREMTarget(lambda seed: writer, sandbox, base=base, limit=n_tasks)
    ctx = RunContext(llm=inp.llm if proposer == "llm" else None, sandbox=sandbox, seed=seed,
                     tracer=inp.tracer, agent="autosaddler")  # fmt: skip
    out = tune(target, config, ctx)
    tuned = target.load(out.best_candidate)
    hist = out.extra.get("history") or []
    patches = [p for r in hist if r.get("accepted") for p in r.get("patches", [])]
    art = HarnessHandoff(agent="autorem", values=tuned.values, base=base, version=tuned.version,
                         accepted=int(out.extra.get("accepted", 0)), patches=patches)  # fmt: skip
    inp.out_dir.mkdir(parents=True, exist_ok=True)
    (inp.out_dir / "harness.json").write_text(art.model_dump_json(indent=2) + "\n")
    (inp.out_dir / "rounds.jsonl").write_text(
        "".join(json.dumps(r, default=str) + "\n" for r in hist)
    )
    inp.tracer.event("harness_tuned", of=inp.node, base=base, values=tuned.values,
                     accepted=art.accepted)  # fmt: skip
    reason = (f"{art.accepted} patch(es) accepted: {tuned.values}" if art.accepted
              else f"no patch accepted in {len(hist)} round(s): the base harness")  # fmt: skip
    return ({"status": "finished", "status_reason": reason},
            {"kind": "harness", "agent": "autorem", "extra": art.model_dump(mode="json")})  # fmt: skip
