#!/bin/sh
# Hidden test of todo-report: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['file', 'line', 'owner'], ['src/app/main.rb', '3', 'alice'], ['src/app/main.rb', '6', 'bob'], ['src/app/util.go', '4', 'carol'], ['src/app/util.go', '9', 'alice'], ['src/scripts/deploy.sh', '3', 'hank'], ['src/scripts/deploy.sh', '6', 'alice'], ['src/web/app.js', '1', 'bob'], ['src/web/app.js', '7', 'gina'], ['src/web/lib/format.js', '2', 'carol']]


def check():
    return read_csv("todos.csv") == EXPECTED

verdict(check)
PY
