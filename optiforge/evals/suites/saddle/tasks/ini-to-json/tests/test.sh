#!/bin/sh
# Hidden test of ini-to-json: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = {'web': {'host': '0.0.0.0', 'port': 8080, 'debug': False, 'workers': 4, 'maxconn': 100}, 'queue': {'url': 'amqp://mq.internal:5672/jobs', 'prefetch': 20, 'durable': True, 'retry_delay': -1, 'version': '2.0'}, 'cache': {'ttl': 3600, 'ratio': '0.75', 'enabled': True, 'name': 'blue-7', 'size': '12mb'}}


def check():
    got = read_json("services.json")

    def same(a, b):
        if isinstance(b, dict):
            return isinstance(a, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in b)
        return type(a) is type(b) and a == b

    return same(got, EXPECTED)

verdict(check)
PY
