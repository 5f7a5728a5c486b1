"""Repository layout rules that pytest itself would only report as a collection error."""

from collections import Counter
from pathlib import Path


def test_test_module_basenames_are_unique() -> None:
    # tests/ has no __init__.py files (rootdir-relative imports), so two test modules with
    # the same file name collide at collection time.
    names = Counter(p.name for p in Path(__file__).parent.rglob("*.py") if p.name != "conftest.py")
    assert [n for n, c in names.items() if c > 1] == []


AGENTS = Path(__file__).resolve().parent.parent / "optiforge" / "agents"
# Every agent folder has the same file set, so a newcomer opens one folder and sees the
# whole agent: its spec (__init__), options (config), graph or loop (agent), domain types
# (problem), candidate writers (proposers), baselines, and what it reports (report).
AGENT_FILES = {
    "__init__.py",
    "config.py",
    "agent.py",
    "problem.py",
    "proposers.py",
    "baselines.py",
    "report.py",
}
SPEC_LINES = 40


def _agent_folders() -> list[Path]:
    return sorted(
        p for p in AGENTS.iterdir() if p.is_dir() and p.name not in ("kit", "__pycache__")
    )


def test_every_agent_folder_has_the_same_file_set() -> None:
    missing = {
        p.name: sorted(AGENT_FILES - {f.name for f in p.glob("*.py")}) for p in _agent_folders()
    }
    assert {k: v for k, v in missing.items() if v} == {}


# Agents whose graph is the kit's search loop (kit.search.nodes are their nodes).
SEARCH_LOOP_AGENTS = {"evolve", "hawkeye"}
WIRING_LINES = 60


def test_graph_agents_keep_their_nodes_in_nodes_py_and_agent_py_is_wiring() -> None:
    """An agent with its own graph has ``nodes.py`` (module-level nodes) and an ``agent.py``
    whose functions are short and define no nested function (a node as a closure)."""
    import ast

    bad: dict[str, str] = {}
    for p in _agent_folders():
        if p.name not in SEARCH_LOOP_AGENTS and not (p / "nodes.py").exists():
            bad[p.name] = "no nodes.py"
            continue
        tree = ast.parse((p / "agent.py").read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            inner = [
                n.name
                for n in ast.walk(fn)
                if n is not fn and isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if inner:
                bad[p.name] = f"agent.py:{fn.name} defines {', '.join(inner)} (move to nodes.py)"
            elif lines > WIRING_LINES:
                bad[p.name] = f"agent.py:{fn.name} is {lines} lines (wiring only)"
    assert bad == {}


def test_agent_init_is_only_the_spec() -> None:
    """Logic lives in the agent's modules; ``__init__`` holds SPEC and ``__all__``."""
    long = {}
    for p in _agent_folders():
        n = len((p / "__init__.py").read_text().splitlines())
        if n > SPEC_LINES:
            long[p.name] = n
    assert long == {}


SUITES = AGENTS.parent / "evals" / "suites"


def _suite_folders() -> list[Path]:
    return sorted(p for p in SUITES.iterdir() if p.is_dir() and (p / "__init__.py").is_file())


def test_every_suite_has_its_benchmark_module_and_a_logic_free_init() -> None:
    """One suite shape: the benchmark and its tasks in ``benchmark.py``; ``__init__`` holds
    only a docstring, imports (re-exports) and ``__all__``, no definitions."""
    import ast

    assert len(_suite_folders()) >= 10
    problems = []
    for p in _suite_folders():
        if not (p / "benchmark.py").is_file():
            problems.append(f"{p.name}: no benchmark.py")
        for node in ast.parse((p / "__init__.py").read_text()).body:
            docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            all_list = isinstance(node, ast.Assign) and [
                t.id for t in node.targets if isinstance(t, ast.Name)
            ] == ["__all__"]
            if not (isinstance(node, ast.Import | ast.ImportFrom) or docstring or all_list):
                problems.append(f"{p.name}/__init__.py:{node.lineno}: {type(node).__name__}")
    assert problems == []
