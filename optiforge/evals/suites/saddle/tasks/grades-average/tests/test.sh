#!/bin/sh
# Hidden test of grades-average: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['Algebra', 12, 65.625], ['Biology', 9, 72.38888888888889], ['Chemistry', 13, 69.6923076923077], ['History', 12, 77.29166666666667], ['art', 12, 64.20833333333333]]


def check():
    rows = read_csv("course_stats.csv")
    if not rows or rows[0] != ["course", "students", "average"] or len(rows) != len(EXPECTED) + 1:
        return False
    for got, (course, n, mean) in zip(rows[1:], EXPECTED):
        if len(got) != 3 or got[0] != course or got[1] != str(n):
            return False
        if not close(got[2], mean, 0.05 + 1e-9) or len(got[2].partition(".")[2]) > 1:
            return False
    return True

verdict(check)
PY
