"""What AutoSaddler tunes: a target is an agent with a harness, tasks and a way to run one.

A target gives: ``base()`` (the harness to start from), ``load(files)``, ``tasks(split)``,
``run(harness, task, seed) -> episode`` (a dict with at least ``passed``, ``steps``,
``llm_calls``, ``tokens``, ``stop``; scored by the task's own verifier, never by the agent),
``diagnose(episode, mode)``, ``render(episode, mode)``, ``categories``, ``library`` (the
rule patches per category) and ``parts_doc`` (what each patchable part means, for the LLM).

``TerminalTarget``: the ``terminal`` agent on the ``saddle`` suite, driven through its
``SPEC`` (``build(task, config, None)`` with the harness in the config; the episode is the
run's final ``episode`` state). The agent model of a run is ``agent_llm(seed)`` (one per
run, so a simulated model can draw per seed; a real model varies through its sampling
temperature). ``optiforge.agents.autosaddler.meta`` holds the
meta-use target (another optiforge agent's config as its harness).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from optiforge.agents import get_agent
from optiforge.agents.autosaddler import diagnosis
from optiforge.agents.autosaddler.problem import failed_episode
from optiforge.agents.autosaddler.proposers import Maker
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.harness import Harness, Patch
from optiforge.errors import SandboxError
from optiforge.evals.protocol import Score
from optiforge.evals.suites.saddle.protocol import SaddleTask

if TYPE_CHECKING:
    from optiforge.llm.base import LLM
    from optiforge.sandboxes.base import Sandbox

EXAMPLE = '{"command": "grep -c ERROR app.log"} runs a command; {"submit": true} ends the task'
CHECK_ADVICE = ("After each command read its exit code; a command that failed must be fixed and "
                "re-run before you go on.")  # fmt: skip
SUBMIT_ADVICE = ("Before you submit, check each requirement of the task against the files you "
                 "produced.")  # fmt: skip


def _add_example(h: Harness) -> Patch | None:
    if EXAMPLE in h.tool_examples:
        return None
    return Patch(target="tool_examples", op="append", value=EXAMPLE,
                 why="replies were not in the action format: show a worked example")  # fmt: skip


def _more_retries(h: Harness) -> Patch | None:
    if h.retries >= 3:
        return None
    return Patch(target="retries", value=h.retries + 1,
                 why="an unusable reply lost a whole turn: re-ask within the turn")  # fmt: skip


def _codeblocks(h: Harness) -> Patch | None:
    if h.parse_codeblocks:
        return None
    return Patch(target="parse_codeblocks", value=True,
                 why="the model writes commands in fenced shell blocks: read them as actions")  # fmt: skip


def _structured(h: Harness) -> Patch | None:
    if h.structured_actions:
        return None
    return Patch(target="structured_actions", value=True,
                 why="replies were not in the action format: ask for it with a JSON schema")  # fmt: skip


VERIFY_FAILED_HOOK = r'''def hook(obs):
    """Refuse a submit (twice at most) while a command that failed was never re-run
    successfully, naming each such command."""
    if obs["submits"] > 2:
        return None
    turns = [t for t in obs["turns"] if t["kind"] == "command"]
    bad = []
    for i, t in enumerate(turns):
        if t["returncode"] == 0 and not t["timed_out"]:
            continue
        args = t["command"].split(" ", 1)[-1]
        fixed = [u for u in turns[i + 1 :] if u["returncode"] == 0
                 and (u["command"] == t["command"] or u["command"].split(" ", 1)[-1] == args)]
        if not fixed:
            bad.append(t["command"])
    if not bad:
        return None
    lines = [f"- `{c}` failed and was never re-run successfully" for c in bad]
    return "Not submitted. Fix and re-run these commands first:\n" + "\n".join(lines)'''
"""A verify-before-submit check written as code (the rule library's code hook): unlike the
``verify_before_submit`` switch (one generic request), it looks at the trajectory and names
each failed command that was never repaired."""


def _code_hook(name: str, point: str, source: str, why: str) -> Maker:
    def make(h: Harness) -> Patch | None:
        if any(c.name == name for c in h.code_hooks):
            return None
        return Patch(target="code_hooks", op="append",
                     value={"name": name, "point": point, "source": source}, why=why)  # fmt: skip

    return make


def _hook(name: str, why: str) -> Maker:
    def make(h: Harness) -> Patch | None:
        return None if name in h.hooks else Patch(target="hooks", op="append", value=name, why=why)

    return make


def _advice(text: str, why: str) -> Maker:
    def make(h: Harness) -> Patch | None:
        return (
            None
            if text in h.system_prompt
            else Patch(target="system_prompt", op="append", value=text, why=why)
        )

    return make


_SCALED: dict[str, Callable[[Harness], int | None]] = {
    "max_steps": lambda h: h.max_steps,
    "keep_turns": lambda h: h.keep_turns,
    "output_chars": lambda h: h.output_chars,
    "max_llm_calls": lambda h: h.max_llm_calls,
}
"""The numeric harness parts the rule library scales, and how each is read."""


def _scale(part: str, factor: float, cap: int, why: str) -> Maker:
    read = _SCALED[part]

    def make(h: Harness) -> Patch | None:
        cur = read(h)
        if cur is None or cur >= cap:
            return None
        return Patch(target=part, value=min(cap, int(math.ceil(cur * factor))), why=why)

    return make


TERMINAL_LIBRARY: dict[str, list[Maker]] = {
    "format": [_add_example, _structured, _more_retries, _codeblocks],
    "unverified_error": [
        _hook(
            "verify_before_submit",
            "it submitted with a failed command never re-run: ask it to check first",
        ),
        _code_hook(
            "verify_failed_commands",
            "before_submit",
            VERIFY_FAILED_HOOK,
            "it submitted with a failed command never re-run, and a generic check request did "
            "not help: name the failed commands at submit time",
        ),  # fmt: skip
        _advice(CHECK_ADVICE, "failed commands went unnoticed"),
    ],
    # doubling (not x1.5): a long task that needs 12 turns gains nothing from 6 -> 9, so the
    # gate would refuse the first step and the rule could never reach 12;
    # and x4 when x2 was refused (a task that needs 13 turns gains nothing from 6 -> 12 either)
    "step_limit": [
        _scale("max_steps", 2.0, 60, "it was still working when the turns ran out"),
        _scale(
            "max_steps",
            4.0,
            60,
            "it was still working when the turns ran out, and twice the turns were not enough",
        ),
    ],  # fmt: skip
    "lost_instruction": [
        _hook("reread_instruction", "requirements were lost once older turns were summarized"),
        _scale("keep_turns", 2.0, 40, "requirements were lost once older turns were summarized"),
    ],
    "truncated_output": [_scale("output_chars", 2.0, 20_000, "it acted on clipped output")],
    "llm_limit": [_scale("max_llm_calls", 2.0, 400, "it ran out of LLM calls")],
    "unknown": [_advice(SUBMIT_ADVICE, "it submitted wrong work with no visible error")],
    "llm_error": [],
}

TERMINAL_PARTS = """\
- system_prompt (text; ops: set, append): the system message's prose
- instance_template (text with {instruction}; set): the first user message
- tools (list; append/remove): shell, submit
- tool_examples (list of strings; append/remove/set): usage examples shown under "Examples:"
- max_steps (int 1-200; set): turns per task
- max_llm_calls (int or null; set): LLM calls per task
- retries (int 0-5; set): re-asks within a turn after a reply with no usable action
- output_chars (int 100-100000; set): characters of a command's output shown (head and tail)
- keep_turns (int 1-200; set): turns kept verbatim; older ones shrink to one line
- structured_actions (bool; set): ask for each action with a JSON schema (constrained decoding)
- parse_codeblocks (bool; set): also read a fenced shell block as a command
- hooks (list; append/remove): list_files_first, verify_before_submit, reread_instruction
- code_hooks (list; append {"name", "point", "source"} / remove NAME): new control logic as
  code, `def hook(obs):` run at point before_action (a returned str is a note the model
  reads before it acts), after_observation (a note appended to a command's output) or
  before_submit (a returned str refuses the submit and is shown instead). obs is a dict:
  instruction, step, max_steps, submits, turns (each: kind, command, returncode,
  timed_out, stdout, stderr). No imports, no I/O, no attributes but str/dict read methods,
  no while/try/class/lambda; builtins: len any all min max sum sorted str int bool
  enumerate range list reversed abs zip dict set tuple isinstance"""


SWITCH_LIBRARY: dict[str, list[Maker]] = {
    cat: [m for m in makers if m.__qualname__.split(".")[0] != "_code_hook"]
    for cat, makers in TERMINAL_LIBRARY.items()
}
"""The rule library without its code hooks (only switches, limits and prompt text): the
ablation that shows what writing control logic as code adds."""


class _MemoSteps:
    """A saddle task whose ``step`` reuses the result of the same (files, command) (``memo``)."""

    def __init__(self, task: SaddleTask, owner: TerminalTarget) -> None:
        self._task, self._owner = task, owner
        self.name, self.instruction = task.name, task.instruction
        self.suite, self.split, self.metric = task.suite, task.split, task.metric
        self.higher_is_better, self.description = task.higher_is_better, task.description
        self.budget = task.budget

    def evaluate(self, candidate: Any, sandbox: Any | None = None) -> Score:
        return self._task.evaluate(candidate, sandbox)

    def initial_files(self) -> dict[str, bytes]:
        return dict(self._task.initial_files())

    def step(
        self, files: dict[str, bytes], command: str, sandbox: Any | None = None,
        timeout_s: float = 30.0,
    ) -> tuple[dict[str, bytes], dict[str, Any]]:  # fmt: skip
        h = hashlib.sha256(self.name.encode() + b"\0" + command.encode())
        for rel in sorted(files):
            h.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
        key = h.hexdigest()
        with self._owner._lock:
            hit = self._owner._steps.get(key)
        if hit is not None:
            return dict(hit[0]), dict(hit[1])
        out = self._task.step(files, command, sandbox, timeout_s)
        with self._owner._lock:
            if len(self._owner._steps) < 200_000:
                self._owner._steps[key] = out
        return dict(out[0]), dict(out[1])


class TerminalTarget:
    """The ``terminal`` agent on ``saddle`` (see the module doc)."""

    name = "terminal"
    categories = diagnosis.CATEGORIES
    library = TERMINAL_LIBRARY
    parts_doc = TERMINAL_PARTS

    def __init__(self, agent_llm: Callable[[int], LLM], sandbox: Sandbox, *,
                 temperature: float = 0.7, step_timeout_s: float = 30.0, long: bool = False,
                 library: dict[str, list[Maker]] | None = None, memo: bool = False) -> None:  # fmt: skip
        """``long``: tune on ``long-dev`` and measure on ``long-heldout`` (the long-horizon
        tasks) instead of ``dev``/``heldout``. ``library``: the rule patches (default
        ``TERMINAL_LIBRARY``; ``SWITCH_LIBRARY`` is the ablation without code hooks).
        ``memo``: reuse a step's result for the same (task, files, command) and a score
        for the same (task, commands): sound where commands are deterministic functions of
        the files (the saddle reference commands are; ``ls -la`` times are not, and a
        simulated model never reads them). For the simulated-model benchmarks only: a real
        model reads the outputs, so leave it off there."""
        self.spec = get_agent("terminal")
        self.agent_llm = agent_llm
        self.sandbox = sandbox
        self.temperature = temperature
        self.step_timeout_s = step_timeout_s
        self.long = long
        self.library = TERMINAL_LIBRARY if library is None else library
        if long:
            self.name = "terminal-long"
        self.memo = memo
        self._steps: dict[str, Any] = {}
        self._scores: dict[str, Any] = {}
        self._lock = threading.Lock()

    def base(self) -> Harness:
        """The terminal agent's own harness under its default config (the base harness)."""
        base: Harness = self.spec.config_model().load_harness()
        return base

    def load(self, files: dict[str, str]) -> Harness:
        return Harness.from_files(files)

    def tasks(self, split: str) -> list[Any]:  # SaddleTask
        from optiforge.evals.registry import get_benchmark

        return list(get_benchmark("saddle").tasks(f"long-{split}" if self.long else split))

    def episode(self, harness: Harness, task: SaddleTask, seed: int) -> dict[str, Any]:
        """One terminal run on ``task`` through ``harness`` (the agent's ``SPEC``, not
        checkpointed): the episode the run's final state holds."""
        config = self.spec.config_model(harness=harness, temperature=self.temperature,
                                        step_timeout_s=self.step_timeout_s)  # fmt: skip
        run = self.spec.build(_MemoSteps(task, self) if self.memo else task, config, None)
        ctx = RunContext(
            llm=self.agent_llm(seed), sandbox=self.sandbox, seed=seed, agent="terminal"
        )
        ep: dict[str, Any] = replace(run, durable=False).drive(ctx).state["episode"]
        return ep

    def run(self, harness: Harness, task: SaddleTask, seed: int) -> dict[str, Any]:
        try:
            ep = self.episode(harness, task, seed)
            score = self._score(task, ep["commands"])
        except SandboxError as e:
            return failed_episode(task, seed, f"sandbox error: {e}", turns=[])
        ep.update(seed=seed, passed=bool(score.passed and score.value >= 1.0),
                  verdict=score.details.get("reason"))  # fmt: skip
        return ep

    def _score(self, task: SaddleTask, commands: list[str]) -> Score:
        if not self.memo:
            return task.evaluate({"commands": commands}, self.sandbox)
        key = json.dumps([task.name, commands])
        with self._lock:
            if key in self._scores:
                return self._scores[key]
        score = task.evaluate({"commands": commands}, self.sandbox)
        with self._lock:
            self._scores[key] = score
        return score

    def diagnose(self, ep: dict[str, Any], mode: str) -> dict[str, Any]:
        return diagnosis.diagnose(ep, mode)

    def render(self, ep: dict[str, Any], mode: str) -> str:
        return diagnosis.render(ep, mode)
