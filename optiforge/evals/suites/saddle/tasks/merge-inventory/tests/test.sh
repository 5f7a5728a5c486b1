#!/bin/sh
# Hidden test of merge-inventory: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['sku', 'name', 'qty'], ['A-1', 'Bolt, M6', '10'], ['A-10', 'Bolt, M8', '48'], ['B-12', 'Hinge', '27'], ['B-2', 'Washer', '28'], ['C-3', 'Bracket', '22'], ['C-30', 'Spring', '27'], ['D-4', 'Gasket', '37']]


def check():
    return read_csv("inventory_new.csv") == EXPECTED

verdict(check)
PY
