"""The ``saddle`` suite: every task's reference solution scores 1 and a no-op 0 (the CI
check), the layout and metadata, ``step``'s state, malformed candidates, and the verifier's
anti-tamper properties: a planted ``reward.txt`` or fake test changes nothing, a replay
finds none of the hidden tests, and code the agent wrote that a test runs can neither read
the expected answers nor overwrite the result."""

from __future__ import annotations

import ast
import functools
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import optiforge.evals.suites.saddle.benchmark as saddle
from optiforge.errors import ConfigError
from optiforge.evals.protocol import Score
from optiforge.evals.suites.saddle import SaddleBenchmark, SaddleTask
from optiforge.sandboxes import LocalSandbox

SB = LocalSandbox()
UNMET = SB.protections().unmet()
BENCH = SaddleBenchmark()
TASKS = [t for split in BENCH.splits for t in BENCH.tasks(split)]
BY_NAME = {t.name: t for t in TASKS}
NEEDS_VIEW = pytest.mark.skipif(
    "minimal_read_view" in UNMET,
    reason=f"sandbox mode {SB.isolation} shows the whole file system (reported unmet)",
)
NEEDS_PIDNS = pytest.mark.skipif(
    not (SB.protections().pid_namespace and SB.protections().proc_private),
    reason=f"sandbox mode {SB.isolation} has no PID namespace: the verifier cannot contain "
    "the processes a test starts",
)


def _ids(task: SaddleTask) -> str:
    return f"{task.name}@{task.split}"


@functools.cache
def _reference(name: str) -> tuple[Score, dict[str, bytes]]:
    task = BY_NAME[name]
    return task.run_candidate({"commands": task.solution()}, SB)


# --- the CI check ------------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS, ids=_ids)
def test_reference_scores_one_and_noop_zero(task: SaddleTask) -> None:
    ref, _ = _reference(task.name)
    assert ref.passed and ref.value == 1.0, ref
    assert ref.metrics["commands"] == len(task.solution())
    noop = task.evaluate({"commands": []}, SB)
    assert noop.passed and noop.value == 0.0, noop
    assert noop.metrics == {"reward": 0.0, "commands": 0.0, "replay_failures": 0.0}


# --- layout and metadata ------------------------------------------------------------------


def test_the_suite_has_24_tasks_14_dev_10_heldout() -> None:
    assert len(BENCH.tasks("dev")) == 14
    assert len(BENCH.tasks("heldout")) == 10
    assert len([t for t in TASKS if not t.split.startswith("long-")]) == 24
    for split in ("dev", "heldout"):
        cats = {t.category for t in BENCH.tasks(split)}
        assert len(cats) >= 10, (split, cats)
    # a similar mix: every heldout category also occurs in dev
    assert {t.category for t in BENCH.tasks("heldout")} <= {t.category for t in BENCH.tasks("dev")}


def test_the_long_splits_need_ten_commands_or_more_and_carry_state() -> None:
    dev, held = BENCH.tasks("long-dev"), BENCH.tasks("long-heldout")
    assert len(dev) == 8 and len(held) == 4
    # each heldout task is a family seen in dev, with other files and values
    assert {t.category for t in held} == {t.category for t in dev}
    for t in dev + held:
        sol = t.solution()
        assert len(sol) >= 10 and t.steps_hint == len(sol)
        # state carried: a value the solution writes late was only in the files (never the
        # instruction), so an agent has to read it early and keep it
        late = " ".join(sol[len(sol) // 3 :]).replace("\\", "")
        init = "\n".join(f"{k}\n{d.decode()}" for k, d in t.initial_files().items())
        carried = [
            w for w in re.findall(r"[\w.-]{3,}", late) if w in init and w not in t.instruction
        ]
        assert carried, t.name


def test_an_unknown_split_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no split 'test'"):
        BENCH.tasks("test")


@pytest.mark.parametrize("task", TASKS, ids=_ids)
def test_task_layout(task: SaddleTask) -> None:
    folder = task.folder
    assert {p.name for p in folder.iterdir()} >= {"task.json", "workdir", "tests", "solution.sh"}
    meta = json.loads((folder / "task.json").read_text())
    assert set(meta) == {
        "instruction",
        "split",
        "category",
        "difficulty",
        "timeout_s",
        "steps_hint",
    }
    assert isinstance(meta["timeout_s"], int) and 10 <= meta["timeout_s"] <= 300
    assert meta["difficulty"] in (1, 2, 3)
    assert task.steps_hint >= 2
    lo, hi = (10, 16) if task.split.startswith("long-") else (2, 8)
    assert lo <= len(task.solution()) <= hi
    # the hidden test is one shell script (a .py there would clash in `mypy optiforge`)
    assert sorted(p.name for p in (folder / "tests").iterdir()) == ["test.sh"]
    assert task.suite == "saddle" and task.metric == "reward" and task.higher_is_better
    assert task.description == task.instruction
    init = task.initial_files()
    assert init, "a task starts from some files"
    assert not any(rel.split("/")[0] in ("tmp", "reward.txt") for rel in init)
    assert not any(rel.startswith(".verify-") for rel in init)


def test_workdir_python_files_have_unique_names() -> None:
    # `mypy optiforge` sees them as top-level modules: two of one name would clash
    names = [p.name for t in TASKS for p in (t.folder / "workdir").rglob("*.py")]
    assert len(names) == len(set(names)), names


def _outputs(task: SaddleTask) -> dict[str, bytes]:
    """Files the reference solution created or changed."""
    init = task.initial_files()
    _, final = _reference(task.name)
    return {rel: data for rel, data in final.items() if init.get(rel) != data}


@pytest.mark.parametrize("task", TASKS, ids=_ids)
def test_instruction_names_the_output_but_not_the_answer(task: SaddleTask) -> None:
    text = task.instruction
    outputs = _outputs(task)
    assert outputs, "the reference solution writes something"
    mentioned = [
        rel
        for rel in outputs
        if any("/".join(rel.split("/")[:i]) in text for i in range(1, rel.count("/") + 2))
    ]
    assert mentioned, f"the instruction names none of {sorted(outputs)}"
    test_text = (task.folder / "tests" / "test.sh").read_text()
    assert test_text not in text
    known = set(re.findall(r"`([^`]*)`", text))  # quoted formats (a CSV header) are no answer
    for data in task.initial_files().values():
        known |= {ln.strip() for ln in data.decode("utf-8", "replace").splitlines()}
    for rel, data in outputs.items():
        for line in data.decode("utf-8", "replace").splitlines():
            line = line.strip()
            if line in known:
                continue
            if re.fullmatch(r"-?\d+(\.\d+)?", line) and len(line) >= 2:
                assert not re.search(rf"(?<![\w.]){re.escape(line)}(?![\w])", text), (rel, line)
            elif len(line) >= 6:
                assert line not in text, (rel, line)


# --- malformed candidates -----------------------------------------------------------------


@pytest.mark.parametrize(
    "candidate",
    [
        "not json",
        {"cmds": ["ls"]},
        {"commands": "ls"},
        {"commands": ["ls", 3]},
        {"commands": ["echo a\x00b"]},
        {"commands": ["true"] * (saddle.MAX_COMMANDS + 1)},
        ["ls"],
        None,
    ],
)
def test_a_malformed_candidate_fails_with_a_reason(candidate: Any) -> None:
    score = BY_NAME["log-error-summary"].evaluate(candidate, SB)
    assert not score.passed and score.value == 0.0
    assert score.details["reason"]


def test_a_candidate_given_as_json_text_is_accepted() -> None:
    task = BY_NAME["normalize-names"]
    score = task.evaluate(json.dumps({"commands": task.solution()}), SB)
    assert score.passed and score.value == 1.0


def test_a_crashing_test_script_is_not_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    task = BY_NAME["normalize-names"]
    checklib = (Path(saddle.__file__).parent / "checklib.py").read_bytes()
    broken = {"test.sh": b"#!/bin/sh\necho boom >&2\nexit 3\n", "checklib.py": checklib}
    monkeypatch.setattr(SaddleTask, "test_files", lambda self: broken)
    score = task.evaluate({"commands": task.solution()}, SB)
    assert not score.passed and score.value == 0.0
    assert "exit 3" in score.details["reason"] and "boom" in score.details["reason"]


def test_a_hidden_file_that_does_not_match_its_hash_is_not_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wrong = SimpleNamespace(hexdigest=lambda: "0" * 64)
    monkeypatch.setattr(saddle, "hashlib", SimpleNamespace(sha256=lambda data: wrong))
    task = BY_NAME["normalize-names"]
    score = task.evaluate({"commands": task.solution()}, SB)
    assert not score.passed and "sha256" in score.details["reason"], score


def test_replay_continues_past_failing_and_timed_out_commands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(saddle, "COMMAND_TIMEOUT_S", 1.0)
    task = BY_NAME["normalize-names"]
    score = task.evaluate({"commands": ["false", "sleep 30", *task.solution()]}, SB)
    assert score.passed and score.value == 1.0, score
    assert score.metrics["replay_failures"] == 2
    failed = score.details["failed_commands"]
    assert [f["index"] for f in failed] == [0, 1]
    assert failed[1]["timed_out"] and not failed[0]["timed_out"]


def test_a_killed_replay_runner_still_gets_verified() -> None:
    task = BY_NAME["normalize-names"]
    score = task.evaluate({"commands": [*task.solution(), "kill -9 $PPID", "rm -f *"]}, SB)
    assert score.passed and score.value == 1.0, score
    assert "did not report" in score.details["replay_note"]
    assert score.metrics["replay_failures"] == len(task.solution()) + 2


def test_check_reference() -> None:
    assert BY_NAME["verify-checksums"].check_reference(SB) == (1.0, 0.0)


# --- anti-tamper ----------------------------------------------------------------------------


def test_a_planted_reward_file_scores_zero() -> None:
    task = BY_NAME["log-error-summary"]
    for cmds in (["echo 1 > reward.txt"], ["mkdir reward.txt", "echo 1 > reward.txt/x"]):
        score = task.evaluate({"commands": cmds}, SB)
        assert score.passed and score.value == 0.0, (cmds, score)


FAKE_TEST = "#!/bin/sh\\necho 1 > reward.txt\\nexit 0\\n"
PLANT = [
    # fake tests wherever a verifier might look, a fake checklib, and a user-site hook
    # and a stdlib shadow that would write the reward if Python ran them
    f"mkdir -p tests .verify .verify-0000000000000000 && printf '{FAKE_TEST}' > tests/test.sh",
    "cp tests/test.sh test.sh && cp tests/test.sh .verify/test.sh && cp tests/test.sh "
    ".verify-0000000000000000/test.sh && cp tests/test.sh solution.sh",
    'printf \'def verdict(check):\\n    open("reward.txt", "w").write("1")\\n\' > checklib.py',
    'mkdir -p .local/lib/python3.11/site-packages && printf \'open("reward.txt", "w")'
    '.write("1")\\n\' | tee .local/lib/python3.11/site-packages/usercustomize.py '
    "sitecustomize.py json.py > /dev/null",
    "echo 1 > reward.txt",
]


def test_planted_fake_tests_do_not_change_the_outcome() -> None:
    task = BY_NAME["log-error-summary"]
    alone = task.evaluate({"commands": PLANT}, SB)
    assert alone.passed and alone.value == 0.0, alone
    assert alone.metrics["replay_failures"] == 0
    with_solution = task.evaluate({"commands": [*PLANT, *task.solution()]}, SB)
    assert with_solution.passed and with_solution.value == 1.0, with_solution


@NEEDS_VIEW
def test_the_replay_finds_nothing_of_the_hidden_tests() -> None:
    task = BY_NAME["log-error-summary"]
    look = [
        "cat tests/test.sh solution.sh > found.txt 2>&1; ls -laR . >> found.txt",
        "find / -path /proc -prune -o \\( -name test.sh -o -name solution.sh -o -name "
        "'checklib*' -o -name '.verify-*' -o -path '*/saddle/*' \\) -print > paths.txt "
        "2>/dev/null; env >> found.txt; cat /proc/*/cmdline /proc/*/environ >> found.txt "
        "2>/dev/null; true",
    ]
    score, final = task.run_candidate({"commands": look}, SB)
    assert score.passed and score.value == 0.0
    assert final["paths.txt"] == b"", final["paths.txt"]
    found = final["found.txt"].decode(errors="replace")
    assert "No such file" in found  # the cat ran
    hidden = (task.folder / "tests" / "test.sh").read_text()
    expected_line = next(ln for ln in hidden.splitlines() if ln.startswith("EXPECTED"))
    for needle in ("Hidden test of", "verdict(check)", expected_line[:40]):
        assert needle not in found, needle


# code the agent wrote, run by a test at verification time
_READER = [  # reads the hidden test's inputs and expected outputs, prints the right answer
    "import ast, glob, re, sys",
    "text = open(sys.argv[1]).read()",
    "for path in glob.glob('.verify-*/test.sh') + glob.glob('/proc/*/cwd/.verify-*/test.sh'):",
    "    m = re.search(r'^HIDDEN = (.*)$', open(path).read(), re.M)",
    "    for t, n, want in ast.literal_eval(m.group(1)):",
    "        if t == text:",
    "            print(chr(10).join(want))",
    "            sys.exit(0)",
    "print('none', 0, sep=chr(9))",
]
_DAEMON = [  # a detached process that keeps writing 1 to reward.txt
    "import os, time",
    "if os.fork() == 0:",
    "    os.setsid()",
    "    if os.fork() == 0:",
    "        for fd in (0, 1, 2):",
    "            os.close(fd)",
    "        end = time.time() + 5",
    "        while time.time() < end:",
    "            try:",
    "                f = open('reward.txt', 'w'); f.write('1' + chr(10)); f.close()",
    "            except OSError:",
    "                pass",
    "    os._exit(0)",
    "print('none', 0, sep=chr(9))",
]


def _write_script(lines: list[str], name: str) -> str:
    quoted = " ".join("'" + ln.replace("'", "'\"'\"'") + "'" for ln in lines)
    return f"printf '%s\\n' {quoted} > {name}"


@NEEDS_PIDNS
@pytest.mark.parametrize("script", [_READER, _DAEMON], ids=["reads-hidden-tests", "daemon"])
def test_agent_code_run_by_the_test_cannot_cheat(script: list[str]) -> None:
    task = BY_NAME["write-wordfreq-script"]
    cmds = [*task.solution(), _write_script(script, "wordfreq.py")]
    score = task.evaluate({"commands": cmds}, SB)
    assert score.passed and score.value == 0.0, score


# --- step --------------------------------------------------------------------------------


def test_step_carries_state() -> None:
    task = BY_NAME["normalize-names"]
    files = task.initial_files()
    files, info = task.step(
        files,
        "echo hello > a.txt && mkdir -p d/e && echo x > d/e/.hidden && python3 -c 'print(6 * 7)'",
        SB,
    )
    assert info["returncode"] == 0 and info["stdout"].strip() == "42", info
    assert not info["timed_out"] and info["seconds"] >= 0
    files, info = task.step(files, "echo world >> a.txt; cat a.txt; echo oops >&2; exit 3", SB)
    assert files["a.txt"] == b"hello\nworld\n"
    assert files["d/e/.hidden"] == b"x\n"
    assert files["names.txt"] == task.initial_files()["names.txt"]
    assert not any(rel.startswith("tmp/") for rel in files)
    assert info["returncode"] == 3 and info["stdout"] == "hello\nworld\n"
    assert info["stderr"].strip() == "oops"
    files, info = task.step(files, "rm names.txt && python3 -c \"print('x' * 50000)\"", SB)
    assert "names.txt" not in files and set(files) == {"a.txt", "d/e/.hidden"}
    assert len(info["stdout"]) <= 20_000 and "clipped" in info["stdout"]


def test_step_reports_a_timeout() -> None:
    task = BY_NAME["normalize-names"]
    files, info = task.step({"a.txt": b"1\n"}, "echo 2 >> a.txt; sleep 30", SB, timeout_s=3.0)
    assert info["timed_out"]
    assert info["seconds"] < 10
    assert files["a.txt"] == b"1\n2\n"


def test_the_sandbox_side_files_import_only_the_standard_library() -> None:
    # they run in the sandbox (`python -I -c SOURCE`, or imported by a hidden test)
    here = Path(saddle.__file__).parent
    for name in ("replay_runner.py", "verify_runner.py", "checklib.py"):
        tree = ast.parse((here / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or ""]
            else:
                continue
            for mod in mods:
                top = mod.split(".")[0]
                assert top in sys.stdlib_module_names or top == "checklib", (name, mod)
