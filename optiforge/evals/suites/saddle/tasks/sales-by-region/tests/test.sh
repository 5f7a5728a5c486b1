#!/bin/sh
# Hidden test of sales-by-region: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['Central', '6109.78'], ['East', '4779.72'], ['North', '9967.69'], ['South', '6428.31'], ['West', '2033.70']]


def check():
    rows = read_csv("region_revenue.csv")
    if not rows or rows[0] != ["region", "revenue"] or len(rows) != len(EXPECTED) + 1:
        return False
    return all(
        len(got) == 2 and got[0] == region and close(got[1], float(value), 0.006)
        for got, (region, value) in zip(rows[1:], EXPECTED)
    )

verdict(check)
PY
