#!/bin/sh
# Hidden test of normalize-whitespace: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = {'docs/intro.txt': '57656c636f6d6520746f207468652067756964652e0a497420202020686173207461627320202020696e736964652e0a0a456e642e0a', 'docs/setup.txt': '0a0a5374657020313a20202020696e7374616c6c0a5374657020323a2020202072756e0a20202020696e64656e746564206c696e650a6c617374206c696e6520776974686f7574206e65776c696e650a', 'docs/sub/faq.txt': '513a205768793f0a413a20202020426563617573652e0a0a513a20486f773f0a413a204c696b6520746869732e0a', 'docs/sub/clean.txt': '616c726561647920636c65616e0a', 'docs/keep.md': '4d61726b646f776e20200d0a09737461797320617320697420697320200d0a', 'docs/sub/notes.md': '6e6f74657309200a0a0a', 'docs/data.csv': '612c62200d0a312c32090d0a'}


def check():
    got = {rel: data.hex() for rel, data in files().items() if rel.startswith("docs/")}
    return got == EXPECTED

verdict(check)
PY
