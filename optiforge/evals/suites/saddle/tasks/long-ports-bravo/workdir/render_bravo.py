"""Renders gateway.conf from gateway.tmpl with each service's PORT from deploy/<service>.env."""

import re
from pathlib import Path

env = {}
for svc in ("api", "web", "auth", "metrics"):
    text = Path(f"deploy/{svc}.env").read_text()
    env[svc] = int(re.findall(r"^PORT=(\d+)$", text, re.M)[0])
out = Path("gateway.tmpl").read_text()
for svc, port in env.items():
    out = out.replace("{{" + svc + "}}", str(port))
Path("gateway.conf").write_text(out)
print("rendered", len(env), "services")
