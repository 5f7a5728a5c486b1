#!/bin/sh
# Hidden test of log-error-summary: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['api', '12'], ['db', '9'], ['worker', '9'], ['billing', '7'], ['auth', '6'], ['cache', '3'], ['db-replica', '3']]


def check():
    got = lines("error_counts.txt")
    return got is not None and [line.split() for line in got] == EXPECTED

verdict(check)
PY
