"""Typed hand-offs between pipeline nodes: what an artifact must hold for the next node.

An agent node's artifact carries its agent's outcome details in ``extra``; the nodes
after it read them through references (``${ID.artifact.extra.KEY}``). ``HANDOFFS`` names,
per artifact kind, the pydantic model of the fields a downstream node may rely on; the
runner validates every artifact against it when the node finishes, so a malformed
hand-off fails the node that produced it (one line), not a later node that reads it.
``missing_artifact`` is the one-line error of a reference to a node that handed on
nothing (it failed, or has not run).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from optiforge.errors import ConfigError


class GPKernelHandoff(BaseModel):
    """Kernel Discovery (``gp-kernel``): the kernel its last refresh chose (a grammar
    expression or an LLM kernel's name), e.g. as another node's GP kernel."""

    model_config = ConfigDict(extra="allow")

    final_kernel: str | None
    final_expression: str | None = None
    """The final kernel as a grammar expression another optimizer can build (None when
    the search ended on LLM-written code, which runs only in Kernel Discovery's sandbox)."""

    @model_validator(mode="before")
    @classmethod
    def _expression(cls, data: Any) -> Any:
        if isinstance(data, dict) and "final_expression" not in data:
            last = (data.get("refreshes") or [{}])[-1].get("kernel") or {}
            data = {**data, "final_expression": last.get("expression")}
        return data


class ToolPoolHandoff(BaseModel):
    """SMITH (``tool-pool``): the names of the tools it validated and stored in the
    pipeline's memory; another agent's ``agent.tools.pool_names`` offers exactly these."""

    model_config = ConfigDict(extra="allow")

    pool: list[str]


class FormulationHandoff(BaseModel):
    """The formulator (``formulation``): the search space and optimizer it wrote (read by
    the ``optimize`` step). AutoREM's ``formulation`` is its counterpart code (no extra)."""

    model_config = ConfigDict(extra="allow")

    formulation: dict[str, Any] | None = None


class HarnessHandoff(BaseModel):
    """AutoSaddler (``harness``, the ``tune`` step): an agent's harness, tuned."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    values: dict[str, Any]
    """The harness parts by name (AutoREM: ``max_attempts``, ``tools_use``, ``timeout_s``)."""
    base: dict[str, Any]
    """The harness the tuning started from (the input node's own config)."""
    version: str
    accepted: int = Field(ge=0)
    """Patches the validation gate accepted (0: the tuned harness is the base one)."""
    patches: list[dict[str, Any]] = Field(default_factory=list)


HANDOFFS: dict[str, type[BaseModel]] = {
    "gp-kernel": GPKernelHandoff,
    "tool-pool": ToolPoolHandoff,
    "formulation": FormulationHandoff,
}
"""Artifact kind -> the model its ``extra`` must satisfy (agent nodes)."""


def check_extra(kind: str, extra: dict[str, Any], node: str) -> dict[str, Any]:
    """``extra`` validated against ``HANDOFFS[kind]`` (unchanged when the kind has none).

    Raises:
        ConfigError: one line naming the node, the kind and the first bad field.
    """
    model = HANDOFFS.get(kind)
    if model is None:
        return extra
    try:
        return model.model_validate(extra).model_dump(mode="json")
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "extra"
        raise ConfigError(
            f"node {node!r} handed on a malformed {kind} artifact: extra.{loc}: {err['msg']}"
        ) from None


def missing_artifact(where: str, ref: str, node: str, result: dict[str, Any] | None) -> str:
    """The one-line error of ``${node.artifact...}`` when ``node`` handed on nothing."""
    if result is None:
        return f"{where}: {ref}: node {node!r} has not run"
    why = " ".join(str(result.get("status_reason") or "no result").split())[:200]
    return f"{where}: {ref}: node {node!r} handed on no artifact ({result.get('status')}: {why})"


def require_artifact(results: dict[str, dict[str, Any]], node: str, kind: str, where: str) -> Any:
    """The artifact ``node`` handed on, which must be of ``kind`` (steps that read one)."""
    res = results.get(node)
    art = (res or {}).get("artifact")
    if not art:
        raise ConfigError(missing_artifact(where, f"input {node!r}", node, res))
    if art.get("kind") != kind:
        raise ConfigError(
            f"{where}: input {node!r} handed on a {art.get('kind')} artifact, not a {kind}"
        )
    return art
