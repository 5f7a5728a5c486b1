#!/bin/sh
# Hidden test of checksum-manifest: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = [['6c2b5948f0002c4049332d74eb76049c', 'README'], ['e722be9e123050178f7ae714199805e6', 'VERSION'], ['8365af54b352f59de1a6164c94eede74', 'bin/tool'], ['2cfa5849200b5cfa29344a37fbff5c18', 'bin/tool-helper'], ['f8e9f0a9c99188ffdb0476b098d97768', 'docs/CHANGELOG.md'], ['26f63211c7cabc0e5b8f6506cb624f73', 'docs/user guide.txt'], ['c9e3472420e9adb48ffad1523bf8dd8c', 'lib/libcore.so'], ['4e46b25af8767ebbbd460c9b32fa253d', 'lib/plugins/a.so'], ['500beb98be017605d36a77c81f49a20a', 'lib/plugins/b.so']]


def check():
    got = lines("MANIFEST.md5")
    if got is None or len(got) != len(EXPECTED):
        return False
    for line, (digest, path) in zip(got, EXPECTED):
        if line[:32].lower() != digest or line[32:34] not in ("  ", " *") or line[34:] != path:
            return False
    return True

verdict(check)
PY
