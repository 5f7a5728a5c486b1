"""The counts issue 43 asks to show, for any checkout: how far the agents are from the kit.

Usage::

    python benchmarks/kit_counts.py                  # this checkout
    python benchmarks/kit_counts.py /work/wt/base    # another checkout (only read, never run)
    python benchmarks/kit_counts.py --json A B       # both, side by side, as JSON

Everything is read with ``ast`` (and ``tokenize`` for comments); nothing is imported, so a
broken checkout still counts. What each number means:

- **closure nodes**: functions defined inside a function of ``optiforge/agents/<agent>/agent.py``
  (any depth). ``closure graph nodes`` is the subset passed to ``add_node`` /
  ``add_conditional_edges`` (the graph's nodes and routers that are closures).
- **builder lines**: per agent, the longest top-level function (or method) of ``agent.py``,
  ``end_lineno - lineno + 1`` (decorators excluded, docstring included).
- **Any parameters**: parameters (incl. ``*args``/``**kwargs``) under ``optiforge/agents``
  annotated exactly ``Any`` / ``typing.Any``; ``task: Any`` is the subset named ``task``;
  ``mentioning Any`` counts annotations with ``Any`` anywhere (``dict[str, Any]``).
- **probes**: calls of the builtins ``getattr`` / ``hasattr`` under ``optiforge/agents``
  (the kit included) and ``optiforge/harness``.
- **import circles**: strongly connected components (size > 1, or a module importing
  itself) of the graph of optiforge modules, an edge per import of a module (``from pkg
  import sub`` is the submodule ``pkg.sub`` when there is one; a parent package is not
  implied). ``file-level`` counts imports that run when the module is imported (module
  body, including ``try``/``if``, excluding ``if TYPE_CHECKING:``); ``with function-level``
  adds imports inside functions, so circles that a lazy import hides show (the count the
  ratchet test holds at its allow-list); ``with TYPE_CHECKING`` adds the type-only imports
  too (a class typed by the module that owns it: never run, shown for information).
- **CLI imports of agent internals**: import statements (name by name) in
  ``optiforge/cli`` of a module inside an agent folder other than its ``__init__``
  (``optiforge.agents.<agent>.<module>``); ``kit`` and ``spec`` are shared, not internals.
- **string-keyed summary reads**: in a file that names ``summary.json``, subscripts
  ``x["key"]`` and ``x.get("key")`` on a variable whose name contains ``summ`` or that was
  assigned (in the same function) from a JSON load; plus ``<expr>.extra["key"]`` /
  ``.extra.get("key")`` in any file (``AgentOutcome.extra`` read by key). Heuristic, by
  construction blind to reads through other names; reported as reads and files.
- **private name uses**: ``from x import _y`` of another module's private name, and ``m._y``
  on a module ``m`` imported by name (``from pkg import _mod`` names a module: not counted).
- **fmt: skip**: comments ``# fmt: skip`` under ``optiforge/``.
- **files to understand an agent**: the agent's own ``.py`` files (recursively) plus the
  optiforge modules they import (any import, function-level too) that are not the kit,
  ``agents.spec``, the agents package, ``evals.protocol``, ``errors`` or the base layer
  (solvers, kernels, llm, sandboxes, memory, tools, runs, config, limits, deadline,
  doctor): i.e. the suite modules, other agents' modules, test doubles and harness
  modules one has to read along. Direct imports only (one level).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# ----------------------------------------------------------------------------------------
# the module graph


@dataclass(frozen=True)
class Import:
    """One import of an optiforge module from a file."""

    source: str
    target: str
    line: int
    file_level: bool
    """Runs when the source module is imported (not in a function, not TYPE_CHECKING)."""
    type_only: bool = False
    """Under ``if TYPE_CHECKING:`` (never runs; types only)."""
    names: tuple[str, ...] = ()
    """For ``from x import a, b``: the names (``a``, ``b``); empty for ``import x``."""


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules(package: Path) -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    return {module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk_imports(
    node: ast.AST, file_level: bool, type_only: bool = False
) -> Iterator[tuple[ast.AST, bool, bool]]:
    """(import node, file_level, type_only) for every import under node."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, file_level, type_only
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _walk_imports(child, False, type_only)
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk_imports(ast.Module(body=[stmt], type_ignores=[]), False, True)
            for stmt in child.orelse:
                module = ast.Module(body=[stmt], type_ignores=[])
                yield from _walk_imports(module, file_level, type_only)
        else:
            yield from _walk_imports(child, file_level, type_only)


def imports_of(name: str, path: Path, tree: ast.Module, known: set[str]) -> list[Import]:
    """Every import of an optiforge module in one file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for node, file_level, type_only in _walk_imports(tree, True):
        if isinstance(node, ast.Import):
            for a in node.names:
                found.append(Import(name, a.name, node.lineno, file_level, type_only=type_only))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                target = sub if sub in known else source
                found.append(
                    Import(name, target, node.lineno, file_level, type_only, (alias.name,))
                )
    return [i for i in found if i.target == "optiforge" or i.target.startswith("optiforge.")]


@dataclass
class Checkout:
    """A parsed checkout: every module's tree and imports."""

    root: Path
    modules: dict[str, Path] = field(default_factory=dict)
    trees: dict[str, ast.Module] = field(default_factory=dict)
    imports: list[Import] = field(default_factory=list)

    @classmethod
    def load(cls, root: Path) -> Checkout:
        package = root / "optiforge"
        modules = all_modules(package)
        trees = {n: ast.parse(p.read_text(), filename=str(p)) for n, p in modules.items()}
        known = set(modules)
        imports = [i for n, p in modules.items() for i in imports_of(n, p, trees[n], known)]
        return cls(root, modules, trees, imports)

    def rel(self, module: str) -> str:
        return self.modules[module].relative_to(self.root).as_posix()


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's SCCs (iterative): the components with a cycle (size > 1 or a self-loop)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    nodes = sorted(set(edges) | {t for ts in edges.values() for t in ts})
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in edges.get(v, ()):
                    out.append(sorted(comp))
    return sorted(out)


def import_circles(
    co: Checkout, *, function_level: bool, type_checking: bool = False
) -> list[list[str]]:
    """The import circles between optiforge modules (see the module docstring)."""
    edges: dict[str, set[str]] = {}
    for i in co.imports:
        counted = i.file_level or (function_level and (type_checking or not i.type_only))
        if i.source != i.target and counted:
            edges.setdefault(i.source, set()).add(i.target)
    return strongly_connected(edges)


# ----------------------------------------------------------------------------------------
# agents


def agent_dirs(co: Checkout) -> dict[str, Path]:
    """agent folder name -> folder (every folder under optiforge/agents with an agent.py)."""
    base = co.root / "optiforge" / "agents"
    return {d.name: d for d in sorted(base.iterdir()) if d.is_dir() and (d / "agent.py").is_file()}


def _top_functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Top-level functions and the methods of top-level classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield item


def _nested_defs(fn: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        n
        for n in ast.walk(fn)
        if n is not fn and isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _graph_callables(fn: ast.AST) -> set[str]:
    """Names passed as callables to add_node / add_conditional_edges inside fn."""
    names: set[str] = set()
    for n in ast.walk(fn):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in {"add_node", "add_conditional_edges"}
        ):
            names |= {a.id for a in n.args if isinstance(a, ast.Name)}
    return names


@dataclass
class Builder:
    agent: str
    function: str
    lines: int
    closures: int


def agent_builders(co: Checkout) -> tuple[dict[str, Builder], int, int]:
    """Per agent the longest function of agent.py; total closures; closures used as nodes."""
    builders: dict[str, Builder] = {}
    closures = graph_closures = 0
    for agent, d in agent_dirs(co).items():
        tree = ast.parse((d / "agent.py").read_text())
        best: Builder | None = None
        for fn in _top_functions(tree):
            nested = _nested_defs(fn)
            closures += len(nested)
            used = _graph_callables(fn)
            graph_closures += sum(1 for n in nested if n.name in used)
            end = fn.end_lineno or fn.lineno
            b = Builder(agent, fn.name, end - fn.lineno + 1, len(nested))
            if best is None or b.lines > best.lines:
                best = b
        if best is not None:
            builders[agent] = best
    return builders, closures, graph_closures


def _is_any(ann: ast.expr | None) -> bool:
    if ann is None:
        return False
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.strip() in {"Any", "typing.Any"}
    return (isinstance(ann, ast.Name) and ann.id == "Any") or (
        isinstance(ann, ast.Attribute) and ann.attr == "Any"
    )


def _mentions_any(ann: ast.expr | None) -> bool:
    if ann is None:
        return False
    return any(_is_any(n) for n in ast.walk(ann) if isinstance(n, ast.expr))


def _params(tree: ast.AST) -> Iterator[ast.arg]:
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            a = n.args
            yield from a.posonlyargs + a.args + a.kwonlyargs
            if a.vararg:
                yield a.vararg
            if a.kwarg:
                yield a.kwarg


def _under(co: Checkout, *prefixes: str) -> Iterator[tuple[str, ast.Module]]:
    for name, tree in co.trees.items():
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            yield name, tree


def any_params(co: Checkout, *prefixes: str) -> tuple[int, int, int]:
    """(exactly Any, ``task: Any``, annotations mentioning Any) under the prefixes."""
    exact = task = mention = 0
    for _name, tree in _under(co, *prefixes):
        for arg in _params(tree):
            if _is_any(arg.annotation):
                exact += 1
                task += arg.arg == "task"
            mention += _mentions_any(arg.annotation)
    return exact, task, mention


def probes(co: Checkout, *prefixes: str) -> int:
    """Calls of the builtins getattr / hasattr under the prefixes."""
    return sum(
        1
        for _name, tree in _under(co, *prefixes)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in {"getattr", "hasattr"}
    )


def _agent_internal(target: str) -> bool:
    parts = target.split(".")
    return (
        len(parts) >= 4 and parts[:2] == ["optiforge", "agents"] and parts[2] not in {"kit", "spec"}
    )


def cli_agent_imports(co: Checkout) -> list[Import]:
    """Imports in optiforge.cli of modules inside an agent folder (not its __init__)."""
    return [
        i for i in co.imports if i.source.startswith("optiforge.cli") and _agent_internal(i.target)
    ]


def _str_key_reads(fn: ast.AST, names: set[str]) -> int:
    n = 0
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in names
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in names
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            n += 1
    return n


def _json_loaded(fn: ast.AST) -> set[str]:
    """Names assigned in fn from an expression that calls something named *load*/*read*."""
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            calls = [
                c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")
                for c in ast.walk(node.value)
                if isinstance(c, ast.Call)
            ]
            if any("load" in c or c.startswith("_read") or c == "read_json" for c in calls):
                for t in node.targets:
                    for e in ast.walk(t):
                        if isinstance(e, ast.Name):
                            out.add(e.id)
    return out


def summary_reads(co: Checkout) -> tuple[int, list[str]]:
    """(string-keyed reads of summary.json / AgentOutcome.extra, files holding them)."""
    total = 0
    files: list[str] = []
    for name, tree in co.trees.items():
        n = 0
        names_summary = any(
            isinstance(c, ast.Constant) and isinstance(c.value, str) and "summary.json" in c.value
            for c in ast.walk(tree)
        )
        if names_summary:
            summ = {
                x.id for x in ast.walk(tree) if isinstance(x, ast.Name) and "summ" in x.id.lower()
            }
            for fn in ast.walk(tree):
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    mentions = any(
                        isinstance(c, ast.Constant)
                        and isinstance(c.value, str)
                        and "summary.json" in c.value
                        for c in ast.walk(fn)
                    )
                    loaded = _json_loaded(fn) if mentions else set()
                    # only this function's own statements (nested defs are walked on their own)
                    own = ast.Module(
                        body=[s for s in fn.body if not isinstance(s, ast.FunctionDef)],
                        type_ignores=[],
                    )
                    n += _str_key_reads(own, summ | loaded)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "extra"
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)
            ) or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "extra"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                n += 1
        if n:
            total += n
            files.append(co.rel(name))
    return total, sorted(files)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_name_uses(co: Checkout) -> set[tuple[str, str, str, int]]:
    """(file, module, private name, line) for every use of another module's private name."""
    found: set[tuple[str, str, str, int]] = set()
    for i in co.imports:
        if i.target == i.source:
            continue
        for n in i.names:
            # ``from pkg import _mod`` names a (package-private) module, not a private name
            if _private(n) and not i.target.endswith(f".{n}"):
                found.add((co.rel(i.source), i.target, n, i.line))
    # attribute use on a module imported by name: ``from optiforge.x import m; m._y``
    for name, tree in co.trees.items():
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in co.modules:
                        aliases[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in co.modules:
                        aliases[a.asname or a.name] = full
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _private(node.attr)
                and aliases[node.value.id] != name
            ):
                found.add((co.rel(name), aliases[node.value.id], node.attr, node.lineno))
    return found


def fmt_skips(co: Checkout) -> int:
    """``# fmt: skip`` comments under optiforge/."""
    n = 0
    for path in co.modules.values():
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if tok.type == tokenize.COMMENT and tok.string.lstrip("# ").startswith("fmt: skip"):
                n += 1
    return n


BASE_PREFIXES = tuple(
    f"optiforge.{p}"
    for p in (
        "solvers",
        "kernels",
        "llm",
        "sandboxes",
        "memory",
        "tools",
        "runs",
        "config",
        "limits",
        "deadline",
        "doctor",
        "errors",
        "evals.protocol",
        "agents.kit",
        "agents.spec",
    )
)


def files_to_understand(co: Checkout) -> dict[str, list[str]]:
    """Per agent: its own files plus the non-kit, non-base optiforge modules they import."""
    out: dict[str, list[str]] = {}
    for agent in agent_dirs(co):
        prefix = f"optiforge.agents.{agent}"
        own = {m for m in co.modules if m == prefix or m.startswith(prefix + ".")}
        extra = {
            i.target
            for i in co.imports
            if i.source in own
            and i.target not in own
            and i.target not in {"optiforge", "optiforge.agents"}
            and not any(i.target == p or i.target.startswith(p + ".") for p in BASE_PREFIXES)
        }
        out[agent] = sorted(co.rel(m) for m in own | extra if m in co.modules)
    return out


def files_of_the_run(co: Checkout) -> dict[str, list[str]]:
    """Per agent: the modules a reader follows from its spec (``agents/<agent>/__init__``)
    through run-time imports (file- or function-level, not ``TYPE_CHECKING``), stopping at
    kit and base modules: what one opens to understand what a run does. The agent's CLI
    verbs (``cli.py``, named by a string in its spec) and test doubles (``testing.py``) are
    not on that path, unless the run imports them."""
    out: dict[str, list[str]] = {}
    edges: dict[str, set[str]] = {}
    for i in co.imports:
        if not i.type_only:
            edges.setdefault(i.source, set()).add(i.target)

    def base(m: str) -> bool:
        return m in {"optiforge", "optiforge.agents"} or any(
            m == p or m.startswith(p + ".") for p in BASE_PREFIXES
        )

    for agent in agent_dirs(co):
        start = f"optiforge.agents.{agent}"
        seen, todo = {start}, [start]
        while todo:
            for t in edges.get(todo.pop(), ()):
                if t in co.modules and t not in seen and not base(t):
                    seen.add(t)
                    todo.append(t)
        out[agent] = sorted(co.rel(m) for m in seen)
    return out


# ----------------------------------------------------------------------------------------


def counts(root: Path) -> dict[str, object]:
    """Every count, as a JSON-able dict."""
    co = Checkout.load(root)
    builders, closures, graph_closures = agent_builders(co)
    exact, task_any, mention = any_params(co, "optiforge.agents")
    file_circles = import_circles(co, function_level=False)
    all_circles = import_circles(co, function_level=True)
    typed_circles = import_circles(co, function_level=True, type_checking=True)
    cli = cli_agent_imports(co)
    reads, read_files = summary_reads(co)
    understand = files_to_understand(co)
    run_files = files_of_the_run(co)
    return {
        "checkout": str(root),
        "closure_nodes": closures,
        "closure_graph_nodes": graph_closures,
        "any_params_agents": exact,
        "task_any_params_agents": task_any,
        "annotations_mentioning_any_agents": mention,
        "probes_agents_harness": probes(co, "optiforge.agents", "optiforge.harness"),
        "probes_kit": probes(co, "optiforge.agents.kit"),
        "import_circles_file_level": len(file_circles),
        "import_circles_with_function_level": len(all_circles),
        "import_circles_with_type_checking": len(typed_circles),
        "circles_file_level": file_circles,
        "circles_with_function_level": all_circles,
        "circles_with_type_checking": typed_circles,
        "cli_agent_internal_imports": len(cli),
        "cli_agent_internal_import_list": sorted(
            f"{co.rel(i.source)}:{i.line} {i.target}" for i in cli
        ),
        "summary_string_key_reads": reads,
        "summary_string_key_files": len(read_files),
        "summary_string_key_file_list": read_files,
        "private_name_uses": len(private_name_uses(co)),
        "fmt_skip": fmt_skips(co),
        "builders": {
            a: {"function": b.function, "lines": b.lines, "closures": b.closures}
            for a, b in builders.items()
        },
        "files_to_understand": {a: len(fs) for a, fs in understand.items()},
        "files_to_understand_list": understand,
        "files_of_the_run": {a: len(fs) for a, fs in run_files.items()},
        "files_of_the_run_list": run_files,
    }


def _print(c: dict[str, object]) -> None:
    print(f"== {c['checkout']}")
    scalar = [k for k, v in c.items() if isinstance(v, int)]
    for k in scalar:
        print(f"  {k:40s} {c[k]}")
    for key in ("circles_file_level", "circles_with_function_level", "circles_with_type_checking"):
        print(f"  {key}:")
        for comp in c[key]:  # type: ignore[attr-defined]
            print(f"    {len(comp)}: {', '.join(comp)}")
    print("  builder per agent (longest function of agent.py: lines / closures):")
    for a, b in c["builders"].items():  # type: ignore[attr-defined]
        print(f"    {a:18s} {b['function']:18s} {b['lines']:4d} / {b['closures']}")
    print("  files to open to understand an agent (all its files + what they import /")
    print("  only the modules its run follows from the spec, files_of_the_run):")
    for a, n in c["files_to_understand"].items():  # type: ignore[attr-defined]
        print(f"    {a:18s} {n:3d} / {c['files_of_the_run'][a]}")  # type: ignore[index]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkouts", nargs="*", type=Path, default=[Path(__file__).parent.parent])
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--lists", action="store_true", help="with the table: print the lists")
    args = p.parse_args(argv)
    results = [counts(c.resolve()) for c in args.checkouts]
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for c in results:
        _print(c)
        if args.lists:
            for key in (
                "cli_agent_internal_import_list",
                "summary_string_key_file_list",
            ):
                print(f"  {key}:")
                for item in c[key]:  # type: ignore[attr-defined]
                    print(f"    {item}")
            for a, fs in c["files_to_understand_list"].items():  # type: ignore[attr-defined]
                print(f"  {a}: {' '.join(fs)}")
            for a, fs in c["files_of_the_run_list"].items():  # type: ignore[attr-defined]
                print(f"  run of {a}: {' '.join(fs)}")
    if len(results) == 2:
        a, b = results
        print("== before -> after")
        for k in a:
            if isinstance(a[k], int):
                print(f"  {k:40s} {a[k]} -> {b[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
