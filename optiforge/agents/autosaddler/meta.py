"""Meta use: AutoSaddler tuning another optiforge agent's harness (AutoREM's).

An agent's harness here is the part of its config that shapes how its LLM works, not what
it solves: for AutoREM, the code attempts per instance (the repair loop), the tools its
model may call while it writes (``run_python`` runs a draft in the sandbox) and a
program's time limit. ``ConfigHarness`` is that subset as a versioned, patchable object
(``harness.json``), validated through the agent's own config model on every patch.

``AutoREMTarget`` runs AutoREM (``SPEC.build(...).execute``) on ``autoro`` dev tasks while
tuning and heldout tasks to measure; every run is re-scored by the task's verifier
(``task.evaluate``), never by AutoREM's claim. Diagnosis reads the attempts' verdicts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from optiforge.agents import get_agent
from optiforge.agents.autosaddler.problem import failed_episode
from optiforge.agents.autosaddler.proposers import Maker
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.harness import Patch, files_diff
from optiforge.errors import ConfigError, SandboxError
from optiforge.evals.protocol import Task

AUTOREM_PARTS = ("max_attempts", "tools_use", "timeout_s")


class ConfigHarness:
    """A patchable subset of an agent's config (``parts``), checked by ``config_model``."""

    def __init__(
        self, agent: str, values: dict[str, Any], config_model: Any, parts: tuple[str, ...]
    ) -> None:
        self.agent, self.values, self.config_model, self.parts = (
            agent,
            dict(values),
            config_model,
            parts,
        )
        self.config()  # validates

    def config(self) -> Any:
        data = {k: v for k, v in self.values.items() if k != "tools_use"}
        if "tools_use" in self.values:
            data["tools"] = {"use": list(self.values["tools_use"])}
        try:
            return self.config_model(**data)
        except ValidationError as e:
            raise ConfigError(f"{self.agent} harness: {str(e).splitlines()[-1]}") from e

    @property
    def version(self) -> str:
        blob = json.dumps([self.agent, self.values], sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def files(self) -> dict[str, str]:
        return {
            "harness.json": json.dumps(
                {"agent": self.agent, **self.values}, indent=2, sort_keys=True
            )
            + "\n"
        }

    def apply(self, patch: Patch) -> ConfigHarness:
        if patch.target not in self.parts:
            raise ConfigError(
                f"{self.agent} harness has no part {patch.target!r} (parts: {', '.join(self.parts)})"
            )
        values = dict(self.values)
        cur = values.get(patch.target)
        if patch.op == "set":
            values[patch.target] = patch.value
        elif isinstance(cur, list) and patch.op == "append":
            values[patch.target] = [*cur, patch.value]
        elif isinstance(cur, list) and patch.op == "remove" and patch.value in cur:
            values[patch.target] = [v for v in cur if v != patch.value]
        else:
            raise ConfigError(f"cannot {patch.op} {patch.value!r} on {patch.target}")
        return ConfigHarness(self.agent, values, self.config_model, self.parts)

    def diff(self, other: ConfigHarness) -> str:
        return files_diff(self.files(), other.files())


def _raise_attempts(h: ConfigHarness) -> Patch | None:
    n = int(h.values["max_attempts"])
    return None if n >= 6 else Patch(target="max_attempts", value=n + 1,
                                     why="the last attempt was rejected with repairs left to try")  # fmt: skip


def _tool(h: ConfigHarness) -> Patch | None:
    if "run_python" in h.values["tools_use"]:
        return None
    return Patch(target="tools_use", op="append", value="run_python",
                 why="drafts crashed at the verifier: let the model run them first")  # fmt: skip


def _timeout(h: ConfigHarness) -> Patch | None:
    t = float(h.values["timeout_s"])
    return None if t >= 240 else Patch(target="timeout_s", value=2 * t, why="programs timed out")


AUTOREM_LIBRARY: dict[str, list[Maker]] = {
    "crashed_draft": [_tool, _raise_attempts],
    "attempts_spent": [_raise_attempts, _tool],
    "timeout": [_timeout],
    "unknown": [],
}
AUTOREM_CATEGORIES = {
    "crashed_draft": "a program crashed (syntax or run-time error) and the attempts ran out",
    "attempts_spent": "every attempt was rejected by the verifier",
    "timeout": "a program ran past its time limit",
    "unknown": "nothing recognisable in the verdicts",
}
AUTOREM_DOC = """\
- max_attempts (int 1-10; set): code attempts per instance (first + repairs with the verdict)
- tools_use (list; append/remove): tools the model may call while writing: run_python
- timeout_s (number > 0; set): wall-clock limit of one candidate program"""


class AutoREMTarget:
    """AutoREM on ``autoro`` (see the module doc); ``agent_llm(seed)`` is its writer."""

    name = "autorem"
    categories = AUTOREM_CATEGORIES
    library = AUTOREM_LIBRARY
    parts_doc = AUTOREM_DOC

    def __init__(self, agent_llm: Callable[[int], Any], sandbox: Any, *, base: dict[str, Any] | None = None,
                 limit: int | None = None) -> None:  # fmt: skip
        self.spec = get_agent("autorem")
        self.agent_llm = agent_llm
        self.sandbox = sandbox
        self.base_values = base or {"max_attempts": 1, "tools_use": [], "timeout_s": 60.0}
        self.limit = limit

    def base(self) -> ConfigHarness:
        return ConfigHarness("autorem", self.base_values, self.spec.config_model, AUTOREM_PARTS)

    def load(self, files: dict[str, str]) -> ConfigHarness:
        data = json.loads(files["harness.json"])
        data.pop("agent", None)
        return ConfigHarness("autorem", data, self.spec.config_model, AUTOREM_PARTS)

    def tasks(self, split: str) -> list[Any]:
        from optiforge.evals.registry import get_benchmark

        tasks = list(get_benchmark("autoro").tasks(split))
        return tasks[: self.limit] if self.limit else tasks

    def run(self, harness: ConfigHarness, task: Task, seed: int) -> dict[str, Any]:
        config = harness.config().model_copy(update={"use_memory": False})
        ctx = RunContext(llm=self.agent_llm(seed), sandbox=self.sandbox, seed=seed, agent="autorem")
        try:
            out = self.spec.build(task, config, None).execute(ctx)
            score = task.evaluate(out.best_candidate, self.sandbox) if out.best_candidate else None
        except SandboxError as e:
            return failed_episode(task, seed, f"sandbox error: {e}", reasons=[])
        ex = out.extra
        return {"task": task.name, "seed": seed, "passed": bool(score is not None and score.passed),
                "stop": out.stop_reason, "steps": int(ex.get("attempts", 0)),
                "llm_calls": int(ex.get("llm_calls", 0)), "tokens": int(ex.get("tokens", 0)),
                "reasons": [str(r)[:200] for r in ex.get("last_reasons", [])],
                "instruction": task.description[:300]}  # fmt: skip

    def diagnose(self, ep: dict[str, Any], mode: str) -> dict[str, Any]:
        text = " ".join(ep.get("reasons") or []).lower()
        if "timed out" in text or "timeout" in text:
            return {"category": "timeout", "evidence": text[:200]}
        if any(w in text for w in ("syntaxerror", "traceback", "crashed", "exit")):
            return {"category": "crashed_draft", "evidence": text[:200]}
        if ep.get("stop") == "attempts spent":
            return {"category": "attempts_spent", "evidence": text[:200]}
        return {"category": "unknown", "evidence": f"stop: {ep.get('stop')}; {text[:160]}"}

    def render(self, ep: dict[str, Any], mode: str) -> str:
        return (f"Task {ep['task']}: {ep.get('instruction', '')}\nattempts: {ep.get('steps')}; ended: {ep.get('stop')}; "
                f"last verdict: {'; '.join(ep.get('reasons') or []) or '(none)'}")  # fmt: skip
