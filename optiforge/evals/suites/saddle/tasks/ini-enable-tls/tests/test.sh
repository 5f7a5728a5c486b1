#!/bin/sh
# Hidden test of ini-enable-tls: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import configparser

EXPECTED = {'server': {'host': '127.0.0.1', 'port': '8443', 'workers': '8', 'keepalive': '75'}, 'database': {'host': 'db.internal', 'port': '5432', 'name': 'shop', 'pool_size': '10'}, 'logging': {'level': 'warning', 'file': '/var/log/shop/app.log', 'rotate': 'daily'}, 'cache': {'backend': 'redis', 'ttl': '300'}, 'tls': {'cert': '/etc/shop/tls/server.crt', 'key': '/etc/shop/tls/server.key'}}


def check():
    text = read_text("app.ini")
    if text is None:
        return False
    cp = configparser.ConfigParser(interpolation=None)
    cp.read_string(text)
    return {s: dict(cp[s]) for s in cp.sections()} == EXPECTED and not cp.defaults()

verdict(check)
PY
