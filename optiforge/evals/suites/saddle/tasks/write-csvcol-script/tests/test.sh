#!/bin/sh
# Hidden test of write-csvcol-script: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import os
import tempfile

CITIES = ['Lisbon, PT', 'Lagos', 'Shanghai', 'São Paulo', 'New York, NY']
CASES = [('id,"full name",score\n1,"Doe, Jane",88\n2,John Roe,91\n3,"O""Neil",75\n', 'full name', ['Doe, Jane', 'John Roe', 'O"Neil']), ('id,"full name",score\n1,"Doe, Jane",88\n2,John Roe,91\n3,"O""Neil",75\n', 'score', ['88', '91', '75']), ('a,b,c\n1,,3\n4,5,6\n', 'b', ['', '5']), ('x,y\n1,2\n', 'z', None), ('k\nonly\n', 'k', ['only'])]


def values(stdout):
    text = stdout.replace("\r\n", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []


def check():
    if lines("cities.txt") != CITIES:
        return False
    folder = tempfile.mkdtemp()
    for i, (text, column, want) in enumerate(CASES):
        path = os.path.join(folder, f"table{i}.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        res = run(["python3", "csvcol.py", path, column])
        if res is None:
            return False
        code, out, err = res
        if want is None:
            if code != 2 or out.strip() or not err.strip():
                return False
        elif code != 0 or values(out) != want:
            return False
    return True

verdict(check)
PY
