#!/bin/sh
# Hidden test of long-release-tally: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import re

PKG, NEW, OLD = 'tally', '5.1.1', '5.1.0'
LINE = 'tally 5.1.1 16ebc84fa16a'


def check():
    v = read_text("VERSION")
    init = read_text(PKG + "/" + PKG + "_version.py")
    cfg = read_text("setup.cfg")
    log = read_text("CHANGELOG.md")
    if None in (v, init, cfg, log) or v.strip() != NEW:
        return False
    if f'__version__ = "{NEW}"' not in init or OLD in init:
        return False
    if re.search(r"^version = (.+)$", cfg, re.M).group(1).strip() != NEW or OLD in cfg:
        return False
    if log.splitlines()[0] != "## " + NEW or "## " + OLD not in log:
        return False
    man = read_text("dist/manifest.txt")
    built = read_text("build.log")
    return man is not None and man.strip() == LINE and built is not None and built.strip() == "build ok " + LINE

verdict(check)
PY
