"""Runs one harness code hook inside a sandbox run (read as data, given as ``python -I -S -c``).

argv[1]: the JSON list of builtin names the hook may use. The work dir holds
``hook_input.json`` (``{"source", "obs"}``). The hook runs with only those builtins (no
``__import__``, ``open``, ``getattr``...); its source has already passed the parent's AST
allow-list. The report is one line after ``$HOOK_MARK``: ``{"note": str | None}`` or
``{"error": "..."}``. Standard library only.
"""

import builtins
import json
import os
import sys


def main() -> None:
    mark = os.environ.get("HOOK_MARK", "@@hook@@")
    report: dict[str, object]
    try:
        names = json.loads(sys.argv[1])
        with open("hook_input.json") as f:
            data = json.load(f)
        safe = {n: getattr(builtins, n) for n in names if hasattr(builtins, n)}
        ns: dict = {"__builtins__": safe}
        exec(compile(data["source"], "<hook>", "exec"), ns)  # noqa: S102  # trusted: runs inside the sandbox, on a checked source
        note = ns["hook"](data["obs"])
        if note is not None and not isinstance(note, str):
            report = {"error": f"the hook returned a {type(note).__name__}, not a str or None"}
        else:
            report = {"note": note}
    except BaseException as e:  # a hook's crash is a report, never the runner's
        report = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    sys.stdout.write("\n" + mark + json.dumps(report) + "\n")
    sys.stdout.flush()


main()
