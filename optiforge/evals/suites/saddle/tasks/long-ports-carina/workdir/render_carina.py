"""Renders gateway.conf from gateway.tmpl with each service's PORT from deploy/<service>.env."""
import re

env = {}
for svc in ("api", "web", "auth", "metrics"):
    text = open(f"deploy/{svc}.env").read()
    env[svc] = int(re.search(r"^PORT=(\d+)$", text, re.M).group(1))
out = open("gateway.tmpl").read()
for svc, port in env.items():
    out = out.replace("{{" + svc + "}}", str(port))
open("gateway.conf", "w").write(out)
print("rendered", len(env), "services")
