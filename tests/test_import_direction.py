"""Layers point downward only: no optiforge module imports a module of a higher layer.

Top-down: cli -> harness -> agents -> evals -> base (solvers, kernels, llm, sandboxes, memory,
tools, testing, runs, config, doctor) -> errors. Every import is counted, module-level or inside
a function, absolute or relative.
"""

import ast
from pathlib import Path

from _kit_counts import kc

PACKAGE = Path(__file__).resolve().parent.parent / "optiforge"

# Layer rank, higher = further up. The first matching prefix in LAYER_RULES wins, so specific
# modules are listed before the packages that hold them.
# Agents whose folder holds a cli.py (the verbs of ``optiforge.agents.AGENT_VERBS``).
AGENT_CLIS = sorted(p.parent.name for p in (PACKAGE / "agents").glob("*/cli.py"))

LAYERS = {"errors": 0, "base": 1, "evals": 2, "agents": 3, "harness": 4, "cli": 5}
LAYER_RULES: list[tuple[str, str]] = [
    # A toy problem for the agent kit's search loop sits on the agents layer, not with the
    # rest of optiforge.testing: it is built from the kit's public types. (Doubles of one
    # agent's code live in that agent's folder: ``optiforge.agents.<agent>.testing``.)
    ("optiforge.testing.toy_search", "agents"),
    # An agent's own sub-commands (``AgentSpec.cli``, a ``module:attribute`` reference, so
    # no agent module imports them) are CLI code kept in the agent's folder: they build run
    # contexts with the harness and read suites, as the CLI does.
    *((f"optiforge.agents.{agent}.cli", "cli") for agent in AGENT_CLIS),
    ("optiforge.cli", "cli"),
    ("optiforge.harness", "harness"),
    ("optiforge.agents", "agents"),
    ("optiforge.evals", "evals"),
    ("optiforge.errors", "errors"),
    *(
        (f"optiforge.{name}", "base")
        for name in (
            "solvers",
            "kernels",
            "llm",
            "sandboxes",
            "memory",
            "tools",
            "testing",
            "runs",
            "config",
            "limits",
            "doctor",
        )
    ),
    ("optiforge", "base"),  # the package __init__ (only __version__)
]


def layer_of(module: str) -> str:
    for prefix, layer in LAYER_RULES:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    raise AssertionError(f"{module} has no layer: add it to LAYER_RULES")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line, imported optiforge module) for every import statement in the file (at any
    depth: inside functions and under TYPE_CHECKING too), read by ``kit_counts``."""
    me = module_name(path)
    tree = ast.parse(path.read_text(), filename=str(path))
    return sorted({(i.line, i.target) for i in kc.imports_of(me, path, tree, known)})


def import_graph() -> list[tuple[str, Path, int, str]]:
    modules = all_modules()
    known = set(modules)
    return [
        (name, path, line, target)
        for name, path in modules.items()
        for line, target in imports_of(path, known)
    ]


def test_every_module_has_a_layer() -> None:
    for name in all_modules():
        layer_of(name)


def test_imports_point_downward() -> None:
    upward = []
    for name, path, line, target in import_graph():
        src, dst = layer_of(name), layer_of(target)
        if LAYERS[dst] > LAYERS[src]:
            rel = path.relative_to(PACKAGE.parent)
            upward.append(f"{rel}:{line} imports {target} ({src} -> {dst})")
    assert upward == [], f"{len(upward)} upward import(s):\n" + "\n".join(upward)


# Suites are benchmarks, not libraries: an agent reaches a suite only through the task it
# is given (``evals.protocol``, and its task family's Protocol declared beside the suite's
# tasks: ``evals/suites/<suite>/protocol.py``); domain types live in solvers/ and kernels/. The one
# exception: AutoREM's ``load_task`` builds an ``AutoROTask`` around a user's problem (the
# task type needs ``evals.protocol.Score``, so it cannot move below the evals layer).
AGENT_SUITE_IMPORTS_ALLOWED = {
    ("optiforge/agents/autorem/problem.py", "optiforge.evals.suites.autoro.benchmark"),
}


def test_agents_do_not_import_suites() -> None:
    found = []
    for name, path, line, target in import_graph():
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if (
            layer_of(name) == "agents"
            and target.startswith("optiforge.evals.suites")
            and not target.endswith(".protocol")
            and (rel, target) not in AGENT_SUITE_IMPORTS_ALLOWED
        ):
            found.append(f"{rel}:{line} imports {target} (agents -> suite internals)")
    assert found == [], f"{len(found)} agent -> suite import(s):\n" + "\n".join(found)


def _unit(module: str) -> tuple[str, str]:
    """A top-level package (optiforge.evals, optiforge.cli, ...) cut by layer."""
    top = ".".join(module.split(".")[:2])
    return top, layer_of(module)


def test_no_cycles_between_packages_of_different_layers() -> None:
    edges: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for name, _path, _line, target in import_graph():
        a, b = _unit(name), _unit(target)
        if a != b:
            edges.setdefault(a, set()).add(b)
            edges.setdefault(b, set())

    # Tarjan's strongly connected components
    index: dict[tuple[str, str], int] = {}
    low: dict[tuple[str, str], int] = {}
    stack: list[tuple[str, str]] = []
    on_stack: set[tuple[str, str]] = set()
    components: list[list[tuple[str, str]]] = []

    def visit(v: tuple[str, str]) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    mixed = [sorted(c) for c in components if len({layer for _, layer in c}) > 1]
    assert mixed == [], f"import cycles across layers: {mixed}"
