#!/bin/sh
# Hidden test of fix-median-bug: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import os
import tempfile

DATA = [12.0, 29.578333333333333, 29.744999999999997]
HIDDEN = [('# batch 0\n43.45\n7.96\n23.07\n\n66.53\n# batch 1\n39.83\n7.54\n44.69\n7.41\n# batch 2\n\n45.58\n', [9.0, 31.78444444444444, 39.83]), ('# batch 0\n24.42\n35.28\n20.04\n\n41.3\n# batch 1\n29.48\n-9.98\n41.96\n25.44\n# batch 2\n\n26.18\n64.19\n', [10.0, 29.831000000000007, 27.83]), ('41.15\n30.04\n-19.09\n\n42.86\n13.62\n40.15\n', [6.0, 24.78833333333333, 35.095]), ('-19.4\n', [1.0, -19.4, -19.4]), ('# batch 0\n32.46\n26.47\n', [2.0, 29.465, 29.465])]


def parse(text):
    out = {}
    for line in text.replace("\r\n", "\n").strip().split("\n"):
        key, _, value = line.partition("=")
        out[key.strip()] = float(value)
    if set(out) != {"count", "mean", "median"}:
        return None
    return [out["count"], out["mean"], out["median"]]


def same(got, want):
    return got is not None and all(abs(a - b) <= 0.0015 for a, b in zip(got, want))


def check():
    text = read_text("stats.txt")
    if text is None or not same(parse(text), DATA):
        return False
    folder = tempfile.mkdtemp()
    for i, (data, want) in enumerate(HIDDEN):
        path = os.path.join(folder, f"numbers{i}.txt")
        with open(path, "w") as f:
            f.write(data)
        res = run(["python3", "stats.py", path])
        if res is None or res[0] != 0 or not same(parse(res[1]), want):
            return False
    return True

verdict(check)
PY
