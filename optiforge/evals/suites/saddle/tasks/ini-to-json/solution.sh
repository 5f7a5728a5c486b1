# Reference solution of ini-to-json: one shell command a line, run from the work dir.
cat services.ini
python3 -c 'import configparser, json, re; c = configparser.ConfigParser(interpolation=None); c.read("services.ini"); conv = lambda v: int(v) if re.fullmatch("-?[0-9]+", v) else (v.lower() == "true") if v.lower() in ("true", "false") else v; json.dump({s: {k: conv(v) for k, v in c[s].items()} for s in c.sections()}, open("services.json", "w"), indent=2)'
cat services.json
