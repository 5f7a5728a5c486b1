#!/bin/sh
# Hidden test of fix-invoice-bug: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import os
import tempfile

MAIN = [('Acme Corp', 35.91), ('Globex', 346.4), ('Initech', 715.5), ('Umbrella', 355.31), ('zeta labs', 1154.27), ('TOTAL', 2607.39)]
HIDDEN = [('customer,qty,unit_price\nUmbrella,2,30.50\nGlobex,3,37.99\nzeta labs,5,76.99\nAcme Corp,1,23.25\nGlobex,1,49.05\nAcme Corp,12,77.00\nInitech,11,7.50\nUmbrella,6,55.05\nInitech,12,13.05\n', [('Acme Corp', 947.25), ('Globex', 163.02), ('Initech', 239.1), ('Umbrella', 391.3), ('zeta labs', 384.95), ('TOTAL', 2125.62)]), ('customer,qty,unit_price\n"Smith, J",8,5.00\n', [('Smith, J', 40.0), ('TOTAL', 40.0)]), ('customer,qty,unit_price\nInitech,4,46.99\nAcme Corp,4,33.05\nGlobex,5,6.00\nGlobex,3,16.05\nInitech,1,61.05\nInitech,3,43.00\nAcme Corp,3,55.00\nAcme Corp,7,29.50\n"Smith, J",7,71.25\nInitech,10,12.25\n"Smith, J",9,15.99\nInitech,2,47.25\nGlobex,5,2.50\nAcme Corp,7,63.99\nGlobex,6,72.50\nInitech,2,37.99\nzeta labs,11,52.25\n"Smith, J",12,60.25\nUmbrella,12,1.50\nAcme Corp,4,55.50\n', [('Acme Corp', 1173.63), ('Globex', 525.65), ('Initech', 670.99), ('Smith, J', 1365.66), ('Umbrella', 18.0), ('zeta labs', 574.75), ('TOTAL', 4328.68)])]


def parse(text):
    out = []
    for line in text.replace("\r\n", "\n").strip().split("\n"):
        name, sep, value = line.rpartition(": ")
        if not sep:
            return None
        out.append((name, float(value)))
    return out


def same(got, want):
    return (got is not None and len(got) == len(want)
            and all(a[0] == b[0] and abs(a[1] - b[1]) <= 0.006 for a, b in zip(got, want)))


def check():
    text = read_text("invoice.txt")
    if text is None or not same(parse(text), MAIN):
        return False
    folder = tempfile.mkdtemp()
    for i, (data, want) in enumerate(HIDDEN):
        path = os.path.join(folder, f"orders{i}.csv")
        with open(path, "w") as f:
            f.write(data)
        res = run(["python3", "invoice.py", path])
        if res is None or res[0] != 0 or not same(parse(res[1]), want):
            return False
    return True

verdict(check)
PY
