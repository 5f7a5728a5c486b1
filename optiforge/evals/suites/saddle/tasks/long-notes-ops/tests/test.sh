#!/bin/sh
# Hidden test of long-notes-ops: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import os

SLUG = {'n1': 'backup-plan', 'n2': 'disk-layout', 'n3': 'alert-rules', 'n4': 'cost-review'}
TITLES = {'n1': 'Backup Plan', 'n2': 'Disk Layout', 'n3': 'Alert Rules', 'n4': 'Cost Review'}
INDEX = '# Index\n- Alert Rules\n- Backup Plan\n- Cost Review\n- Disk Layout\n'


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
