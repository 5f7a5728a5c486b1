#!/bin/sh
# Hidden test of json-feature-flags: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = {'service': 'checkout', 'version': '1.5.0', 'features': {'beta_search': True, 'dark_mode': False, 'beta_cart_v2': True, 'legacy_export': True, 'beta_pay': True, 'betamax_player': False}, 'database': {'host': 'db.internal', 'port': 5432, 'replicas': [{'host': 'r1.internal'}, {'host': 'r2.internal', 'weight': 2}]}, 'limits': {'rps': 200, 'burst': 50}}


def check():
    return read_json("config.json") == EXPECTED

verdict(check)
PY
