"""``optiforge run --resume``: say which of the command's flags the resumed run ignores.

A resumed run keeps its recorded settings (``harness.resume``): a flag given with
``--resume`` that would change them is named in one warning line instead of being
dropped silently; the spending caps are honoured.
"""

from __future__ import annotations

from typing import Any

# the run command's parameters that a resume never reads (they pick the run, or are
# checked whatever the run)
_NOT_SETTINGS = {"agent", "resume", "force_restart", "unsafe_sandbox", "debug", "help"}
# parameter -> the recorded setting it would change (None: the task, the directory, the
# agent options, which are recorded elsewhere in the manifest)
_RECORDED_AS = {"bench": None, "out": None, "config": None, "overrides": None}


_SHORT = {"-m": "model", "--set": "overrides"}


def passed_on_command_line(argv: list[str] | None = None) -> list[str]:
    """Parameter names of the options on the command line (``sys.argv`` by default).

    Read from the arguments, not from click's parameter sources: typer runs the command
    outside an active click context.
    """
    import sys

    names = []
    for arg in sys.argv[1:] if argv is None else argv:
        flag = arg.split("=", 1)[0]
        if flag in _SHORT:
            names.append(_SHORT[flag])
        elif flag.startswith("--") and len(flag) > 2:
            names.append(flag[2:].replace("-", "_"))
    return list(dict.fromkeys(names))


def ignored_on_resume(passed: list[str], recorded: dict[str, Any]) -> list[str]:
    """``--flag (kept: value)`` for each passed parameter a resume does not honour."""
    from optiforge.harness.resume import RESUMABLE

    out = []
    for name in passed:
        if name in _NOT_SETTINGS or name in RESUMABLE:
            continue
        flag = "--set" if name == "overrides" else "--" + name.replace("_", "-")
        if name in _RECORDED_AS or name not in recorded:
            out.append(flag)
        else:
            out.append(f"{flag} (kept: {recorded.get(name)})")
    return out


def resume_warning(recorded: dict[str, Any]) -> str | None:
    """The one warning line for flags a resume ignores (None: there are none)."""
    from optiforge.harness.resume import RESUMABLE

    ignored = ignored_on_resume(passed_on_command_line(), recorded)
    if not ignored:
        return None
    caps = ", ".join("--" + k.replace("_", "-") for k in RESUMABLE if k != "max_sandbox_s")
    return (
        f"--resume continues the recorded run: ignored {', '.join(ignored)} "
        f"(a resume honours only {caps})"
    )
