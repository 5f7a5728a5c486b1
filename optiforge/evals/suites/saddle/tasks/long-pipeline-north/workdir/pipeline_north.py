"""Sales pipeline: `clean` (raw/*.csv -> work/clean.csv), `aggregate` (-> work/totals.csv),
`report --min N` (-> the items whose total is at least N, one `item,total` a line, to stdout)."""

import csv
import glob
import os
import sys
from pathlib import Path

stage = sys.argv[1]
os.makedirs("work", exist_ok=True)
if stage == "clean":
    rows = []
    for path in sorted(glob.glob("raw/*.csv")):
        for r in csv.DictReader(Path(path).read_text().splitlines()):
            rows.append((r["item"], int(r["units"])))
    with open("work/clean.csv", "w") as f:
        f.write("item,units\n" + "".join(f"{i},{u}\n" for i, u in rows))
elif stage == "aggregate":
    tot: dict[str, int] = {}
    for r in csv.DictReader(Path("work/clean.csv").read_text().splitlines()):
        tot[r["item"]] = tot.get(r["item"], 0) + int(r["units"])
    with open("work/totals.csv", "w") as f:
        f.write("item,total\n" + "".join(f"{i},{t}\n" for i, t in sorted(tot.items())))
elif stage == "report":
    lim = int(sys.argv[sys.argv.index("--min") + 1])
    for r in csv.DictReader(Path("work/totals.csv").read_text().splitlines()):
        if int(r["total"]) >= lim:
            print(f"{r['item']},{r['total']}")
