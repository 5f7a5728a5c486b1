# Reference solution of json-feature-flags: one shell command a line, run from the work dir.
cat config.json
python3 -c 'import json; d = json.load(open("config.json")); f = lambda o: {k: f(v) for k, v in o.items() if k != "debug"} if isinstance(o, dict) else [f(x) for x in o] if isinstance(o, list) else o; d = f(d); d["version"] = "1.5.0"; d["features"] = {k: (True if k.startswith("beta_") else v) for k, v in d["features"].items()}; json.dump(d, open("config.json", "w"), indent=2)'
cat config.json
