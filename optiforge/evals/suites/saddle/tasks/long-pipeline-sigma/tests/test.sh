#!/bin/sh
# Hidden test of long-pipeline-sigma: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

WANT = ['pulley,135', 'rivet,122']
TOTALS = [('pulley', 135), ('rivet', 122), ('spring', 113)]


def check():
    rep = lines("report.txt")
    tot = read_csv("work/totals.csv")
    if rep is None or tot is None:
        return False
    return [ln for ln in rep if ln] == WANT and [tuple([r[0], int(r[1])]) for r in tot[1:]] == [tuple(t) for t in TOTALS]

verdict(check)
PY
