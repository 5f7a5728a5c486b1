"""Static checks on a KernelArena candidate's source (run before anything executes).

The harness also checks at run time; this layer rejects, with a one-line reason,
sources that try to leave the rules: delegate to torch (``torch.softmax``,
``torch.nn.functional``, ``@`` on tensors, tensor methods such as ``x.sum()``), patch
or read the timer, reach the harness (its files, ``__main__``, ``sys.modules``,
``gc``), or escape the module (``exec``, ``__import__``, dunder attributes, ``os``).
"""

from __future__ import annotations

import ast

from optiforge.errors import InvalidCandidate

ALLOWED_IMPORTS = frozenset({"torch", "triton", "triton.language", "math", "__future__", "typing",
                             "optiforge.kernels", "optiforge.kernels.vector", "optiforge.kernels.softmax",
                             "optiforge.kernels.norms", "optiforge.kernels.matmul", "optiforge.kernels.attention"})  # fmt: skip
#: ``torch.X`` attributes a candidate may use outside kernels: allocation, dtypes, device queries.
ALLOWED_TORCH = frozenset({"empty", "empty_like", "zeros", "zeros_like", "full", "full_like", "ones", "ones_like",
                           "empty_strided", "float16", "float32", "bfloat16", "float64", "int8", "int16", "int32", "int64",
                           "uint8", "bool", "Tensor", "dtype", "device", "Size", "cuda.is_available",
                           "cuda.get_device_properties", "cuda.get_device_capability", "cuda.current_device",
                           "finfo", "iinfo", "cdiv"})  # fmt: skip
#: Tensor methods that compute (forbidden outside ``@triton.jit`` functions).
COMPUTE_METHODS = frozenset({"softmax", "log_softmax", "sum", "mean", "amax", "amin", "max", "min", "matmul", "mm",
                             "bmm", "exp", "log", "relu", "gelu", "sigmoid", "tanh", "add", "sub", "mul", "div",
                             "addmm", "norm", "var", "std", "cumsum", "logsumexp", "clamp", "pow", "sqrt", "rsqrt",
                             "abs", "baddbmm", "einsum", "silu", "neg", "where", "maximum", "minimum", "dot",
                             "layer_norm", "linear", "add_", "mul_", "div_", "sub_", "exp_", "relu_", "copy_",
                             "addcmul", "lerp", "erf",
                             # leaving torch for host Python/numpy is computing outside Triton too
                             "numpy", "tolist", "__array__", "__dlpack__"})  # fmt: skip
FORBIDDEN_NAMES = frozenset({"__import__", "eval", "exec", "compile", "open", "globals", "locals", "vars",
                             "getattr", "setattr", "delattr", "__builtins__", "__main__", "breakpoint",
                             "memoryview", "reference", "references", "REFERENCES", "harness"})  # fmt: skip
FORBIDDEN_MODULES = frozenset({"sys", "os", "importlib", "inspect", "gc", "ctypes", "subprocess", "builtins",
                               "threading", "multiprocessing", "time", "pathlib", "io", "shutil", "socket",
                               "pickle", "json", "signal", "atexit", "functools", "weakref"})  # fmt: skip
#: Attributes that reach the interpreter, the harness or frames whatever object they hang
#: off (``torch.sys.modules[...]``, ``triton.os``, ``err.__traceback__.tb_frame``...).
ESCAPE_ATTRS = frozenset({"modules", "_getframe", "f_back", "f_globals", "f_locals", "f_code", "tb_frame",
                          "gi_frame", "cr_frame", "ag_frame", "_C", "_dynamo", "library", "_dispatch_library",
                          "_thread", "_signal", "_posixsubprocess", "_imp",
                          # the harness's traffic counter and the interpreter it wraps
                          "traffic", "_Patch", "interpreter", "InterpreterBuilder", "GridExecutor",
                          "interpreter_builder"})  # fmt: skip
TIMER_NAMES = frozenset({"perf_counter", "perf_counter_ns", "do_bench", "Event", "elapsed_time", "synchronize",
                         "monotonic", "process_time"})  # fmt: skip


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _root(node: ast.AST) -> str | None:
    """The name an attribute/subscript/call chain starts from (``torch`` in ``torch.sys.modules["x"].y``)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _aliases(tree: ast.Module, modules: dict[str, str]) -> dict[str, str]:
    """Names bound (``=``, ``:=``, ``for``, ``with ... as``) to a module or to something
    reached from one, as far as the source shows: ``t = torch`` makes ``t`` an alias of
    torch, ``m = torch.sys.modules["__main__"]`` an alias of a module too."""
    out = dict(modules)
    changed = True
    while changed:
        changed = False
        for node in ast.walk(tree):
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                pairs = [(node.target, node.value)]
            elif isinstance(node, ast.For | ast.comprehension):
                pairs = [(node.target, node.iter)]
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                pairs = [(node.optional_vars, node.context_expr)]
            for target, value in pairs:
                root = _root(value)
                if root not in out:
                    continue
                for t in ast.walk(target):
                    if isinstance(t, ast.Name) and t.id not in out:
                        out[t.id] = out[root]
                        changed = True
    return out


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any(_dotted(d.func if isinstance(d, ast.Call) else d).split(".")[-1] in {"jit", "autotune", "heuristics"}
               for d in fn.decorator_list)  # fmt: skip


def _called(tree: ast.Module, attr: ast.Attribute) -> bool:
    """Is ``attr`` the callee of a call, or the head of a longer dotted name?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.func is attr:
            return True
        if isinstance(node, ast.Attribute) and node.value is attr:
            return True
    return False


def check_candidate_source(code: str, entry_point: str = "launch") -> ast.Module:
    """Parse and vet ``code``; raise InvalidCandidate with the first violation found."""
    if not isinstance(code, str) or not code.strip():
        raise InvalidCandidate("no code in candidate")
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        raise InvalidCandidate(f"syntax error: {err.msg} (line {err.lineno})") from err
    top = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if entry_point not in top:
        raise InvalidCandidate(
            f"candidate does not define a top-level `def {entry_point}(*inputs) -> Tensor`"
        )
    aliases: dict[str, str] = {}  # local name -> module it names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name not in ALLOWED_IMPORTS:
                    raise InvalidCandidate(
                        f"imports {a.name} (allowed: {', '.join(sorted(ALLOWED_IMPORTS))})"
                    )
                aliases[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            for a in node.names:
                full = f"{mod}.{a.name}"
                if mod not in ALLOWED_IMPORTS and full not in ALLOWED_IMPORTS:
                    raise InvalidCandidate(
                        f"imports from {mod} (allowed: {', '.join(sorted(ALLOWED_IMPORTS))})"
                    )
                if mod == "torch" and a.name not in ALLOWED_TORCH:
                    raise InvalidCandidate(
                        f"imports torch.{a.name} (a torch op; compute with Triton)"
                    )
                if a.name.startswith("reference") or a.name in {"registry", "KERNELS"}:
                    raise InvalidCandidate(f"imports {full} (a reference implementation)")
                aliases[a.asname or a.name] = full if full in ALLOWED_IMPORTS else mod
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES or node.id in FORBIDDEN_MODULES:
                raise InvalidCandidate(f"uses forbidden name `{node.id}`")
            if node.id in TIMER_NAMES:
                raise InvalidCandidate(f"touches the timer (`{node.id}`)")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr.endswith("__"):
                raise InvalidCandidate(f"accesses dunder attribute `{node.attr}`")
            if node.attr in FORBIDDEN_MODULES or node.attr in ESCAPE_ATTRS:
                raise InvalidCandidate(
                    f"reaches `{node.attr}` through an attribute ({_dotted(node) or '...'})"
                )
            if node.attr in FORBIDDEN_NAMES:
                raise InvalidCandidate(f"uses forbidden name `{node.attr}` through an attribute")
            if node.attr in TIMER_NAMES:
                raise InvalidCandidate(f"touches the timer (`{_dotted(node) or node.attr}`)")
            if node.attr.startswith("reference"):
                raise InvalidCandidate(
                    f"uses `{_dotted(node) or node.attr}` (a reference implementation)"
                )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            low = node.value.lower()
            if any(
                s in low
                for s in (
                    "harness",
                    "references.py",
                    "spec.json",
                    "result.json",
                    "reference_kernel",
                )
            ):
                raise InvalidCandidate(f"string literal names a harness file ({node.value[:40]!r})")
        elif isinstance(node, ast.Global | ast.Nonlocal):
            raise InvalidCandidate(
                f"uses `{type(node).__name__.lower()}` state (cached results are not allowed)"
            )
    jit_nodes = {
        id(n)
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef) and _is_jit(fn)
        for n in ast.walk(fn)
    }
    aliases = _aliases(tree, aliases)
    torch_names = {k for k, v in aliases.items() if v == "torch"}
    module_names = set(aliases)
    for node in ast.walk(tree):
        if id(node) in jit_nodes:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            raise InvalidCandidate("uses the @ operator outside a Triton kernel (a torch matmul)")
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            head, _, rest = dotted.partition(".")
            if (
                head in torch_names
                and rest
                and rest.split(".")[0]
                in {
                    "nn",
                    "ops",
                    "_C",
                    "library",
                    "overrides",
                    "testing",
                    "backends",
                    "fx",
                    "jit",
                }
            ):
                raise InvalidCandidate(
                    f"uses torch.{rest} (torch modules/ops are not allowed; compute with Triton)"
                )
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            head, _, rest = name.partition(".")
            if head in torch_names and rest and rest not in ALLOWED_TORCH:
                raise InvalidCandidate(
                    f"calls torch.{rest} (a torch op; the kernel must compute with Triton)"
                )
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in COMPUTE_METHODS
                and head not in module_names
            ):
                raise InvalidCandidate(
                    f"calls tensor method .{node.func.attr}() outside a Triton kernel (a torch op)"
                )
        if isinstance(node, ast.Attribute) and _root(node) in torch_names:
            head, _, rest = _dotted(node).partition(".")
            parent = node.value
            if (
                rest
                and head
                and rest not in ALLOWED_TORCH
                and isinstance(parent, ast.Name)
                and not _called(tree, node)
            ):
                raise InvalidCandidate(f"takes torch.{rest} as a value (an alias of a torch op)")
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if not isinstance(sub, ast.Attribute | ast.Subscript):
                        continue
                    root = _root(sub)
                    if root in module_names:
                        raise InvalidCandidate(
                            f"assigns to {_dotted(sub) or root + '[...]'} (monkeypatching a module, "
                            "possibly through an alias)"
                        )
                    if isinstance(sub, ast.Attribute) and root != "self":
                        raise InvalidCandidate(
                            f"assigns to attribute {_dotted(sub) or sub.attr} (only `self.x = ...` is allowed)"
                        )
    return tree
