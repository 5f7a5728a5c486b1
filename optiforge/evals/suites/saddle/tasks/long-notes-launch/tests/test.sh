#!/bin/sh
# Hidden test of long-notes-launch: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import os

SLUG = {'x1': 'risk-log', 'y5': 'launch-steps', 'z3': 'media-kit', 'w8': 'exit-survey'}
TITLES = {'x1': 'Risk Log', 'y5': 'Launch Steps', 'z3': 'Media Kit', 'w8': 'Exit Survey'}
INDEX = '# Index\n- Exit Survey\n- Launch Steps\n- Media Kit\n- Risk Log\n'


def check():
    if os.path.exists("inbox") and os.listdir("inbox"):
        return False
    for k, s in SLUG.items():
        text = read_text(f"notes/{s}.txt")
        if text is None or not text.startswith("Title: " + TITLES[k] + "\n"):
            return False
    return read_text("notes/INDEX.md") == INDEX

verdict(check)
PY
