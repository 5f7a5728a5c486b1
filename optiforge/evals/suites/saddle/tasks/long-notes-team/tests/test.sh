#!/bin/sh
# Hidden test of long-notes-team: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import os

SLUG = {'a7': 'team-charter', 'b2': 'oncall-guide', 'c9': 'budget-draft', 'd4': 'vendor-list'}
TITLES = {'a7': 'Team Charter', 'b2': 'Oncall Guide', 'c9': 'Budget Draft', 'd4': 'Vendor List'}
INDEX = '# Index\n- Budget Draft\n- Oncall Guide\n- Team Charter\n- Vendor List\n'


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
