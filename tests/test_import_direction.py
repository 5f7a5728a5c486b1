"""Layers point downward only: no optiforge module imports a module of a higher layer.

Top-down: cli -> harness -> agents -> evals -> base (solvers, kernels, llm, sandboxes, memory,
tools, testing, runs, config, doctor) -> errors. Every import is counted, module-level or inside
a function, absolute or relative.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "optiforge"

# Layer rank, higher = further up. The first matching prefix in LAYER_RULES wins, so specific
# modules are listed before the packages that hold them.
LAYERS = {"errors": 0, "base": 1, "evals": 2, "agents": 3, "harness": 4, "cli": 5}
LAYER_RULES: list[tuple[str, str]] = [
    # Test doubles of agent code (an LLM that answers agent-CBO's sub-agent schemas, a toy
    # problem for the agent kit's search loop) sit on the agents layer, not with the rest
    # of optiforge.testing: they are built from the agents' own types.
    ("optiforge.testing.cbo", "agents"),
    ("optiforge.testing.toy_search", "agents"),
    ("optiforge.testing.smith", "agents"),
    ("optiforge.testing.saddle", "agents"),
    ("optiforge.testing.hawkeye", "agents"),
    ("optiforge.testing.autorem", "agents"),
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
    """(line, imported optiforge module) for every import statement in the file."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                # `from pkg import sub` imports the submodule pkg.sub when there is one
                sub = f"{source}.{alias.name}"
                found.append((node.lineno, sub if sub in known else source))
    ours = {(line, m) for line, m in found if m == "optiforge" or m.startswith("optiforge.")}
    return sorted(ours)


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
# is given (``evals.protocol``); domain types live in solvers/ and kernels/. The one
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
            and not target.endswith(".protocol")  # a suite's task family: what agents read
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
