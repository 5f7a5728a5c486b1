# Reference solution of dedupe-events: one shell command a line, run from the work dir.
head -n 5 events.jsonl
python3 -c 'import json; best = {}; [best.__setitem__(e["id"], e) for e in (json.loads(line) for line in open("events.jsonl") if line.strip()) if e["id"] not in best or e["updated_at"] > best[e["id"]]["updated_at"]]; open("events_clean.jsonl", "w").write("".join(json.dumps(best[k]) + "\n" for k in sorted(best)))'
wc -l events_clean.jsonl
