"""An agent's harness as code: a typed, versioned object plus files, changed only by patches.

A harness is what surrounds an agent's LLM: the system prompt, the instance template
(``{instruction}`` is the task), the tool set and its usage examples, the step and LLM-call
limits, the retry policy (re-asks after a reply with no usable action), schema-constrained actions
(``structured_actions``), a lenient action parser (``parse_codeblocks``), output truncation
(how much of a command's output the model sees: head and tail), history summarization
(turns kept verbatim; older ones shrink to one line each), prebuilt control-logic hooks
(switches: ``list_files_first``, ``verify_before_submit``, ``reread_instruction``) and code
hooks: new control logic as source, ``def hook(obs)`` installed at an extension point
(``before_action``, ``after_observation``, ``before_submit``), checked by an AST
allow-list when a patch installs it and run in the sandbox (``harness_hooks``).

It lives as files (``files()``/``from_files``, ``save``/``load``): ``harness.json`` for the
typed settings, one Markdown file per prompt and one ``code_hooks/<name>.py`` per code
hook, so a change (a new hook's code included) is a diff. A change is a
``Patch``: one target part, an operation (``set``, ``append`` to a list or a prompt,
``remove`` from a list) and the reason (the diagnosis it answers). ``apply`` validates the
result (a patch that breaks a limit or names no part is a ``ConfigError``); ``version`` is
a hash of the content, so a run records exactly which harness it ran. AutoSaddler (issue
21) tunes harnesses with these patches; the ``terminal`` agent reads one.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from optiforge.agents.kit.harness_hooks import HookPoint, check_hook_source
from optiforge.errors import ConfigError

Hook = Literal["list_files_first", "verify_before_submit", "reread_instruction"]
HOOKS: tuple[str, ...] = ("list_files_first", "verify_before_submit", "reread_instruction")
_PROMPTS = {"system_prompt": "system_prompt.md", "instance_template": "instance_template.md"}
_HOOKS_DIR = "code_hooks"


class CodeHook(BaseModel):
    """New control logic: ``def hook(obs)`` run at ``point`` (``harness_hooks`` says what
    ``obs`` holds and what the return value does there)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")
    point: HookPoint
    source: str = Field(min_length=1)
    """The hook's code; it must pass ``harness_hooks.check_hook_source``."""

    @field_validator("source")
    @classmethod
    def _trailing(cls, v: str) -> str:  # the file form ends in one newline: one spelling
        return v.rstrip()

    def model_post_init(self, __context: Any) -> None:
        check_hook_source(self.source)


class Harness(BaseModel):
    """See the module doc."""

    model_config = ConfigDict(extra="forbid")

    name: str = "terminal"
    system_prompt: str = Field(min_length=1)
    instance_template: str = Field(min_length=1)
    """The first user message; ``{instruction}`` is replaced by the task's instruction."""
    tools: list[str] = Field(default_factory=lambda: ["shell", "submit"], min_length=1)
    tool_examples: list[str] = Field(default_factory=list)
    """Usage examples shown with the tools (one string each)."""
    max_steps: int = Field(default=12, ge=1, le=200)
    max_llm_calls: int | None = Field(default=None, ge=1)
    retries: int = Field(default=0, ge=0, le=5)
    """Re-asks after a reply that holds no usable action."""
    output_chars: int = Field(default=1500, ge=100, le=100_000)
    """Characters of a command's output shown to the model (head and tail)."""
    keep_turns: int = Field(default=6, ge=1, le=200)
    """Turns kept verbatim; older turns are summarized to one line each."""
    structured_actions: bool = False
    """Ask for each action with a JSON schema (``{"command", "submit"}``): providers that
    support it constrain decoding to it (the embedded model as a grammar)."""
    parse_codeblocks: bool = False
    """Also read a reply's first fenced shell block (```bash/```sh/```) as a command when it
    holds no JSON action (a lenient action parser)."""
    hooks: list[Hook] = Field(default_factory=list)
    code_hooks: list[CodeHook] = Field(default_factory=list, max_length=8)
    """Code hooks, run in order at their points (names unique)."""

    def model_post_init(self, __context: Any) -> None:
        if "{instruction}" not in self.instance_template:
            raise ValueError("instance_template must contain {instruction}")
        names = [h.name for h in self.code_hooks]
        if len(names) != len(set(names)):
            raise ValueError(f"code hook names must be unique (got {names})")

    def code_hooks_at(self, point: str) -> list[CodeHook]:
        return [h for h in self.code_hooks if h.point == point]

    @property
    def version(self) -> str:
        """A hash of the content (12 hex characters)."""
        blob = json.dumps(self.model_dump(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def files(self) -> dict[str, str]:
        """``harness.json`` (typed settings) and one Markdown file per prompt."""
        settings = self.model_dump(exclude=set(_PROMPTS))
        # a code hook's source is its own file (a readable diff); harness.json keeps its place
        settings["code_hooks"] = [{"name": h.name, "point": h.point} for h in self.code_hooks]
        out = {"harness.json": json.dumps(settings, indent=2, sort_keys=True) + "\n"}
        for part, fname in _PROMPTS.items():
            out[fname] = str(getattr(self, part)).rstrip("\n") + "\n"
        for h in self.code_hooks:
            out[f"{_HOOKS_DIR}/{h.name}.py"] = h.source.rstrip("\n") + "\n"
        return out

    @classmethod
    def from_files(cls, files: dict[str, str]) -> Harness:
        try:
            data = json.loads(files["harness.json"])
            for part, fname in _PROMPTS.items():
                data[part] = files[fname].rstrip("\n")
            data["code_hooks"] = [
                {**h, "source": files[f"{_HOOKS_DIR}/{h['name']}.py"].rstrip("\n")}
                for h in data.get("code_hooks") or []
            ]
            return cls(**data)
        except (KeyError, TypeError, json.JSONDecodeError, ValidationError, ValueError) as e:
            raise ConfigError(f"not a harness: {str(e).splitlines()[0]}") from e

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in self.files().items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> Harness:
        folder = Path(folder)
        names = ["harness.json", *_PROMPTS.values()]
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise ConfigError(f"{folder} is not a harness folder (missing {', '.join(missing)})")
        files = {n: (folder / n).read_text() for n in names}
        hooks = folder / _HOOKS_DIR
        if hooks.is_dir():
            files |= {f"{_HOOKS_DIR}/{p.name}": p.read_text() for p in sorted(hooks.glob("*.py"))}
        return cls.from_files(files)

    def apply(self, patch: Patch) -> Harness:
        """The harness with ``patch`` applied (validated; a ``ConfigError`` otherwise)."""
        if patch.target not in PATCHABLE:
            raise ConfigError(
                f"a harness has no part {patch.target!r} (parts: {', '.join(PATCHABLE)})"
            )
        data = self.model_dump()
        cur = data[patch.target]
        if patch.op == "set":
            data[patch.target] = patch.value
        elif patch.op == "append":
            if isinstance(cur, list):
                data[patch.target] = [*cur, patch.value]
            elif isinstance(cur, str):
                data[patch.target] = cur.rstrip("\n") + "\n" + str(patch.value)
            else:
                raise ConfigError(f"cannot append to {patch.target} (a {type(cur).__name__})")
        elif patch.target == "code_hooks":  # remove a code hook by its name
            if patch.value not in [h["name"] for h in cur]:
                raise ConfigError(f"no code hook named {patch.value!r} to remove")
            data[patch.target] = [h for h in cur if h["name"] != patch.value]
        else:  # remove
            if not isinstance(cur, list) or patch.value not in cur:
                raise ConfigError(f"cannot remove {patch.value!r} from {patch.target}")
            data[patch.target] = [v for v in cur if v != patch.value]
        try:
            return Harness(**data)
        except ValidationError as e:
            err = e.errors()[0]  # the first problem, located (a code hook's names its construct)
            where = ".".join(str(x) for x in err["loc"])
            raise ConfigError(
                f"patch to {patch.target} gives an invalid harness: "
                f"{where + ': ' if where else ''}{err['msg']}"
            ) from e
        except ValueError as e:
            raise ConfigError(
                f"patch to {patch.target} gives an invalid harness: {str(e).splitlines()[-1]}"
            ) from e

    def diff(self, other: Harness) -> str:
        """A unified diff from this harness's files to ``other``'s."""
        return files_diff(self.files(), other.files())


def files_diff(a: dict[str, str], b: dict[str, str]) -> str:
    """A unified diff from one set of harness files to another (``a/NAME``, ``b/NAME``)."""
    out: list[str] = []
    for name in sorted(set(a) | set(b)):
        out += difflib.unified_diff(a.get(name, "").splitlines(keepends=True),
                                    b.get(name, "").splitlines(keepends=True),
                                    f"a/{name}", f"b/{name}")  # fmt: skip
    return "".join(out)


PARTS: tuple[str, ...] = tuple(Harness.model_fields)
PATCHABLE: tuple[str, ...] = tuple(p for p in PARTS if p != "name")
"""The parts a patch may change (everything but the name)."""


class Patch(BaseModel):
    """One structured change to one harness part, with the reason for it."""

    model_config = ConfigDict(extra="forbid")

    target: str = Field(pattern=r"^[a-z_][a-z0-9_.]*$")
    """The part it changes (a ``Harness`` field, or a config field of a ``ConfigHarness``);
    the harness being patched refuses a part it does not have."""
    op: Literal["set", "append", "remove"] = "set"
    value: Any
    """The new value, the item to append or the item to remove; for ``code_hooks``:
    ``append`` takes ``{"name", "point", "source"}``, ``remove`` takes a hook's name."""
    why: str = Field(min_length=1)
    """The diagnosis this patch answers."""
