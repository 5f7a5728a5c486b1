"""``smith``'s options."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SmithConfig(BaseModel):
    """Options of the ``smith`` agent."""

    model_config = ConfigDict(extra="forbid")

    build: bool = True
    """Write tools for the build tasks (False: only use the pool, e.g. a student model using
    tools a stronger model wrote into memory)."""
    build_attempts: int = Field(default=3, ge=1, le=10)
    """Tools written per build task (each validated; the next is told why the last failed)."""
    calls_per_question: int = Field(default=1, ge=1, le=3)
    """Function calls per use question (pass@k with k = this; the first is pass@1)."""
    memory_pool: bool = True
    """Also offer the tools earlier runs stored in memory (``Tool`` records tagged smith)."""
    remember: bool = True
    """Store every tool that passes validation in memory (when the run has memory)."""
