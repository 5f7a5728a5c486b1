"""``ROInstance``: a robust-optimization problem with what an agent is told and its reference optimum.

The domain type shared by the AutoRO-Bench suite (which generates instances) and the
agents that solve them; ``parse_instance`` reads one back from JSON.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from optiforge.errors import InvalidTask
from optiforge.solvers.robust.model import ROProblem


class ROInstance(BaseModel):
    """One AutoRO-Bench instance: the problem, what an agent is told, the reference optimum."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str
    split: str
    """``dev``, ``test``, ``heldout`` or ``app``."""
    difficulty: int = Field(ge=1, le=5)
    description: str
    """Natural-language statement given to an agent together with the problem JSON."""
    problem: ROProblem
    reference_objective: float
    """Robust optimum from the reference reformulator."""
    reference_x: list[float]
    """Reference robust solution (empty for the application set, which records only the optimum)."""
    set_types: list[str] = Field(default_factory=list)
    features: list[str] = Field(default_factory=list)
    """Structural tags: ``soc``, ``uncertain_objective``, ``ge_rows``, ``equality``..."""

    def to_json(self, **kwargs: Any) -> str:
        """Serialize to JSON (``parse_instance`` reads it back)."""
        return self.model_dump_json(**kwargs)


def parse_instance(data: str | bytes | dict[str, Any]) -> ROInstance:
    """Parse an ``ROInstance`` from JSON text or a dict; bad input raises ``InvalidTask``."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidTask(f"malformed JSON for AutoRO instance: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidTask("AutoRO instance must be a JSON object")
    try:
        return ROInstance.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise InvalidTask(f"invalid AutoRO instance: {loc}: {first['msg']}") from None
