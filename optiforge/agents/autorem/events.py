"""The event kinds AutoREM writes to a run's ``events.jsonl``, declared once.

The agent writes them; the harness reads the attempt event through ``SPEC.attempt_event``
(fields: ``optiforge.agents.kit.events.AttemptEvent``), never by this name.
"""

ATTEMPT_EVENT = "autorem_attempt"
"""One code attempt: task, attempt, origin, passed, reasons (the first three), tokens."""
