#!/bin/sh
# Hidden test of long-ports-alpha: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

PORTS = {'api': 8081, 'web': 8090, 'auth': 9443, 'metrics': 9102}
CONF = 'upstream api { server 127.0.0.1:8081; }\nupstream web { server 127.0.0.1:8090; }\nupstream auth { server 127.0.0.1:9443; }\nupstream metrics { server 127.0.0.1:9102; }\n'


def check():
    for svc, port in PORTS.items():
        env = read_text(f"deploy/{svc}.env")
        if env is None or env.splitlines() != [f"SERVICE={svc}", f"PORT={port}", "LOG_LEVEL=info"]:
            return False
    c = read_text("check.txt")
    return read_text("gateway.conf") == CONF and c is not None and c.strip() == "check ok " + str(sum(PORTS.values()))

verdict(check)
PY
