"""Checks gateway.conf: every upstream port must be set (non-zero) and unique."""

import re
import sys
from pathlib import Path

ports = [int(p) for p in re.findall(r"server 127.0.0.1:(\d+);", Path("gateway.conf").read_text())]
if len(ports) != 4 or 0 in ports or len(set(ports)) != 4:
    sys.exit("check failed: ports " + str(ports))
print("check ok", sum(ports))
