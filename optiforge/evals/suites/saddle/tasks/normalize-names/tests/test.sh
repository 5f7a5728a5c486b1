#!/bin/sh
# Hidden test of normalize-names: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = ['Ada Lovelace', 'Alan Turing', 'Barbara Liskov', 'Dennis Ritchie', 'Donald Knuth', 'Edsger Dijkstra', 'Frances Allen', 'Grace Hopper', 'John Mccarthy', 'Ken Thompson', 'Linus Torvalds', 'Margaret Hamilton', 'Mary-jane Watson']


def check():
    return lines("clean_names.txt") == EXPECTED

verdict(check)
PY
