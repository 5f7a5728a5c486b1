"""Every error optiforge raises on purpose, as one tree.

The CLI turns any ``OptiforgeError`` into one readable line and a non-zero exit
(tracebacks only with ``--debug``)::

    OptiforgeError
    ├── ConfigError               bad config / CLI value / YAML key
    ├── InvalidTask               a benchmark task or instance that cannot be used
    ├── InvalidCandidate          a candidate (kernel, program, model) that fails validation
    ├── BudgetExceeded            a Budget limit (calls, tokens, USD, wall, sandbox seconds)
    ├── LLMError                  anything from the model provider, translated
    │   ├── LLMAuthError          bad/missing API key
    │   ├── LLMRateLimited        429 after all retries (carries retry_after)
    │   ├── LLMTimeout            the provider did not answer in time
    │   ├── LLMContextWindow      prompt longer than the model's window
    │   ├── LLMProviderError      5xx / connection trouble after all retries
    │   ├── LLMOffline            an LLM call was attempted with provider "offline"
    │   ├── StructuredOutputError the reply never parsed into the schema (after re-asks)
    │   └── CassetteMiss          replay found no recorded answer for a request
    ├── SandboxError              a sandbox could not run the command at all
    │   └── SandboxUnavailable    the back end is not available here (no Docker engine...)
    ├── MemoryStoreError          the experience-memory store failed or was misused
    ├── ToolError                 a tool is unknown or its arguments are invalid
    ├── RunRecordError            a run directory is missing/corrupt (e.g. bad --resume)
    └── SolverError               a numerical back end failed (infeasible, ill-posed ...)
"""

from __future__ import annotations


class OptiforgeError(Exception):
    """Base of every error optiforge raises deliberately."""


class ConfigError(OptiforgeError):
    """A configuration value, CLI option or YAML key is invalid."""


class InvalidTask(OptiforgeError):
    """A benchmark task, instance or problem description cannot be used."""


class InvalidCandidate(OptiforgeError):
    """A proposed candidate failed validation (reason in the message)."""


class BudgetExceeded(OptiforgeError):
    """A budget limit would be or was exceeded.

    ``limit`` names the exhausted resource (``calls``, ``tokens``, ``usd``,
    ``wall_s``, ``sandbox_s``, ``evaluations``).
    """

    def __init__(self, message: str, *, limit: str = "", used: float = 0.0, cap: float = 0.0):
        super().__init__(message)
        self.limit = limit
        self.used = used
        self.cap = cap


class LLMError(OptiforgeError):
    """The model provider failed; subclasses say how."""


class LLMAuthError(LLMError):
    """Authentication with the provider failed (missing or wrong API key)."""


class LLMRateLimited(LLMError):
    """The provider kept answering 429 after all retries."""

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class LLMTimeout(LLMError):
    """The provider did not answer within the timeout."""


class LLMContextWindow(LLMError):
    """The request does not fit the model's context window."""


class LLMProviderError(LLMError):
    """Server-side or connection failure after all retries."""


class LLMOffline(LLMError):
    """An LLM call was attempted while the provider is ``offline`` (no LLM)."""


class StructuredOutputError(LLMError):
    """The model's reply never validated against the requested schema."""


class CassetteMiss(LLMError):
    """Replay mode met a request that the cassette does not hold."""


class SandboxError(OptiforgeError):
    """A sandbox could not run the command (setup failure, not a failing command)."""


class SandboxUnavailable(SandboxError):
    """The requested sandbox back end is not available on this machine."""


class UnsafeSandbox(SandboxUnavailable):
    """The chosen sandbox does not meet the containment promise and unsafe runs were not allowed."""


class MemoryStoreError(OptiforgeError):
    """The experience-memory store failed or was used wrongly."""


class ToolError(OptiforgeError):
    """A tool is unknown, or its arguments do not validate."""


class RunRecordError(OptiforgeError):
    """A run directory is missing or unreadable."""


class SolverError(OptiforgeError):
    """A numerical back end could not solve the problem it was given."""
