"""What AutoSaddler tunes: a target is an agent with a harness, tasks and a way to run one.

A target gives: ``base()`` (the harness to start from), ``load(files)``, ``tasks(split)``,
``run(harness, task, seed) -> episode`` (a dict with at least ``passed``, ``steps``,
``llm_calls``, ``tokens``, ``stop``; scored by the task's own verifier, never by the agent),
``diagnose(episode, mode)``, ``render(episode, mode)``, ``categories``, ``library`` (the
rule patches per category) and ``parts_doc`` (what each patchable part means, for the LLM).

``TerminalTarget``: the ``terminal`` agent on the ``saddle`` suite. The agent model of a run
is ``agent_llm(seed)`` (one per run, so a simulated model can draw per seed; a real model
varies through its sampling temperature). ``optiforge.agents.autosaddler.meta`` holds the
meta-use target (another optiforge agent's config as its harness).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from optiforge.agents.autosaddler import diagnosis
from optiforge.agents.autosaddler.problem import failed_episode
from optiforge.agents.autosaddler.proposers import Maker
from optiforge.agents.kit.harness import Harness, Patch
from optiforge.agents.terminal.agent import run_episode
from optiforge.agents.terminal.problem import base_harness
from optiforge.errors import SandboxError

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


def _scale(part: str, factor: float, cap: int, why: str) -> Maker:
    def make(h: Harness) -> Patch | None:
        cur = getattr(h, part)
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
        _advice(CHECK_ADVICE, "failed commands went unnoticed"),
    ],
    "step_limit": [_scale("max_steps", 1.5, 60, "it was still working when the turns ran out")],
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
- hooks (list; append/remove): list_files_first, verify_before_submit, reread_instruction"""


class TerminalTarget:
    """The ``terminal`` agent on ``saddle`` (see the module doc)."""

    name = "terminal"
    categories = diagnosis.CATEGORIES
    library = TERMINAL_LIBRARY
    parts_doc = TERMINAL_PARTS

    def __init__(self, agent_llm: Callable[[int], Any], sandbox: Any, *,
                 temperature: float = 0.7, step_timeout_s: float = 30.0) -> None:  # fmt: skip
        self.agent_llm = agent_llm
        self.sandbox = sandbox
        self.temperature = temperature
        self.step_timeout_s = step_timeout_s

    def base(self) -> Harness:
        return base_harness()

    def load(self, files: dict[str, str]) -> Harness:
        return Harness.from_files(files)

    def tasks(self, split: str) -> list[Any]:
        from optiforge.evals.registry import get_benchmark

        return list(get_benchmark("saddle").tasks(split))

    def run(self, harness: Harness, task: Any, seed: int) -> dict[str, Any]:
        try:
            ep = run_episode(task, harness, self.agent_llm(seed), self.sandbox,
                             temperature=self.temperature, step_timeout_s=self.step_timeout_s)  # fmt: skip
            score = task.evaluate({"commands": ep["commands"]}, self.sandbox)
        except SandboxError as e:
            return failed_episode(task, seed, f"sandbox error: {e}", turns=[])
        ep.update(seed=seed, passed=bool(score.passed and score.value >= 1.0),
                  verdict=score.details.get("reason"))  # fmt: skip
        return ep

    def diagnose(self, ep: dict[str, Any], mode: str) -> dict[str, Any]:
        return diagnosis.diagnose(ep, mode)

    def render(self, ep: dict[str, Any], mode: str) -> str:
        return diagnosis.render(ep, mode)
