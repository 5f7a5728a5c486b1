#!/bin/sh
# Hidden test of merge-contacts: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['email', 'name', 'phone'], ['ana@example.com', 'Ana Silva', '555-0101'], ['ben.okafor@example.com', 'Benjamin Okafor', '555-0202'], ['chen.wei@example.org', 'Chen Wei', '555-0203'], ['dana@example.net', 'Dana Kim-Lee', '555-0104'], ['eli@example.com', 'Eli Cohen', '555-0105'], ['fay@example.com', 'Fay Nguyen', ''], ['gus@example.com', 'Gus Alvarez', '555-0207'], ['hana@example.org', 'Hana Sato', '']]


def check():
    return read_csv("contacts.csv") == EXPECTED

verdict(check)
PY
