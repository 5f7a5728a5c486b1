"""Writes the saddle suite's long-horizon tasks (splits ``long-dev`` / ``long-heldout``).

    python benchmarks/make_saddle_long.py      # rewrites optiforge/evals/suites/saddle/tasks/long-*
    ruff format optiforge/evals/suites/saddle/tasks   # the project formats the work dirs' .py

Four task families, three variants each (different files, values and names; variants 0-1
go to ``long-dev``, variant 2 to ``long-heldout``). Every reference solution is 10-14 shell
commands and carries state across steps: a value read in one file is needed several
commands later (a version, ports, a threshold, titles), several files are edited, and a
build or check program is run after the edits (build-then-test). Each task's hidden test
re-derives the expected outcome from constants written here, never from the agent's files.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "optiforge/evals/suites/saddle/tasks"
HEAD = """#!/bin/sh
# Hidden test of {name}: runs in the final work dir, writes 1 or 0 to reward.txt.
exec python3 -I - "${{0%/*}}" <<'PY'
import sys

sys.path.append(sys.argv[1])
from checklib import close, files, lines, read_bytes, read_csv, read_json, read_text, run, verdict

"""
TAIL = "\nverdict(check)\nPY\n"


def write(name: str, split: str, category: str, instruction: str, work: dict[str, str],
          solution: list[str], test_body: str) -> None:  # fmt: skip
    d = ROOT / name
    shutil.rmtree(d, ignore_errors=True)
    (d / "tests").mkdir(parents=True)
    for rel, text in work.items():
        p = d / "workdir" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    assert 10 <= len(solution) <= 16, (name, len(solution))
    meta = {"instruction": instruction, "split": split, "category": category, "difficulty": 3,
            "timeout_s": 120, "steps_hint": len(solution)}  # fmt: skip
    (d / "task.json").write_text(json.dumps(meta, indent=2) + "\n")
    (d / "solution.sh").write_text(
        f"# Reference solution of {name}: one shell command a line, run from the work dir.\n"
        + "\n".join(solution) + "\n"
    )  # fmt: skip
    (d / "tests" / "test.sh").write_text(HEAD.format(name=name) + test_body + TAIL)


# --- 1. release: bump a version in three files, changelog, build --------------------------

RELEASES = [("orbit", "2.7.4", "Fix the retry back-off."), ("quill", "0.9.12", "Faster parser."),
            ("tally", "5.1.0", "New CSV export.")]  # fmt: skip
BUILD = '''"""Builds the release manifest: checks that every version agrees, writes dist/manifest.txt."""
import hashlib
import os
import re
import sys
from pathlib import Path

PKG = "{pkg}"
version = Path("VERSION").read_text().strip()
init = re.findall(r'__version__ = "([^"]+)"', Path(PKG + "/" + PKG + "_version.py").read_text())[0]
cfg = re.findall(r"^version = (.+)$", Path("setup.cfg").read_text(), re.M)[0].strip()
top = Path("CHANGELOG.md").read_text().splitlines()[0]
if len({{version, init, cfg}}) != 1:
    sys.exit(f"build failed: versions disagree: VERSION {{version}}, module {{init}}, setup.cfg {{cfg}}")
if top != "## " + version:
    sys.exit(f"build failed: CHANGELOG.md must start with '## {{version}}', not {{top!r}}")
os.makedirs("dist", exist_ok=True)
digest = hashlib.sha256((version + PKG).encode()).hexdigest()[:12]
with open("dist/manifest.txt", "w") as f:
    f.write(f"{{PKG}} {{version}} {{digest}}\\n")
print(f"build ok {{PKG}} {{version}} {{digest}}")
'''


def release(i: int) -> None:
    pkg, old, note = RELEASES[i]
    a, b, c = old.split(".")
    new = f"{a}.{b}.{int(c) + 1}"
    name = f"long-release-{pkg}"
    work = {
        "VERSION": old + "\n",
        f"{pkg}/{pkg}_version.py": f'"""The {pkg} package."""\n\n__version__ = "{old}"\n',
        "setup.cfg": f"[metadata]\nname = {pkg}\nversion = {old}\nlicense = MIT\n",
        "CHANGELOG.md": f"## {old}\n\n- {note}\n",
        f"build_{pkg}.py": BUILD.format(pkg=pkg),
        "NOTES.txt": "Release checklist: bump, changelog, build.\n",
    }
    sol = ["cat NOTES.txt", "cat VERSION", f"cat {pkg}/{pkg}_version.py", "cat setup.cfg",
           "head -n 3 CHANGELOG.md", f"sed -i 's/^{re.escape(old)}$/{new}/' VERSION",
           f"sed -i 's/\"{re.escape(old)}\"/\"{new}\"/' {pkg}/{pkg}_version.py",
           f"sed -i 's/^version = {re.escape(old)}$/version = {new}/' setup.cfg",
           f"sed -i '1i ## {new}\\n' CHANGELOG.md", f"python3 build_{pkg}.py > build.log",
           "cat build.log", "cat dist/manifest.txt"]  # fmt: skip
    import hashlib

    digest = hashlib.sha256((new + pkg).encode()).hexdigest()[:12]
    body = f"""import re

PKG, NEW, OLD = {pkg!r}, {new!r}, {old!r}
LINE = {f"{pkg} {new} {digest}"!r}


def check():
    v = read_text("VERSION")
    init = read_text(PKG + "/" + PKG + "_version.py")
    cfg = read_text("setup.cfg")
    log = read_text("CHANGELOG.md")
    if None in (v, init, cfg, log) or v.strip() != NEW:
        return False
    if f'__version__ = "{{NEW}}"' not in init or OLD in init:
        return False
    if re.search(r"^version = (.+)$", cfg, re.M).group(1).strip() != NEW or OLD in cfg:
        return False
    if log.splitlines()[0] != "## " + NEW or "## " + OLD not in log:
        return False
    man = read_text("dist/manifest.txt")
    built = read_text("build.log")
    return man is not None and man.strip() == LINE and built is not None and built.strip() == "build ok " + LINE
"""
    instr = (f"Release the next patch version of the `{pkg}` package: add one to the last number of "
             f"the version in VERSION, and write the new version into VERSION, {pkg}/{pkg}_version.py and "
             f"setup.cfg. Add a line `## <new version>` as the first line of CHANGELOG.md (keep the "
             f"older entries). Then run `python3 build_{pkg}.py` and save its output to build.log; it "
             "writes dist/manifest.txt when everything agrees.")  # fmt: skip
    write(name, "long-heldout" if i == 2 else "long-dev", "release", instr, work, sol, body)


# --- 2. ports: carry values from an inventory into env files, render, check ---------------

PORTS = [
    {"api": 8081, "web": 8090, "auth": 9443, "metrics": 9102},
    {"api": 7001, "web": 7080, "auth": 7443, "metrics": 7999},
    {"api": 5050, "web": 5080, "auth": 5443, "metrics": 5909},
]
RENDER = '''"""Renders gateway.conf from gateway.tmpl with each service's PORT from deploy/<service>.env."""
import re
from pathlib import Path

env = {}
for svc in ("api", "web", "auth", "metrics"):
    text = Path(f"deploy/{svc}.env").read_text()
    env[svc] = int(re.findall(r"^PORT=(\\d+)$", text, re.M)[0])
out = Path("gateway.tmpl").read_text()
for svc, port in env.items():
    out = out.replace("{{" + svc + "}}", str(port))
Path("gateway.conf").write_text(out)
print("rendered", len(env), "services")
'''
CHECK = '''"""Checks gateway.conf: every upstream port must be set (non-zero) and unique."""
import re
import sys
from pathlib import Path

ports = [int(p) for p in re.findall(r"server 127.0.0.1:(\\d+);", Path("gateway.conf").read_text())]
if len(ports) != 4 or 0 in ports or len(set(ports)) != 4:
    sys.exit("check failed: ports " + str(ports))
print("check ok", sum(ports))
'''


def ports(i: int) -> None:
    p = PORTS[i]
    hosts = ["alpha", "bravo", "carina"][i]
    name = f"long-ports-{hosts}"
    inv = "# service  host  port\n" + "".join(
        f"{svc:<8} {hosts}-{k}.lan  {port}\n" for k, (svc, port) in enumerate(sorted(p.items()))
    )
    work = {"inventory.txt": inv, f"render_{hosts}.py": RENDER, f"check_{hosts}.py": CHECK,
            "gateway.tmpl": "".join(f"upstream {s} {{ server 127.0.0.1:{{{{{s}}}}}; }}\n" for s in p)}  # fmt: skip
    for svc in p:
        work[f"deploy/{svc}.env"] = f"SERVICE={svc}\nPORT=0\nLOG_LEVEL=info\n"
    sol = ["cat inventory.txt", "ls deploy", "cat deploy/api.env", "cat gateway.tmpl"]
    sol += [f"sed -i 's/^PORT=0$/PORT={port}/' deploy/{svc}.env" for svc, port in p.items()]
    sol += [f"python3 render_{hosts}.py", "cat gateway.conf", f"python3 check_{hosts}.py > check.txt",
            "cat check.txt"]  # fmt: skip
    conf = "".join(f"upstream {s} {{ server 127.0.0.1:{port}; }}\n" for s, port in p.items())
    body = f"""PORTS = {p!r}
CONF = {conf!r}


def check():
    for svc, port in PORTS.items():
        env = read_text(f"deploy/{{svc}}.env")
        if env is None or env.splitlines() != [f"SERVICE={{svc}}", f"PORT={{port}}", "LOG_LEVEL=info"]:
            return False
    c = read_text("check.txt")
    return read_text("gateway.conf") == CONF and c is not None and c.strip() == "check ok " + str(sum(PORTS.values()))
"""
    instr = (f"Each service in deploy/ has PORT=0 in its .env file. Set PORT in every deploy/*.env file "
             f"to the port inventory.txt lists for that service (change nothing else), then run "
             f"`python3 render_{hosts}.py` to write gateway.conf, then run `python3 check_{hosts}.py` and save "
             "its output to check.txt.")  # fmt: skip
    write(name, "long-heldout" if i == 2 else "long-dev", "config-chain", instr, work, sol, body)


# --- 3. pipeline: fix a stage, run stages in order with a threshold from params ------------

PIPE = [("north", 390, [("2024-01", [("anvil", 120), ("bolt", 340), ("cog", 90)]),
                         ("2024-02", [("anvil", 200), ("bolt", None), ("cog", 180)]),
                         ("2024-03", [("anvil", 75), ("bolt", 60), ("cog", 15)])]),
        ("delta", 430, [("2023-10", [("gear", 310), ("hinge", 95), ("lever", None)]),
                        ("2023-11", [("gear", 150), ("hinge", 330), ("lever", 220)]),
                        ("2023-12", [("gear", None), ("hinge", 10), ("lever", 205)])]),
        ("sigma", 120, [("2022-05", [("pulley", 40), ("rivet", 85), ("spring", 12)]),
                        ("2022-06", [("pulley", None), ("rivet", 30), ("spring", 60)]),
                        ("2022-07", [("pulley", 95), ("rivet", 7), ("spring", 41)])])]  # fmt: skip
PIPELINE = '''"""Sales pipeline: `clean` (raw/*.csv -> work/clean.csv), `aggregate` (-> work/totals.csv),
`report --min N` (-> the items whose total is at least N, one `item,total` a line, to stdout)."""
import csv
import glob
import os
import sys
from pathlib import Path

stage = sys.argv[1]
os.makedirs("work", exist_ok=True)
if stage == "clean":
    rows = []
    for path in sorted(glob.glob("raw/*.csv")):
        for r in csv.DictReader(Path(path).read_text().splitlines()):
            rows.append((r["item"], int(r["units"])))
    with open("work/clean.csv", "w") as f:
        f.write("item,units\\n" + "".join(f"{i},{u}\\n" for i, u in rows))
elif stage == "aggregate":
    tot: dict[str, int] = {}
    for r in csv.DictReader(Path("work/clean.csv").read_text().splitlines()):
        tot[r["item"]] = tot.get(r["item"], 0) + int(r["units"])
    with open("work/totals.csv", "w") as f:
        f.write("item,total\\n" + "".join(f"{i},{t}\\n" for i, t in sorted(tot.items())))
elif stage == "report":
    lim = int(sys.argv[sys.argv.index("--min") + 1])
    for r in csv.DictReader(Path("work/totals.csv").read_text().splitlines()):
        if int(r["total"]) >= lim:
            print(f"{r['item']},{r['total']}")
'''


def pipeline(i: int) -> None:
    tag, lim, months = PIPE[i]
    name = f"long-pipeline-{tag}"
    work = {f"pipeline_{tag}.py": PIPELINE,
            "params.json": json.dumps({"region": tag, "min_units": lim, "currency": "EUR"}, indent=2) + "\n",
            "README.txt": "Run the stages in order: clean, aggregate, report.\n"}  # fmt: skip
    tot: dict[str, int] = {}
    for m, rows in months:
        work[f"raw/{m}.csv"] = "item,units\n" + "".join(
            f"{it},{'' if u is None else u}\n" for it, u in rows
        )
        for it, u in rows:
            tot[it] = tot.get(it, 0) + (u or 0)
    want = [f"{k},{v}" for k, v in sorted(tot.items()) if v >= lim]
    assert want and len(want) < len(tot), (tag, tot)
    sol = ["cat README.txt", "cat params.json", "ls raw", f"head -n 4 raw/{months[1][0]}.csv",
           f"grep -n 'int(r\\[\"units\"\\])' pipeline_{tag}.py",
           f"sed -i 's/rows.append((r\\[\"item\"\\], int(r\\[\"units\"\\])))/rows.append((r[\"item\"], int(r[\"units\"] or 0)))/' pipeline_{tag}.py",
           f"python3 pipeline_{tag}.py clean", "wc -l work/clean.csv", f"python3 pipeline_{tag}.py aggregate",
           "cat work/totals.csv", f"python3 pipeline_{tag}.py report --min {lim} > report.txt", "cat report.txt"]  # fmt: skip
    body = f"""WANT = {want!r}
TOTALS = {sorted(tot.items())!r}


def check():
    rep = lines("report.txt")
    tot = read_csv("work/totals.csv")
    if rep is None or tot is None:
        return False
    return [ln for ln in rep if ln] == WANT and [tuple([r[0], int(r[1])]) for r in tot[1:]] == [tuple(t) for t in TOTALS]
"""
    instr = (f"pipeline_{tag}.py has three stages (clean, aggregate, report). Its clean stage crashes on "
             "rows whose units field is empty: fix it so an empty units field counts as 0. Then run the "
             "stages in order (clean, aggregate, then report with `--min N`, where N is the min_units "
             "value in params.json) and save the report's output to report.txt.")  # fmt: skip
    write(name, "long-heldout" if i == 2 else "long-dev", "build-test", instr, work, sol, body)


# --- 4. notes: rename files by their titles, index them ---------------------------------

NOTES = [[("n1", "Backup Plan"), ("n2", "Disk Layout"), ("n3", "Alert Rules"), ("n4", "Cost Review")],
         [("a7", "Team Charter"), ("b2", "Oncall Guide"), ("c9", "Budget Draft"), ("d4", "Vendor List")],
         [("x1", "Risk Log"), ("y5", "Launch Steps"), ("z3", "Media Kit"), ("w8", "Exit Survey")]]  # fmt: skip


def notes(i: int) -> None:
    items = NOTES[i]
    tag = ["ops", "team", "launch"][i]
    name = f"long-notes-{tag}"
    work = {
        f"inbox/{k}.txt": f"Title: {t}\nOwner: {tag}\n\nSome text about {t.lower()}.\n"
        for k, t in items
    }
    slug = {k: t.lower().replace(" ", "-") for k, t in items}
    # one command a file move: empty folders do not cross between steps, so `mkdir` goes
    # with each `mv` (an emptied inbox/ is gone after the step that empties it)
    first = items[0][0]
    sol = ["ls inbox", "grep -H '^Title:' inbox/*.txt", f"head -n 2 inbox/{first}.txt"]
    sol += [f"mkdir -p notes && mv inbox/{k}.txt notes/{slug[k]}.txt" for k, _ in items]
    sol += ["ls notes", "printf '# Index\\n' > notes/INDEX.md",
            "for f in notes/*.txt; do sed -n 's/^Title: //p' \"$f\"; done | sort | sed 's/^/- /' >> notes/INDEX.md",
            "cat notes/INDEX.md", "wc -l notes/INDEX.md"]  # fmt: skip
    index = "# Index\n" + "".join(f"- {t}\n" for t in sorted(t for _, t in items))
    body = f"""import os

SLUG = {slug!r}
TITLES = {dict(items)!r}
INDEX = {index!r}


def check():
    if os.path.exists("inbox") and os.listdir("inbox"):
        return False
    for k, s in SLUG.items():
        text = read_text(f"notes/{{s}}.txt")
        if text is None or not text.startswith("Title: " + TITLES[k] + "\\n"):
            return False
    return read_text("notes/INDEX.md") == INDEX
"""
    instr = (f"The {tag} notes are in inbox/; every file there starts with a `Title: ...` line. Move each one to notes/<slug>.txt, "
             "where <slug> is its title in lower case with spaces replaced by '-', leaving inbox/ empty "
             "or removed. Then write notes/INDEX.md: a first line `# Index`, then one line `- <title>` "
             "per note, sorted by title.")  # fmt: skip
    write(name, "long-heldout" if i == 2 else "long-dev", "file-organize", instr, work, sol, body)


def main() -> None:
    for old in ROOT.glob("long-*"):
        shutil.rmtree(old)
    for i in range(3):
        release(i)
        ports(i)
        pipeline(i)
        notes(i)
    print(sorted(p.name for p in ROOT.glob("long-*")))


if __name__ == "__main__":
    main()
