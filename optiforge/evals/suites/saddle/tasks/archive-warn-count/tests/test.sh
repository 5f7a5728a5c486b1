#!/bin/sh
# Hidden test of archive-warn-count: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['logs/2024-03-01.log', '16'], ['logs/2024-03-02.log', '10'], ['logs/2024-03-03.log', '0'], ['logs/old/2024-02-27.log', '20'], ['logs/old/2024-02-28.log', '13']]


def check():
    got = lines("warn_counts.txt")
    return got is not None and [line.split() for line in got] == EXPECTED

verdict(check)
PY
