"""The pipeline file format: a YAML list of agent nodes and glue steps, and its edges.

A pipeline (``configs/pipelines/*.yaml``) names nodes in order. An agent node runs one
agent (or one of its baselines) on one task; a step node runs a small glue step of
``optiforge.harness.pipelines.steps`` on an earlier node's result. Without ``next`` a
node hands to the node listed after it (the last one ends the pipeline); ``next`` may
name a node, ``end``, or a list of rules tried in order::

    next:
      - {when: failed, to: diagnose}     # the node's run failed
      - {to: end}                        # otherwise

An agent node's ``set`` overrides its config (``agent.KEY`` or any run setting) and may
reference what earlier nodes produced: ``${discover.artifact.extra.final_kernel}`` is
that value (kept typed when it is the whole string).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from optiforge.errors import ConfigError

END = "end"
NODE_ID = r"^[a-z][a-z0-9_-]{0,39}$"
REF = re.compile(r"\$\{([a-z][a-z0-9_-]*)\.([A-Za-z0-9_.-]+)\}")

Condition = Literal["always", "succeeded", "failed", "beat_baseline", "missed_baseline"]


class NextRule(BaseModel):
    """One conditional edge: go ``to`` a node when the node's result meets ``when``."""

    model_config = ConfigDict(extra="forbid")

    when: Condition = "always"
    """``succeeded``: finished or stopped with a verified score; ``failed``: anything else;
    ``beat_baseline`` / ``missed_baseline``: the verified score against the agent's
    primary baseline measured in the same node."""
    to: str
    """A node id, or ``end``."""


class NodeSpec(BaseModel):
    """One node: an agent run (``agent`` + ``task``) or a glue step (``step``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=NODE_ID)
    """Unique in the pipeline; names the node's run directory (``nodes/ID``)."""
    agent: str | None = None
    """An agent (``optiforge list agents``)."""
    method: str | None = None
    """One of the agent's baselines instead of the agent itself (or the agent's name); may
    be a reference, e.g. ``${formulate.artifact.method}``."""
    task: str | None = None
    """``SUITE/TASK`` or ``SUITE/TASK@SPLIT`` (agent nodes; the ``formulate`` step's
    problem)."""
    budget: int | None = Field(default=None, ge=1)
    """Evaluations of this node (default: the task's, else the agent's)."""
    seed: int | None = Field(default=None, ge=0)
    """Default: the pipeline run's seed."""
    set: dict[str, Any] = Field(default_factory=dict)
    """Agent nodes: overrides, dotted keys: ``agent.KEY`` for the agent's config, else run
    settings. Step nodes: the step's options (e.g. ``optimize``'s ``method``); both may
    reference earlier nodes (``${ID.artifact...}``)."""
    step: str | None = None
    """A glue step (``optiforge.harness.pipelines.steps.STEPS``)."""
    input: str | None = None
    """Step nodes: the node whose result the step reads (default: the previous node)."""
    next: str | list[NextRule] | None = None
    """Where to go after this node (default: the next node listed, or the end)."""

    @model_validator(mode="after")
    def _one_kind(self) -> NodeSpec:
        if (self.agent is None) == (self.step is None):
            raise ValueError(f"node {self.id!r}: give exactly one of 'agent' or 'step'")
        if self.agent is not None and not self.task:
            raise ValueError(f"node {self.id!r}: an agent node needs a 'task' (SUITE/TASK)")
        if self.step is not None and (self.method or self.budget):
            raise ValueError(
                f"node {self.id!r}: a step node takes only 'step', 'input', 'task', 'set', 'next'"
            )
        return self

    @property
    def kind(self) -> str:
        return "agent" if self.agent is not None else "step"

    def rules(self, following: str) -> list[NextRule]:
        """The node's edges as rules (``following``: the node listed after it, or end)."""
        if self.next is None:
            return [NextRule(to=following)]
        if isinstance(self.next, str):
            return [NextRule(to=self.next)]
        return list(self.next)


class PipelineBudget(BaseModel):
    """One ledger for the whole pipeline: every node's LLM calls and spend count here."""

    model_config = ConfigDict(extra="forbid")

    max_llm_calls: int | None = Field(default=None, ge=0)
    max_usd: float | None = Field(default=None, ge=0)
    max_wall_s: float | None = Field(default=None, gt=0)


class PipelineSpec(BaseModel):
    """A pipeline file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    description: str = Field(min_length=1)
    model: str | None = None
    """Default model of every node (``--model`` overrides; default offline)."""
    memory: str = "run"
    """The one memory every node reads and writes: ``run`` (this pipeline run's own
    ``memory.db``), ``project:NAME``, ``global``, ``none`` or a SQLAlchemy URL."""
    budget: PipelineBudget = Field(default_factory=PipelineBudget)
    max_steps: int = Field(default=32, ge=1, le=1000)
    """Node visits before the pipeline stops (a loop guard)."""
    nodes: list[NodeSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _edges(self) -> PipelineSpec:
        ids = [n.id for n in self.nodes]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"node ids must be unique: {', '.join(sorted(dup))}")
        if END in ids:
            raise ValueError(f"{END!r} is reserved (it ends the pipeline)")
        known = set(ids) | {END}
        for i, node in enumerate(self.nodes):
            following = ids[i + 1] if i + 1 < len(ids) else END
            for rule in node.rules(following):
                if rule.to not in known:
                    raise ValueError(f"node {node.id!r}: next {rule.to!r} is not a node id")
            if node.input is not None and node.input not in ids:
                raise ValueError(f"node {node.id!r}: input {node.input!r} is not a node id")
            if node.step not in (None, "formulate") and node.input is None and i == 0:
                raise ValueError(f"node {node.id!r}: a first step node needs an 'input'")
            if node.step == "formulate" and not node.task:
                raise ValueError(f"node {node.id!r}: a formulate step needs a 'task'")
            for value in _strings(node.set) + _strings(node.method):
                for ref, _ in REF.findall(value):
                    if ref not in ids:
                        raise ValueError(f"node {node.id!r}: ${{{ref}...}} is not a node id")
        return self

    def node(self, node_id: str) -> NodeSpec:
        return next(n for n in self.nodes if n.id == node_id)

    def following(self, node_id: str) -> str:
        ids = [n.id for n in self.nodes]
        i = ids.index(node_id)
        return ids[i + 1] if i + 1 < len(ids) else END


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def resolve_refs(value: Any, scope: dict[str, dict[str, Any]], where: str) -> Any:
    """``${node.path}`` references in ``value`` replaced from ``scope`` (node -> fields)."""
    if isinstance(value, dict):
        return {k: resolve_refs(v, scope, where) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_refs(v, scope, where) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value

    def lookup(node: str, path: str) -> Any:
        cur: Any = scope.get(node)
        if cur is None or (path.split(".")[0] == "artifact" and cur.get("artifact") is None):
            from optiforge.harness.pipelines.handoff import missing_artifact

            raise ConfigError(
                missing_artifact(where, f"${{{node}.{path}}}", node, (cur or {}).get("result"))
            )
        for part in path.split("."):
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
                cur = cur[int(part)]
            else:
                raise ConfigError(f"{where}: ${{{node}.{path}}} names nothing ({part!r} missing)")
        return cur

    whole = REF.fullmatch(value)
    if whole:
        return lookup(*whole.groups())
    return REF.sub(lambda m: str(lookup(m.group(1), m.group(2))), value)


def load_pipeline(path: str | Path) -> PipelineSpec:
    """Parse and validate a pipeline file; a ``ConfigError`` naming what is wrong."""
    from optiforge.config import load_yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"pipeline file {p} does not exist (see `optiforge list pipelines`)")
    data = load_yaml(p)
    return parse_pipeline(data, where=str(p))


def parse_pipeline(data: Any, where: str = "pipeline") -> PipelineSpec:
    try:
        spec = PipelineSpec.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{where}: {loc + ': ' if loc else ''}{msg}") from None
    check_nodes(spec, where)
    return spec


def check_nodes(spec: PipelineSpec, where: str) -> None:
    """Agents, baselines, steps and tasks exist, and each agent accepts its task's suite."""
    from optiforge.agents import get_agent
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.pipelines.steps import STEPS

    for node in spec.nodes:
        at = f"{where}: node {node.id!r}"
        if node.step is not None:
            if node.step not in STEPS:
                raise ConfigError(f"{at}: no step {node.step!r} (steps: {', '.join(STEPS)})")
            from optiforge.harness.pipelines.optimize import OPTIONS

            extra = sorted(set(node.set) - OPTIONS.get(node.step, set()))
            if extra:
                takes = ", ".join(sorted(OPTIONS.get(node.step, set()))) or "none"
                raise ConfigError(
                    f"{at}: step {node.step} takes no option {extra[0]!r} (options: {takes})"
                )
            if node.task:
                try:
                    resolve_task(node.task)
                except ConfigError as e:
                    raise ConfigError(f"{at}: {e}") from None
            continue
        assert node.agent is not None and node.task is not None
        try:
            agent = get_agent(node.agent)
            task = agent.check_task(resolve_task(node.task))
            baselines = agent.baselines_for(task)  # the task family's (the formulator: two)
            if (node.method and "${" not in node.method and node.method != agent.name
                    and node.method not in baselines):  # fmt: skip
                raise ConfigError(
                    f"{node.agent} has no baseline {node.method!r} "
                    f"(baselines: {', '.join(baselines)})"
                )
        except ConfigError as e:
            raise ConfigError(f"{at}: {e}") from None


def pipeline_dirs() -> list[Path]:
    """Where bundled and user pipelines are looked up: ./configs/pipelines, then the
    checkout's own configs/pipelines."""
    here = Path(__file__).resolve().parents[3] / "configs" / "pipelines"
    return list(dict.fromkeys([Path("configs/pipelines").resolve(), here]))


def find_pipeline(ref: str | Path) -> Path:
    """A pipeline file from a path or a bundled pipeline's name."""
    p = Path(ref)
    if p.is_file():
        return p
    for d in pipeline_dirs():
        for cand in (d / f"{ref}.yaml", d / f"{ref}.yml"):
            if cand.is_file():
                return cand
    names = sorted({f.stem for d in pipeline_dirs() if d.is_dir() for f in d.glob("*.y*ml")})
    raise ConfigError(
        f"no pipeline file or bundled pipeline {str(ref)!r} (bundled: {', '.join(names) or 'none'})"
    )


def bundled_pipelines() -> list[tuple[str, Path, str]]:
    """``(name, path, description)`` of the pipelines found in ``pipeline_dirs()``."""
    from optiforge.config import load_yaml

    out: dict[str, tuple[str, Path, str]] = {}
    for d in pipeline_dirs():
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.y*ml")):
            try:
                data = load_yaml(f)
                desc = str(data.get("description", "")).strip().splitlines()[0]
            except Exception as e:  # noqa: BLE001 - a broken file is listed with its error
                desc = f"(unreadable: {e})"
            out.setdefault(f.stem, (f.stem, f, desc))
    return list(out.values())
