#!/bin/sh
# Hidden test of access-log-bad-clients: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['10.0.3.174', '10'], ['10.0.2.29', '9'], ['10.0.3.19', '7']]


def check():
    got = lines("bad_clients.txt")
    return got is not None and [line.split() for line in got] == EXPECTED

verdict(check)
PY
