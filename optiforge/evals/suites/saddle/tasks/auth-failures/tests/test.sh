#!/bin/sh
# Hidden test of auth-failures: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['198.51.100.14', '17'], ['198.51.100.69', '14'], ['203.0.113.231', '10'], ['198.51.100.23', '9'], ['203.0.113.215', '9'], ['203.0.113.28', '8'], ['198.51.100.105', '5'], ['198.51.100.197', '3']]


def check():
    got = lines("blocked_ips.txt")
    return got is not None and [line.split() for line in got] == EXPECTED

verdict(check)
PY
