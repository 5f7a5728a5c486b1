"""Builds the release manifest: checks that every version agrees, writes dist/manifest.txt."""

import hashlib
import os
import re
import sys
from pathlib import Path

PKG = "quill"
version = Path("VERSION").read_text().strip()
init = re.findall(r'__version__ = "([^"]+)"', Path(PKG + "/" + PKG + "_version.py").read_text())[0]
cfg = re.findall(r"^version = (.+)$", Path("setup.cfg").read_text(), re.M)[0].strip()
top = Path("CHANGELOG.md").read_text().splitlines()[0]
if len({version, init, cfg}) != 1:
    sys.exit(f"build failed: versions disagree: VERSION {version}, module {init}, setup.cfg {cfg}")
if top != "## " + version:
    sys.exit(f"build failed: CHANGELOG.md must start with '## {version}', not {top!r}")
os.makedirs("dist", exist_ok=True)
digest = hashlib.sha256((version + PKG).encode()).hexdigest()[:12]
with open("dist/manifest.txt", "w") as f:
    f.write(f"{PKG} {version} {digest}\n")
print(f"build ok {PKG} {version} {digest}")
