#!/bin/sh
# Hidden test of verify-checksums: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = ['app-1.2.0.zip', 'patch-2.diff', 'patch-3.diff']


def check():
    return lines("bad_files.txt") == EXPECTED

verdict(check)
PY
