#!/bin/sh
# Hidden test of flatten-by-extension: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

EXPECTED = {'sorted/pdf/report.PDF': 'aab3dfc9051dbc4c42b03db9', 'sorted/csv/data.csv': '1ae4915115ab1fe60f99d2764091df532a', 'sorted/noext/notes': '2e8994d99b737e4a55b06354513bfc30c589b087', 'sorted/gz/archive.tar.gz': 'a45a187673da6bb59c8b11599d96c7dec5ec2200567e0ff25a4a0320b1c8f5', 'sorted/jpg/photo.JPG': '3fcf35c681990cb3a9fb35dc2c92a454e3c28951e4cd110c22477bba410ac4cfea70a0e5362b7d', 'sorted/jpg/photo2.jpg': '70cb0a6df7d32cf59f47afc609b9', 'sorted/txt/my file.txt': 'ab61a26f85769dd4efc6196eda86ae2cc0dc2cf05113', 'sorted/noext/Makefile': '15c7e90c2edfb99d17c955f72a843bea7c3f', 'sorted/sh/script.sh': '426265565dbd07f30b86ee52ede25008e07ff22e147d', 'sorted/txt/readme.TXT': 'fef4f00788387f02f5ff956a777422', 'sorted/env/.env': 'a972e043d3ae24a02757ed2ac7e1d40e7b0da5c18f1e244a951a', 'sorted/csv/old.data.csv': '64fef376022453fd406b55c57f420c6d21ef3a8da8fa90e670f8642d8ff5c085d14d445d14797b'}


def check():
    got = {rel: data.hex() for rel, data in files().items()
           if rel.startswith(("mess/", "sorted/"))}
    return got == EXPECTED

verdict(check)
PY
