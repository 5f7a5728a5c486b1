"""Configuration: pydantic models loaded from YAML presets plus dotted CLI overrides.

Every config model forbids unknown keys, so a typo in YAML fails loudly with the key's
path. ``configs/`` holds presets users copy and edit; ``--set a.b=1`` overrides a value
(the right-hand side is parsed as YAML, so ``true``, ``3``, ``[1, 2]`` work).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from optiforge.errors import ConfigError
from optiforge.limits import MAX_BUDGET, MAX_WALL_S, MAX_WORKERS

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base for config models: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class LocalModelSettings(StrictModel):
    """The embedded model (``--model local``)."""

    path: Path | None = None
    """A GGUF file to serve instead of the bundled SmolLM2-135M-Instruct."""
    n_ctx: int = Field(default=8192, ge=512, le=131072)
    """Context length in tokens (the bundled model's is 8192; ~400 MB of RAM)."""
    threads: int = Field(default=1, ge=1, le=64)
    """llama.cpp threads (on 2 cores, 2 threads were slower than 1 under load)."""
    parallel: int | None = Field(default=None, ge=1, le=16)
    """Requests the server generates at once, one model instance each (the weights are
    mapped once; each adds its KV cache, ~400 MB at the default ``n_ctx``). None: one per
    ``threads`` cores, at most 4, as half the free memory allows."""
    max_tokens: int = Field(default=384, ge=16, le=32768)
    """Reply length when a caller names none (the bundled model, once in a loop, repeats
    itself to any limit: 384 tokens hold a program of ~40 lines)."""
    schema_max_tokens: int = Field(default=1024, ge=16, le=32768)
    """The same for a reply held to a JSON schema: the grammar bounds its strings, and a
    reply cut short of them is an unterminated string (KernelForm: 6 of 18 at 384)."""
    code_grammars: bool = False
    """Hold code replies to the shape the agent asks for (``optiforge.llm.grammars``: one
    fenced python block defining the required function) with a llama.cpp grammar. Off by
    default until the local-model cassettes are re-recorded with it (a request's grammar is
    part of its cassette key)."""


class LLMOptions(StrictModel):
    """Options of the LLM layer (``--set llm.KEY=VALUE``)."""

    local: LocalModelSettings = Field(default_factory=LocalModelSettings)
    """The embedded model of ``--model local`` (``llm.local.path``: another GGUF file)."""


class RunSettings(StrictModel):
    """What every agent run shares: provider, budgets, seed, services."""

    model: str = "offline"
    """litellm provider string (``openai/gpt-4o-mini``, ``ollama/llama3.1``...) or ``offline``."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible server (vLLM, llama.cpp, LM Studio...)."""
    llm: LLMOptions = Field(default_factory=LLMOptions)
    """LLM layer options (the embedded model of ``--model local``)."""
    seed: int = Field(default=0, ge=0)
    budget: int | None = Field(default=None, ge=1, le=MAX_BUDGET)
    """Evaluations (candidate scorings / function evaluations) the agent may spend."""
    max_llm_calls: int | None = Field(default=None, ge=0)
    max_usd: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    max_wall_s: float | None = Field(default=None, gt=0.0, le=MAX_WALL_S)
    max_sandbox_s: float | None = Field(default=None, gt=0.0, le=MAX_WALL_S)
    memory: str | None = None
    """Experience memory scope: ``run`` (default: the run dir's own), ``project:NAME``,
    ``global`` (opt-in: ``~/.optiforge/memory.db``), ``none``, or a SQLAlchemy URL
    (``optiforge.memory.store.scoped_url``)."""
    sandbox: str = "local"
    """Sandbox back end: ``local`` or ``docker``."""
    workers: int = Field(default=1, ge=1, le=MAX_WORKERS)
    """Parallel evaluation workers."""
    executor: Literal["thread", "process", "ray"] = "thread"
    """What runs the parallel evaluations: ``process`` (local worker processes),
    ``thread`` (threads of this process: every evaluation is a sandboxed subprocess, so
    no worker has to start and import the project), or ``ray`` (a local Ray with
    ``workers`` CPUs, or the cluster at ``ray_address``)."""
    ray_address: str | None = None
    """A Ray cluster (``ray://host:10001`` or ``auto``); None starts a local Ray."""
    record: Path | None = None
    """Record every LLM exchange to this cassette (JSONL)."""
    replay: Path | None = None
    """Answer LLM requests from this cassette only; an unrecorded request is an error."""
    cache: Path | None = None
    """SQLite response cache (identical requests are answered without a call)."""
    agent: dict[str, Any] = Field(default_factory=dict)
    """Agent-specific options, validated by the agent's own config model."""


def load_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; errors name the file."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except FileNotFoundError as err:
        raise ConfigError(f"config file not found: {p}") from err
    except IsADirectoryError as err:
        raise ConfigError(f"config file {p} is a directory, not a YAML file") from err
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"config file {p} is not UTF-8 text (byte {err.start}: {err.reason}); "
            "is it a YAML file?"
        ) from err
    except OSError as err:
        raise ConfigError(f"config file {p} cannot be read: {err.strerror or err}") from err
    except yaml.YAMLError as err:
        raise ConfigError(" ".join(f"{p} is not valid YAML: {err}".split())) from err
    if not isinstance(data, dict):
        raise ConfigError(f"{p} must hold a mapping at the top level, not {type(data).__name__}")
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Return a copy of ``data`` with ``a.b.c=value`` overrides applied."""
    out: dict[str, Any] = _deep_copy(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not of the form key.path=value")
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError as err:
            raise ConfigError(f"override {item!r}: value is not valid YAML") from err
        node = out
        parts = key.strip().split(".")
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"override {item!r}: {part!r} is not a mapping")
            node = nxt
        node[parts[-1]] = value
    return out


def _deep_copy(data: dict[str, Any]) -> dict[str, Any]:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in data.items()}


def validation_message(err: ValidationError, where: str = "config") -> str:
    """One readable line from a pydantic ValidationError (first problem, count of others)."""
    errors = err.errors()
    first = errors[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
    msg = f"{where}: {loc}: {first.get('msg', 'invalid')}"
    if first.get("type") == "extra_forbidden":
        msg = f"{where}: unknown key {loc!r}"
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more)"
    return msg


def build_config(
    cls: type[M],
    *,
    preset: str | Path | None = None,
    overrides: list[str] | None = None,
    base: dict[str, Any] | None = None,
    where: str | None = None,
) -> M:
    """Validate ``cls``'s defaults <- ``base`` <- YAML ``preset`` <- ``overrides`` into ``cls``.

    The defaults come first, so setting one key of a nested model keeps the others at
    the defaults ``cls`` gives that model (``EvolveConfig.search`` has its own
    ``max_evaluations`` and ``overlap``), not at the nested model's class defaults.
    """
    data: dict[str, Any] = _merge(_defaults(cls), base or {})
    if preset is not None:
        data = _merge(data, load_yaml(preset))
    data = apply_overrides(data, overrides or [])
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        raise ConfigError(validation_message(err, where or cls.__name__)) from err


def _defaults(cls: type[BaseModel]) -> dict[str, Any]:
    """``cls``'s defaults as plain data ({} when a field has none: nothing to keep)."""
    try:
        return cls().model_dump(mode="python")
    except ValidationError:
        return {}


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = _deep_copy(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class OptionDoc(BaseModel):
    """One config key as ``optiforge config show`` prints it."""

    key: str
    """Dotted path, as ``--set`` takes it."""
    type: str
    default: Any
    doc: str


def _attribute_docs(cls: type) -> dict[str, str]:
    """The string literal under each annotated field of ``cls`` and its bases."""
    import ast
    import inspect
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass in (BaseModel, object) or not issubclass(klass, BaseModel):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, nxt in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(nxt.value.value.split())
    return docs


def describe_model(
    cls: type[BaseModel], prefix: str = "", defaults: dict[str, Any] | None = None
) -> list[OptionDoc]:
    """Every key of a config model, nested models flattened to dotted keys, with its type,
    default and documentation (the field's description or the docstring under it).

    ``defaults``: the enclosing model's default for this nested model (a parent may set
    other defaults than the nested class's own, e.g. a smaller search budget).
    """
    import typing

    docs = _attribute_docs(cls)
    out: list[OptionDoc] = []
    for name, field in cls.model_fields.items():
        key = f"{prefix}{name}"
        ann = field.annotation
        if defaults is not None and name in defaults:
            default = defaults[name]
        else:
            default = field.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            default = default.model_dump(mode="json")
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out += describe_model(ann, key + ".", default if isinstance(default, dict) else None)
            continue
        if typing.get_args(ann):
            type_name = str(ann).replace("typing.", "")
        else:
            type_name = getattr(ann, "__name__", str(ann))
        doc = field.description or docs.get(name, "")
        out.append(OptionDoc(key=key, type=type_name, default=default, doc=doc))
    return out
