#!/bin/sh
# Hidden test of dedupe-events: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${0%/*}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

import json

EXPECTED = [{'id': 'evt-1', 'updated_at': '2024-03-08T06:52:05Z', 'status': 'shipped', 'amount': 133.83}, {'id': 'evt-10', 'updated_at': '2024-03-07T01:51:10Z', 'status': 'paid', 'amount': 378.67}, {'id': 'evt-11', 'updated_at': '2024-03-09T09:54:10Z', 'status': 'paid', 'amount': 421.67}, {'id': 'evt-12', 'updated_at': '2024-03-04T12:10:41Z', 'status': 'shipped', 'amount': 87.01}, {'id': 'evt-13', 'updated_at': '2024-03-02T12:53:26Z', 'status': 'refunded', 'amount': 470.26}, {'id': 'evt-14', 'updated_at': '2024-03-05T22:01:42Z', 'status': 'refunded', 'amount': 451.57}, {'id': 'evt-15', 'updated_at': '2024-03-04T06:33:26Z', 'status': 'shipped', 'amount': 395.81}, {'id': 'evt-16', 'updated_at': '2024-03-05T10:25:33Z', 'status': 'created', 'amount': 198.24}, {'id': 'evt-17', 'updated_at': '2024-03-04T05:54:04Z', 'status': 'paid', 'amount': 106.64}, {'id': 'evt-18', 'updated_at': '2024-03-09T23:06:16Z', 'status': 'shipped', 'amount': 204.37}, {'id': 'evt-19', 'updated_at': '2024-03-01T10:38:57Z', 'status': 'shipped', 'amount': 145.21}, {'id': 'evt-2', 'updated_at': '2024-03-09T03:32:01Z', 'status': 'paid', 'amount': 165.53}, {'id': 'evt-20', 'updated_at': '2024-03-01T21:28:19Z', 'status': 'created', 'amount': 422.86}, {'id': 'evt-21', 'updated_at': '2024-03-08T05:36:04Z', 'status': 'created', 'amount': 127.95}, {'id': 'evt-22', 'updated_at': '2024-03-06T07:27:23Z', 'status': 'created', 'amount': 347.36}, {'id': 'evt-23', 'updated_at': '2024-03-07T21:46:51Z', 'status': 'refunded', 'amount': 217.22}, {'id': 'evt-24', 'updated_at': '2024-03-01T01:20:13Z', 'status': 'created', 'amount': 74.07}, {'id': 'evt-25', 'updated_at': '2024-03-06T00:44:10Z', 'status': 'created', 'amount': 130.43}, {'id': 'evt-26', 'updated_at': '2024-03-04T16:58:47Z', 'status': 'refunded', 'amount': 300.56}, {'id': 'evt-27', 'updated_at': '2024-03-08T22:36:21Z', 'status': 'created', 'amount': 5.59}, {'id': 'evt-28', 'updated_at': '2024-03-07T15:08:00Z', 'status': 'shipped', 'amount': 152.57}, {'id': 'evt-29', 'updated_at': '2024-03-07T12:30:41Z', 'status': 'created', 'amount': 146.13}, {'id': 'evt-3', 'updated_at': '2024-03-08T19:51:28Z', 'status': 'refunded', 'amount': 85.71}, {'id': 'evt-30', 'updated_at': '2024-03-06T07:08:14Z', 'status': 'refunded', 'amount': 48.8}, {'id': 'evt-4', 'updated_at': '2024-03-09T02:53:39Z', 'status': 'refunded', 'amount': 171.54}, {'id': 'evt-5', 'updated_at': '2024-03-02T00:28:44Z', 'status': 'refunded', 'amount': 231.09}, {'id': 'evt-6', 'updated_at': '2024-03-09T17:33:17Z', 'status': 'created', 'amount': 156.31}, {'id': 'evt-7', 'updated_at': '2024-03-09T04:58:55Z', 'status': 'refunded', 'amount': 20.88}, {'id': 'evt-8', 'updated_at': '2024-03-02T20:18:24Z', 'status': 'refunded', 'amount': 32.55}, {'id': 'evt-9', 'updated_at': '2024-03-09T04:16:45Z', 'status': 'paid', 'amount': 442.22}]


def check():
    got = lines("events_clean.jsonl")
    return got is not None and [json.loads(line) for line in got if line.strip()] == EXPECTED

verdict(check)
PY
