"""Static check of a KernelArena candidate's source: an allow-list grammar, checked on the AST.

Everything not written below is rejected with a one-line reason naming the construct.
The harness also guards the run (``evals/suites/kernelarena/runner.py``); this layer
makes sure the only code that touches tensor data is Triton's.

Module (top level), in any order:

* a docstring; ``from __future__ import annotations``;
* imports: ``import torch``, ``import triton``, ``import triton.language as <alias>``,
  ``import math``, ``from triton import language as <alias>``, and the library kernels
  ``from optiforge.kernels import vector, softmax, norms, matmul, attention`` (or
  ``import optiforge.kernels.<lib> as <alias>``);
* constants: ``NAME = <const>`` where ``<const>`` is a literal, a tuple/list/dict/set of
  constants, arithmetic on constants, an earlier constant, ``triton.Config(<const>...)``,
  or a list comprehension over constants (autotune config lists); ``PARAMS = {...}``;
* Triton kernels: ``def`` decorated with ``@triton.jit`` (``@triton.jit(<const kwargs>)``),
  optionally under ``@triton.autotune(<const kwargs>)``, where ``triton`` is the imported
  module, never a rebound name (``triton.heuristics`` is not in the grammar: its functions
  get the launch's tensors on the host);
* host functions: ``def launch(...)`` and helper ``def``\\ s it calls (no decorators).

Kernel bodies: assignments (names, tuples of names), augmented assignments, ``for`` over
``range``/``tl.range``/``tl.static_range``, ``while``, ``if``, ``return``, ``pass``,
``break``, ``continue``, ``assert`` and expression statements; expressions made of
constants, names (parameters, locals, module constants, other kernels, the ``tl`` alias),
arithmetic, comparisons, boolean ops, ``x if c else y``, tuples/lists, subscripts and
slices, calls of ``tl.<builtin>`` (``tl.__all__``), ``tl.math.*``, ``tl.extra[.cuda].
libdevice.*``, other kernels and ``range``/``min``/``max``/``float``/``int``/``len``, and
``.`` access only to the Triton tensor/descriptor/dtype members in :data:`KERNEL_ATTRS`.

Host functions are typed: every value is a *tensor* or a *scalar* (ints, floats, dtypes,
devices, tuples of them), and tensors may only be

* made: ``torch.empty/zeros/ones/full[_like]``, ``torch.empty_strided``;
* re-laid out: ``.contiguous() .expand() .view() .reshape() .t() .transpose() .permute()
  .unsqueeze() .squeeze()`` (copies and views: no arithmetic);
* read for metadata: ``.shape .dtype .device .is_cuda .ndim .stride() .size() .numel()
  .dim() .element_size() .is_contiguous()`` (all scalars);
* passed to a kernel launch ``kernel[grid](...)``, to a library kernel
  (:data:`LIBRARY_LAUNCHERS`), to a helper, or returned.

Scalars may be combined freely (arithmetic, comparisons, ``min``/``max``/``abs``/
``int``/``len``, ``math.*``, ``triton.cdiv``/``next_power_of_2``, subscripts), and drive
``if`` / ``x if c else y`` / ``for i in range(...)``. The grid is a scalar tuple, or a
nested ``def grid(meta)``/``lambda meta:`` returning one, which reads ``meta`` only as
``meta["<constexpr parameter of a kernel>"]`` (``meta`` also holds the launch's tensors). Statements: assignment to new
local names, ``if``, ``for`` over ``range``, ``return``, and expression statements that
are launches (or ``triton.set_allocator(<helper>)``). So a tensor never reaches host
arithmetic, ``bool``, ``int``, ``.numpy()``, ``.tolist()``, ``.item()`` or a torch op;
``match``, classes, lambdas (outside grids), comprehensions, ``try``, ``with``,
``global``, attribute stores and module-level code are not in the grammar at all.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from optiforge.errors import InvalidCandidate

#: Library kernel modules a candidate may import, and the launchers it may call in each.
LIBRARY_LAUNCHERS: dict[str, frozenset[str]] = {
    "vector": frozenset({"add", "mul", "axpby", "relu", "gelu"}),
    "softmax": frozenset({"softmax"}),
    "norms": frozenset({"rmsnorm", "layernorm"}),
    "matmul": frozenset({"matmul"}),
    "attention": frozenset({"attention"}),
}
#: ``torch.<name>(...)`` calls that allocate a tensor (``*_like`` take the model tensor first).
TORCH_ALLOC = frozenset({"empty", "zeros", "ones", "full", "empty_strided"})
TORCH_ALLOC_LIKE = frozenset({"empty_like", "zeros_like", "ones_like", "full_like"})
#: ``torch.<name>`` values that are scalars: dtypes.
TORCH_DTYPES = frozenset({"float16", "float32", "bfloat16", "float64", "int8", "int16", "int32", "int64",
                          "uint8", "bool", "half", "float", "long", "int"})  # fmt: skip
#: ``torch.cuda.<name>(...)`` device queries (scalar results).
TORCH_CUDA_QUERIES = frozenset({"is_available", "get_device_properties", "get_device_capability",
                                "current_device", "device_count"})  # fmt: skip
#: Attributes of a device-properties object (``torch.cuda.get_device_properties(d).X``).
DEVICE_PROPS = frozenset({"multi_processor_count", "total_memory", "max_threads_per_multi_processor",
                          "major", "minor", "L2_cache_size"})  # fmt: skip
TENSOR_META_ATTRS = frozenset({"shape", "dtype", "device", "is_cuda", "ndim"})
TENSOR_META_METHODS = frozenset({"stride", "size", "numel", "dim", "element_size", "is_contiguous"})
TENSOR_LAYOUT_METHODS = frozenset({"contiguous", "expand", "view", "reshape", "t", "transpose", "permute",
                                   "unsqueeze", "squeeze"})  # fmt: skip
TRITON_SCALAR_FNS = frozenset({"cdiv", "next_power_of_2"})
MATH_FNS = frozenset(
    {"sqrt", "log", "log2", "exp", "ceil", "floor", "pi", "e", "inf", "isqrt", "prod"}
)
HOST_BUILTINS = frozenset({"min", "max", "abs", "int", "float", "len", "range", "tuple"})
KERNEL_BUILTINS = frozenset({"range", "min", "max", "float", "int", "len"})
#: Members of Triton values (``tl.tensor``, tensor descriptors, block pointers, dtypes) a
#: kernel body may access. Interpreter internals (``handle``, ``data``) are not among them.
KERNEL_ATTRS = frozenset({
    "to", "dtype", "element_ty", "shape", "T", "numel", "reshape", "view", "trans", "permute", "broadcast_to",
    "expand_dims", "split", "join", "ravel", "sum", "max", "min", "argmax", "argmin", "cumsum", "cumprod",
    "sort", "flip", "reduce", "associative_scan", "histogram", "xor_sum", "abs", "exp", "exp2", "log", "log2",
    "sqrt", "rsqrt", "sin", "cos", "sigmoid", "softmax", "logical_and", "logical_or", "load", "store",
    "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas", "atomic_and", "atomic_or",
    "atomic_xor", "gather", "scatter", "is_fp16", "is_fp32", "is_fp64", "is_bf16", "is_floating", "is_int",
    "is_int_signed", "is_int_unsigned", "is_ptr", "is_bool", "primitive_bitwidth", "value", "block_shape",
    "base", "strides", "advance", "cast",
})  # fmt: skip
KERNEL_STMTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.Return, ast.Pass,
                ast.Break, ast.Continue, ast.Assert, ast.Expr)  # fmt: skip
KERNEL_EXPRS = (ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
                ast.Tuple, ast.List, ast.Subscript, ast.Slice, ast.Call, ast.Attribute, ast.keyword,
                ast.Starred)  # fmt: skip
_OPS = (ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)
_BUILTIN_NAMES = frozenset(dir(builtins))
#: Names a type annotation of a host function may use (annotations run at ``def`` time
#: unless ``from __future__ import annotations``, so they are code too).
ANNOTATION_NAMES = frozenset({"int", "float", "bool", "str", "tuple", "list", "dict", "None"})

TENSOR, SCALAR = "tensor", "scalar"
Kind = Any  # TENSOR | SCALAR | ("tuple", [Kind, ...]) | ("tensors",) | ("grid",) | ("props",)
TENSORS: Kind = ("tensors",)
GRID: Kind = ("grid",)
PROPS: Kind = ("props",)
META: Kind = ("meta",)
"""A grid function's ``meta`` (the launch's arguments, tensors included): only
``meta["<constexpr>"]`` may be read from it."""


def _fail(node: ast.AST | None, msg: str) -> InvalidCandidate:
    line = f" (line {node.lineno})" if node is not None and hasattr(node, "lineno") else ""
    return InvalidCandidate(msg + line)


def _what(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - a description only
        text = type(node).__name__
    text = " ".join(text.split())  # one line: reasons are one line
    return text if len(text) <= 60 else text[:57] + "..."


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _tl_names() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(``tl.<name>`` builtins, ``tl.math.<name>``, libdevice functions) of the installed Triton."""
    import types

    import triton.language as tl

    top = frozenset(n for n in tl.__all__ if not isinstance(getattr(tl, n, None), types.ModuleType))
    mathfns = frozenset(
        n for n in dir(tl.math) if not n.startswith("_") and callable(getattr(tl.math, n))
    )
    try:
        from triton.language.extra import libdevice

        libd = frozenset(n for n in dir(libdevice) if not n.startswith("_"))
    except ImportError:  # pragma: no cover - a Triton without libdevice
        libd = frozenset()
    return top, mathfns, libd


class _Module:
    """What the top level binds: module aliases, constants, kernels, host functions."""

    def __init__(self) -> None:
        self.torch: set[str] = set()
        self.triton: set[str] = set()
        self.tl: set[str] = set()
        self.math: set[str] = set()
        self.libs: dict[str, str] = {}  # alias -> library module name
        self.consts: set[str] = set()
        self.kernels: set[str] = set()
        self.hosts: dict[str, ast.FunctionDef] = {}
        self.constexprs: set[str] = {"num_warps", "num_stages", "num_ctas"}
        """Keys a grid function may read from ``meta`` (kernels' constexpr parameters)."""

    def bind(self, name: str, node: ast.AST) -> None:
        """Refuse a top-level name that shadows a builtin or an earlier binding."""
        if name in self.bound() or name in _BUILTIN_NAMES:
            raise _fail(node, f"top level rebinds `{name}`")

    def bound(self) -> set[str]:
        return (self.torch | self.triton | self.tl | self.math | set(self.libs) | self.consts | self.kernels
                | set(self.hosts))  # fmt: skip


def check_candidate_source(code: str, entry_point: str = "launch") -> ast.Module:
    """Parse ``code`` and check it against the grammar above; raise InvalidCandidate with
    the first construct outside it."""
    if not isinstance(code, str) or not code.strip():
        raise InvalidCandidate("no code in candidate")
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        raise InvalidCandidate(f"syntax error: {err.msg} (line {err.lineno})") from err
    mod = _Module()
    kernels: list[ast.FunctionDef] = []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Import | ast.ImportFrom):
            _import(node, mod)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            _module_const(node, mod)
        elif isinstance(node, ast.FunctionDef):
            mod.bind(node.name, node)
            if node.decorator_list:
                _decorators(node, mod)
                mod.kernels.add(node.name)
                kernels.append(node)
            else:
                mod.hosts[node.name] = node
        else:
            raise _fail(node, f"top-level {type(node).__name__} `{_what(node)}` is not allowed (a module "
                              "holds imports, constants, Triton kernels and host launch functions only)")  # fmt: skip
    if entry_point not in mod.hosts:
        raise InvalidCandidate(
            f"candidate does not define a top-level `def {entry_point}(*inputs) -> Tensor`"
        )
    if not mod.triton and kernels:
        raise InvalidCandidate("kernels need `import triton`")
    tl_names = _tl_names()
    for fn in kernels:
        _KernelChecker(mod, fn, tl_names).check()
    hosts = _HostChecker(mod)
    if hosts.function(mod.hosts[entry_point], None) != TENSOR:
        raise _fail(mod.hosts[entry_point], f"`{entry_point}` must return one output tensor")
    if not hosts.launches:
        raise _fail(mod.hosts[entry_point], f"`{entry_point}` launches no Triton kernel (the output must be "
                                            "computed by one)")  # fmt: skip
    for name, fn in mod.hosts.items():
        if name not in hosts.checked:
            raise _fail(
                fn,
                f"host function `{name}` is never called from `{entry_point}` (dead code is not allowed)",
            )
    return tree


# -- module level -------------------------------------------------------------------------


def _import(node: ast.Import | ast.ImportFrom, mod: _Module) -> None:
    def bind(alias: str, kind: set[str]) -> None:
        mod.bind(alias, node)
        kind.add(alias)

    if isinstance(node, ast.Import):
        for a in node.names:
            name, alias = a.name, a.asname
            if name == "torch" and alias in (None, "torch"):
                bind("torch", mod.torch)
            elif name == "triton" and alias in (None, "triton"):
                bind("triton", mod.triton)
            elif name == "math" and alias in (None, "math"):
                bind("math", mod.math)
            elif name == "triton.language" and alias:
                bind(alias, mod.tl)
            elif (
                name.startswith("optiforge.kernels.")
                and name.split(".")[-1] in LIBRARY_LAUNCHERS
                and alias
            ):
                mod.bind(alias, node)
                mod.libs[alias] = name.split(".")[-1]
            else:
                raise _fail(node, f"imports {name}" + (f" as {alias}" if alias else "") + " (allowed: torch, "
                            "triton, `triton.language as tl`, math, optiforge.kernels library modules)")  # fmt: skip
        return
    modname = node.module or ""
    for a in node.names:
        alias = a.asname or a.name
        if modname == "__future__" and a.name == "annotations":
            continue
        if modname == "triton" and a.name == "language":
            bind(alias, mod.tl)
        elif modname == "optiforge.kernels" and a.name in LIBRARY_LAUNCHERS:
            mod.bind(alias, node)
            mod.libs[alias] = a.name
        else:
            raise _fail(node, f"imports {a.name} from {modname or '.'} (allowed: `from optiforge.kernels import "
                              f"{', '.join(sorted(LIBRARY_LAUNCHERS))}`, `from triton import language`)")  # fmt: skip


def _module_const(node: ast.Assign | ast.AnnAssign, mod: _Module) -> None:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if node.value is None:
        raise _fail(node, "a bare annotation at top level is not allowed")
    names: list[str] = []
    for t in targets:
        elts = t.elts if isinstance(t, ast.Tuple) else [t]
        for x in elts:
            if not isinstance(x, ast.Name):
                raise _fail(
                    node,
                    f"top-level assignment to `{_what(t)}` (only `NAME = <constant>` is allowed)",
                )
            mod.bind(x.id, node)
            names.append(x.id)
    if isinstance(node, ast.AnnAssign):
        _annotation(node.annotation, mod)
    _const(node.value, mod, set())
    mod.consts.update(names)


def _const(e: ast.AST, mod: _Module, local: set[str]) -> None:
    """A constant expression: literals, containers, arithmetic, earlier constants, triton.Config."""
    if isinstance(e, ast.Constant):
        return
    if isinstance(e, ast.Name):
        if e.id in mod.consts or e.id in local:
            return
        raise _fail(e, f"`{e.id}` in a constant is not an earlier constant")
    if isinstance(e, ast.Tuple | ast.List | ast.Set):
        for x in e.elts:
            _const(x.value if isinstance(x, ast.Starred) else x, mod, local)
        return
    if isinstance(e, ast.Dict):
        for k, v in zip(e.keys, e.values, strict=True):
            if k is None:
                raise _fail(e, "`**` in a constant dict is not allowed")
            _const(k, mod, local)
            _const(v, mod, local)
        return
    if isinstance(e, ast.BinOp) and not isinstance(e.op, ast.MatMult):
        _const(e.left, mod, local)
        _const(e.right, mod, local)
        return
    if isinstance(e, ast.UnaryOp):
        _const(e.operand, mod, local)
        return
    config = _dotted(e.func) if isinstance(e, ast.Call) else None
    if (
        isinstance(e, ast.Call)
        and config
        and len(config) == 2
        and config[0] in mod.triton
        and config[1] == "Config"
    ):
        for a in e.args:
            _const(a, mod, local)
        for kw in e.keywords:
            if kw.arg is None:
                raise _fail(e, "`**` in triton.Config is not allowed")
            _const(kw.value, mod, local)
        return
    if isinstance(e, ast.ListComp):
        names = set(local)
        for g in e.generators:
            if g.is_async or g.ifs:
                raise _fail(e, "a constant comprehension takes no `if` and no `async`")
            _const(g.iter, mod, names)
            for t in ast.walk(g.target):
                if isinstance(t, ast.Name):
                    names.add(t.id)
                elif not isinstance(t, ast.Tuple | ast.List | ast.expr_context):
                    raise _fail(
                        e,
                        f"comprehension target `{_what(g.target)}` is not a name or tuple of names",
                    )
        _const(e.elt, mod, names)
        return
    raise _fail(
        e, f"`{_what(e)}` is not a constant expression (literals, arithmetic, triton.Config)"
    )


def _annotation(e: ast.AST, mod: _Module) -> None:
    """A type annotation: builtin scalar types, ``torch.Tensor/dtype/device``, ``tl.constexpr``,
    unions (``|``), subscripts and string or None constants."""
    if isinstance(e, ast.Constant) and (e.value is None or isinstance(e.value, str)):
        return
    if isinstance(e, ast.Name) and e.id in ANNOTATION_NAMES:
        return
    path = _dotted(e)
    if path and len(path) == 2 and ((path[0] in mod.torch and path[1] in ("Tensor", "dtype", "device"))
                                    or (path[0] in mod.tl and path[1] in ("constexpr", "tensor"))):  # fmt: skip
        return
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitOr):
        _annotation(e.left, mod)
        _annotation(e.right, mod)
        return
    if isinstance(e, ast.Subscript):
        _annotation(e.value, mod)
        for x in e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]:
            _annotation(x, mod)
        return
    raise _fail(
        e,
        f"annotation `{_what(e)}` is not a type (int, float, bool, torch.Tensor, tl.constexpr...)",
    )


def _annotations(fn: ast.FunctionDef | ast.Lambda, mod: _Module) -> None:
    a = fn.args
    for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []),
              *([a.kwarg] if a.kwarg else [])]:  # fmt: skip
        if p.annotation is not None:
            _annotation(p.annotation, mod)
    if isinstance(fn, ast.FunctionDef) and fn.returns is not None:
        _annotation(fn.returns, mod)


def _decorators(fn: ast.FunctionDef, mod: _Module) -> None:
    """``@triton.jit`` innermost, optionally under ``@triton.autotune(<constants>)``.

    ``triton.heuristics`` is not in the grammar: its functions receive the kernel's
    arguments, tensors included, on the host (no reference, template or example uses it)."""
    names: list[str] = []
    for d in fn.decorator_list:
        call = d if isinstance(d, ast.Call) else None
        path = _dotted(call.func if call else d)
        if (
            not path
            or len(path) != 2
            or path[0] not in mod.triton
            or path[1] not in ("jit", "autotune")
        ):
            raise _fail(
                d,
                f"decorator `@{_what(d)}` is not triton.jit/triton.autotune of the imported triton",
            )
        names.append(path[1])
        if call is None:
            if path[1] != "jit":
                raise _fail(d, f"`@triton.{path[1]}` needs its arguments")
            continue
        for a in call.args:
            _const(a, mod, set())
        for k in call.keywords:
            if k.arg is None:
                raise _fail(d, "`**` in a decorator is not allowed")
            _const(k.value, mod, set())
    if names[-1] != "jit" or names.count("jit") != 1:
        raise _fail(fn, f"`{fn.name}`: @triton.jit must be the innermost decorator, once")
    for p in fn.args.args:  # the names a grid function may read from its ``meta`` dict
        path = _dotted(p.annotation) if p.annotation is not None else None
        if path and len(path) == 2 and path[1] == "constexpr":
            mod.constexprs.add(p.arg)


# -- kernels --------------------------------------------------------------------------------


class _KernelChecker:
    """Allow-list for a ``@triton.jit`` body: Triton builtins and arithmetic, nothing of the host."""

    def __init__(
        self, mod: _Module, fn: ast.FunctionDef, tl_names: tuple[frozenset[str], ...]
    ) -> None:
        self.mod, self.fn = mod, fn
        self.top, self.mathfns, self.libdevice = tl_names
        self.locals: set[str] = set()

    def check(self) -> None:
        a = self.fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise _fail(self.fn, f"kernel `{self.fn.name}`: only plain parameters are allowed")
        _annotations(self.fn, self.mod)
        for p in a.args:
            self._bind(p.arg, p)
        for d in a.defaults:
            _const(d, self.mod, set())
        self.body(self.fn.body)

    def _bind(self, name: str, node: ast.AST) -> None:
        if name in self.mod.bound() - self.mod.consts or name in _BUILTIN_NAMES:
            raise _fail(
                node, f"kernel `{self.fn.name}` rebinds `{name}` (a module name or builtin)"
            )
        self.locals.add(name)

    def target(self, t: ast.AST) -> None:
        if isinstance(t, ast.Name):
            self._bind(t.id, t)
        elif isinstance(t, ast.Tuple | ast.List):
            for x in t.elts:
                self.target(x)
        else:
            raise _fail(t, f"kernel `{self.fn.name}` assigns to `{_what(t)}` (only local names)")

    def body(self, stmts: list[ast.stmt]) -> None:
        for i, s in enumerate(stmts):
            if i == 0 and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
                continue
            self.stmt(s)

    def stmt(self, s: ast.stmt) -> None:
        if not isinstance(s, KERNEL_STMTS):
            raise _fail(
                s,
                f"kernel `{self.fn.name}`: `{type(s).__name__}` statements are not allowed in a kernel",
            )
        if isinstance(s, ast.Assign):
            self.expr(s.value)
            for t in s.targets:
                self.target(t)
        elif isinstance(s, ast.AugAssign):
            self.expr(s.value)
            if not isinstance(s.target, ast.Name) or s.target.id not in self.locals:
                raise _fail(
                    s, f"kernel `{self.fn.name}` updates `{_what(s.target)}` (only local names)"
                )
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.expr(s.value)
            self.target(s.target)
        elif isinstance(s, ast.For):
            it = s.iter
            path = _dotted(it.func) if isinstance(it, ast.Call) else None
            ok = path == ["range"] or (
                path and path[0] in self.mod.tl and path[1:] in (["range"], ["static_range"])
            )
            if not ok:
                raise _fail(
                    s,
                    f"kernel `{self.fn.name}` loops over `{_what(it)}` (range/tl.range/tl.static_range only)",
                )
            self.expr(it)
            self.target(s.target)
            self.body(s.body)
            self.body(s.orelse)
        elif isinstance(s, ast.While | ast.If):
            self.expr(s.test)
            self.body(s.body)
            self.body(s.orelse)
        elif isinstance(s, ast.Return):
            if s.value is not None:
                self.expr(s.value)
        elif isinstance(s, ast.Assert):
            self.expr(s.test)
            if s.msg is not None:
                self.expr(s.msg)
        elif isinstance(s, ast.Expr):
            self.expr(s.value)

    def expr(self, e: ast.AST) -> None:
        for n in ast.walk(e):
            if isinstance(n, _OPS):
                continue
            if not isinstance(n, KERNEL_EXPRS):
                raise _fail(
                    n,
                    f"kernel `{self.fn.name}`: `{type(n).__name__}` expressions are not allowed in a kernel",
                )
            if isinstance(n, ast.Constant) and not isinstance(
                n.value, int | float | str | bool | type(None) | type(...)
            ):
                raise _fail(n, f"kernel `{self.fn.name}`: constant {n.value!r}")
            if isinstance(n, ast.Name):
                ok = (
                    n.id in self.locals
                    or n.id in self.mod.consts
                    or n.id in self.mod.kernels
                    or n.id in self.mod.tl
                )
                ok = ok or (n.id in KERNEL_BUILTINS and self._is_callee(e, n))
                if not ok:
                    raise _fail(n, f"kernel `{self.fn.name}` uses `{n.id}` (not a parameter, local, constant, "
                                   "kernel or tl)")  # fmt: skip
            if isinstance(n, ast.Call):
                self.callee(n)
            if isinstance(n, ast.Attribute):
                self.attribute(n)

    @staticmethod
    def _is_callee(root: ast.AST, name: ast.Name) -> bool:
        return any(isinstance(c, ast.Call) and c.func is name for c in ast.walk(root))

    def callee(self, c: ast.Call) -> None:
        f = c.func
        if isinstance(f, ast.Name):
            if f.id in KERNEL_BUILTINS or f.id in self.mod.kernels:
                return
            raise _fail(
                c,
                f"kernel `{self.fn.name}` calls `{f.id}` (only tl.*, other kernels, range/min/max)",
            )
        if isinstance(f, ast.Attribute):
            return  # the attribute itself is checked (tl path or a Triton value member)
        raise _fail(c, f"kernel `{self.fn.name}` calls `{_what(f)}`")

    def attribute(self, a: ast.Attribute) -> None:
        path = _dotted(a)
        if path and path[0] in self.mod.triton and path[1:] == ["language"]:
            return  # ``triton.language`` is ``tl`` (its member is checked from the longer path)
        if path and path[0] in self.mod.triton and path[1:2] == ["language"]:
            path = ["tl", *path[2:]]
        if path and (path[0] in self.mod.tl or (path[0] == "tl" and self.mod.triton)):
            rest = path[1:]
            ok = (len(rest) == 1 and rest[0] in self.top) or (
                rest[:1] == ["math"] and len(rest) == 2 and rest[1] in self.mathfns
            )
            ok = ok or (rest[:1] == ["extra"] and rest[-2:-1] == ["libdevice"] and len(rest) in (3, 4)
                        and rest[1] in ("libdevice", "cuda", "hip") and rest[-1] in self.libdevice)  # fmt: skip
            # prefixes of an allowed path (``tl.math`` inside ``tl.math.exp``) are visited too
            ok = ok or rest in (["math"], ["extra"], ["extra", "cuda"], ["extra", "hip"], ["extra", "libdevice"],
                                ["extra", "cuda", "libdevice"], ["extra", "hip", "libdevice"])  # fmt: skip
            if not ok:
                raise _fail(
                    a,
                    f"kernel `{self.fn.name}` uses `{'.'.join(path)}` (not a Triton language builtin)",
                )
            return
        if path and path[0] in self.mod.bound() - self.mod.kernels - self.mod.consts:
            raise _fail(a, f"kernel `{self.fn.name}` uses `{'.'.join(path)}` (host modules are not reachable "
                           "from a kernel)")  # fmt: skip
        if a.attr not in KERNEL_ATTRS:
            raise _fail(
                a, f"kernel `{self.fn.name}` reads `.{a.attr}` (not a Triton tensor/dtype member)"
            )


# -- host functions -----------------------------------------------------------------------


class _HostChecker:
    """Typed check of the launch path: tensors are only made, re-laid out, measured and passed."""

    def __init__(self, mod: _Module) -> None:
        self.mod = mod
        self.checked: dict[str, tuple[tuple[Kind, ...], Kind]] = {}
        self.stack: list[str] = []
        self.rets: list[Kind] = []
        self.launches = 0
        """Kernel launches and library kernel calls seen on the launch path."""

    # -- functions
    def function(self, fn: ast.FunctionDef, arg_kinds: list[Kind] | None) -> Kind:
        """Check ``fn`` with its parameters' kinds (None: ``launch``'s own rule); its return kind."""
        a = fn.args
        if a.kwarg or a.kwonlyargs or a.posonlyargs or fn.decorator_list:
            raise _fail(
                fn, f"host function `{fn.name}`: only plain parameters (and *inputs) are allowed"
            )
        _annotations(fn, self.mod)
        params = a.args
        n_def = len(a.defaults)
        env: dict[str, Kind] = {}
        for i, p in enumerate(params):
            has_default = i >= len(params) - n_def
            if arg_kinds is None:
                env[p.arg] = SCALAR if has_default else TENSOR
            elif i < len(arg_kinds):
                env[p.arg] = arg_kinds[i]
            elif has_default:
                env[p.arg] = SCALAR
            else:
                raise _fail(fn, f"`{fn.name}` is called without its parameter `{p.arg}`")
            if p.arg in self.mod.bound() - self.mod.consts or p.arg in _BUILTIN_NAMES:
                raise _fail(
                    p, f"parameter `{p.arg}` of `{fn.name}` shadows a module name or builtin"
                )
        for d in a.defaults:
            self.scalar(d, {})
        if a.vararg:
            if arg_kinds is not None:
                raise _fail(fn, f"helper `{fn.name}` may not take *args")
            env[a.vararg.arg] = TENSORS
        key = tuple(env[p.arg] for p in params)
        if fn.name in self.checked:
            if self.checked[fn.name][0] != key:
                raise _fail(
                    fn, f"`{fn.name}` is called with tensors and scalars in different positions"
                )
            return self.checked[fn.name][1]
        if fn.name in self.stack:
            raise _fail(fn, f"`{fn.name}` is recursive (not allowed)")
        self.stack.append(fn.name)
        self.rets.append(None)
        self.body(fn.body, env, fn.name)
        ret = self.rets.pop()
        self.stack.pop()
        self.checked[fn.name] = (key, ret)
        return ret

    def body(self, stmts: list[ast.stmt], env: dict[str, Kind], where: str) -> None:
        for i, s in enumerate(stmts):
            if i == 0 and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
                continue
            self.stmt(s, env, where)

    def _store(self, t: ast.AST, kind: Kind, env: dict[str, Kind]) -> None:
        if isinstance(t, ast.Name):
            if t.id in self.mod.bound() - self.mod.consts or t.id in _BUILTIN_NAMES:
                raise _fail(t, f"assigns to `{t.id}` (a module name or builtin)")
            if t.id in env and env[t.id] != kind and not (env[t.id] == SCALAR and kind == SCALAR):
                raise _fail(t, f"`{t.id}` changes from {self._k(env[t.id])} to {self._k(kind)}")
            env[t.id] = kind
            return
        if isinstance(t, ast.Tuple | ast.List):
            if kind == SCALAR:
                for x in t.elts:
                    self._store(x, SCALAR, env)
                return
            if kind == TENSORS:
                for x in t.elts:
                    self._store(x, TENSOR, env)
                return
            if isinstance(kind, tuple) and kind[0] == "tuple" and len(kind[1]) == len(t.elts):
                for x, k in zip(t.elts, kind[1], strict=True):
                    self._store(x, k, env)
                return
            raise _fail(t, f"cannot unpack {self._k(kind)} into `{_what(t)}`")
        raise _fail(t, f"assigns to `{_what(t)}` (host code may only bind new local names)")

    @staticmethod
    def _k(kind: Kind) -> str:
        return kind if isinstance(kind, str) else str(kind[0])

    def stmt(self, s: ast.stmt, env: dict[str, Kind], where: str) -> None:
        if isinstance(s, ast.Assign | ast.AnnAssign):
            if s.value is None:
                raise _fail(s, "a bare annotation is not allowed")
            for t in s.targets if isinstance(s, ast.Assign) else [s.target]:
                for x in t.elts if isinstance(t, ast.Tuple | ast.List) else [t]:
                    if not isinstance(x, ast.Name):  # before the value: the store is the violation
                        raise _fail(
                            s, f"assigns to `{_what(x)}` (host code may only bind new local names)"
                        )
            kind = self.value(s.value, env)
            for t in s.targets if isinstance(s, ast.Assign) else [s.target]:
                self._store(t, kind, env)
        elif isinstance(s, ast.AugAssign):
            if not (isinstance(s.target, ast.Name) and env.get(s.target.id) == SCALAR):
                raise _fail(s, f"`{_what(s)}`: augmented assignment only to a scalar local")
            self.scalar(s.value, env)
        elif isinstance(s, ast.Return):
            kind = None if s.value is None else self.value(s.value, env)
            prev = self.rets[-1]
            if prev is not None and prev != kind:
                raise _fail(s, f"`{where}` returns different kinds of value")
            self.rets[-1] = kind
        elif isinstance(s, ast.If):
            self.scalar(s.test, env)
            self.body(s.body, env, where)
            self.body(s.orelse, env, where)
        elif isinstance(s, ast.For):
            it = s.iter
            if not (isinstance(it, ast.Call) and _dotted(it.func) == ["range"]) or s.orelse:
                raise _fail(s, "host loops must be `for i in range(...)`")
            self.scalar(it, env)
            self._store(s.target, SCALAR, env)
            self.body(s.body, env, where)
        elif isinstance(s, ast.Expr):
            if not isinstance(s.value, ast.Call):
                raise _fail(s, f"expression statement `{_what(s)}` (only kernel launches)")
            self.call(s.value, env, statement=True)
        elif isinstance(s, ast.FunctionDef):  # a grid function
            self._grid_def(s, env)
        elif isinstance(s, ast.Pass):
            return
        else:
            raise _fail(
                s, f"`{type(s).__name__}` statements are not allowed in host code ({_what(s)})"
            )

    def _grid_def(self, fn: ast.FunctionDef, env: dict[str, Kind]) -> None:
        a = fn.args
        if (
            fn.decorator_list
            or a.vararg
            or a.kwarg
            or a.kwonlyargs
            or len(a.args) != 1
            or a.defaults
        ):
            raise _fail(
                fn, f"nested `def {fn.name}` must be a grid function `def grid(meta): return (...)`"
            )
        _annotations(fn, self.mod)
        inner = {k: v for k, v in env.items() if v == SCALAR}
        inner[a.args[0].arg] = META
        body = [
            s
            for s in fn.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        for s in body:
            if isinstance(s, ast.Return) and s.value is not None:
                self.scalar(s.value, inner)
            elif isinstance(s, ast.Assign):
                self.scalar(s.value, inner)
                for t in s.targets:
                    self._store(t, SCALAR, inner)
            else:
                raise _fail(
                    s, f"grid function `{fn.name}`: only assignments of scalars and `return`"
                )
        self._store(ast.Name(id=fn.name, lineno=fn.lineno), GRID, env)

    # -- expressions
    def value(self, e: ast.AST, env: dict[str, Kind]) -> Kind:
        """The kind of ``e`` (a tensor, a scalar, a tuple of kinds...), or reject it."""
        if isinstance(e, ast.Name):
            if e.id in env:
                return env[e.id]
            if e.id in self.mod.consts:
                return SCALAR
            raise _fail(e, f"`{e.id}` is not a local, parameter or constant here")
        if isinstance(e, ast.Tuple | ast.List):
            kinds = [self.value(x, env) for x in e.elts]
            return SCALAR if all(k == SCALAR for k in kinds) else ("tuple", kinds)
        if isinstance(e, ast.IfExp):
            self.scalar(e.test, env)
            a, b = self.value(e.body, env), self.value(e.orelse, env)
            if a != b:
                raise _fail(e, f"`{_what(e)}`: both branches must be of the same kind")
            return a
        if isinstance(e, ast.Lambda):
            if len(e.args.args) != 1 or e.args.vararg or e.args.kwarg or e.args.defaults:
                raise _fail(e, "a lambda must be a grid `lambda meta: (...)`")
            inner = {k: v for k, v in env.items() if v == SCALAR}
            inner[e.args.args[0].arg] = META
            self.scalar(e.body, inner)
            return GRID
        if isinstance(e, ast.Call):
            return self.call(e, env, statement=False)
        if (
            isinstance(e, ast.Subscript)
            and isinstance(e.value, ast.Name)
            and env.get(e.value.id) == TENSORS
        ):
            self.scalar(e.slice, env)
            return TENSOR
        self.scalar(e, env)
        return SCALAR

    def tensor(self, e: ast.AST, env: dict[str, Kind]) -> None:
        if self.value(e, env) != TENSOR:
            raise _fail(e, f"`{_what(e)}` must be a tensor here")

    def scalar(self, e: ast.AST, env: dict[str, Kind]) -> None:  # noqa: C901 - the scalar grammar, in one place
        """``e`` is a scalar expression (grid arithmetic): it never reads tensor data."""
        if isinstance(e, ast.Constant):
            return
        if isinstance(e, ast.Name):
            kind = env.get(e.id, SCALAR if e.id in self.mod.consts else None)
            if kind == SCALAR:
                return
            if kind is None:
                raise _fail(e, f"`{e.id}` is not a local, parameter or constant here")
            raise _fail(
                e,
                f"`{e.id}` is a {self._k(kind)}, used where only scalars (grid arithmetic) may go",
            )
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, ast.MatMult):
                raise _fail(e, "uses the @ operator on the host (a torch matmul)")
            self.scalar(e.left, env)
            self.scalar(e.right, env)
            return
        if isinstance(e, ast.UnaryOp):
            self.scalar(e.operand, env)
            return
        if isinstance(e, ast.BoolOp):
            for x in e.values:
                self.scalar(x, env)
            return
        if isinstance(e, ast.Compare):
            for x in [e.left, *e.comparators]:
                self.scalar(x, env)
            return
        if isinstance(e, ast.IfExp):
            for x in (e.test, e.body, e.orelse):
                self.scalar(x, env)
            return
        if isinstance(e, ast.Tuple | ast.List):
            for x in e.elts:
                self.scalar(x.value if isinstance(x, ast.Starred) else x, env)
            return
        if isinstance(e, ast.Slice):
            for bound in (e.lower, e.upper, e.step):
                if bound is not None:
                    self.scalar(bound, env)
            return
        if isinstance(e, ast.Subscript):
            if isinstance(e.value, ast.Name) and env.get(e.value.id) == META:
                key = e.slice.value if isinstance(e.slice, ast.Constant) else None
                if not (isinstance(key, str) and key in self.mod.constexprs):
                    raise _fail(e, f"`{_what(e)}`: a grid reads only meta['<constexpr parameter>'] "
                                   f"({', '.join(sorted(self.mod.constexprs))})")  # fmt: skip
                return
            self.scalar(e.slice, env)
            if isinstance(e.value, ast.Attribute) and e.value.attr == "shape":
                self.tensor(e.value.value, env)
                return
            self.scalar(e.value, env)  # a tuple of scalars, PARAMS, meta, stride()
            return
        if isinstance(e, ast.Attribute):
            path = _dotted(e)
            if path and path[0] in self.mod.torch and len(path) == 2 and path[1] in TORCH_DTYPES:
                return
            if path and path[0] in self.mod.math and len(path) == 2 and path[1] in MATH_FNS:
                return
            if e.attr in TENSOR_META_ATTRS:
                self.tensor(e.value, env)
                return
            if e.attr in DEVICE_PROPS and self.value(e.value, env) == PROPS:
                return
            raise _fail(e, f"reads `{_what(e)}` on the host (allowed: tensor .shape/.dtype/.device/.is_cuda/"
                           ".ndim, torch dtypes, math constants)")  # fmt: skip
        if isinstance(e, ast.Call):
            if self.call(e, env, statement=False) != SCALAR:
                raise _fail(e, f"`{_what(e)}` is not a scalar")
            return
        raise _fail(e, f"`{_what(e)}` ({type(e).__name__}) is not allowed in host code")

    def _args(self, c: ast.Call, env: dict[str, Kind], *, tensors: bool) -> list[Kind]:
        kinds: list[Kind] = []
        for a in c.args:
            if isinstance(a, ast.Starred):
                raise _fail(c, f"`*` arguments are not allowed in `{_what(c)}`")
            if tensors:
                kinds.append(self.value(a, env))
            else:
                self.scalar(a, env)
                kinds.append(SCALAR)
        for k in c.keywords:
            if k.arg is None:
                if not (isinstance(k.value, ast.Name) and k.value.id in self.mod.consts):
                    raise _fail(
                        c, f"`**{_what(k.value)}`: only a module constant dict may be spread"
                    )
                continue
            if tensors and k.arg not in ("dtype", "device"):
                kind = self.value(k.value, env)
                if kind not in (TENSOR, SCALAR) and not (
                    isinstance(kind, tuple) and kind[0] == "tuple"
                ):
                    raise _fail(k.value, f"`{k.arg}=` takes a tensor or a scalar")
            else:
                self.scalar(k.value, env)
        return kinds

    def call(self, c: ast.Call, env: dict[str, Kind], *, statement: bool) -> Kind:  # noqa: C901 - one allow-list
        f = c.func
        # kernel[grid](...)
        if isinstance(f, ast.Subscript):
            if not (isinstance(f.value, ast.Name) and f.value.id in self.mod.kernels):
                raise _fail(c, f"`{_what(f)}` is not a launch of a Triton kernel of this module")
            grid = f.slice
            named_grid = isinstance(grid, ast.Name) and env.get(grid.id) == GRID
            if not named_grid and self.value(grid, env) not in (SCALAR, GRID):
                raise _fail(grid, f"grid `{_what(grid)}` must be scalars or a grid function")
            for kind in self._args(c, env, tensors=True):
                if kind not in (TENSOR, SCALAR):
                    raise _fail(c, f"kernel arguments must be tensors or scalars in `{_what(c)}`")
            if not statement:
                raise _fail(
                    c, "a kernel launch is a statement of its own (its result is not a value)"
                )
            self.launches += 1
            return None
        path = _dotted(f)
        modules = self.mod.torch | self.mod.triton | self.mod.math | set(self.mod.libs)
        if isinstance(f, ast.Attribute) and (path is None or path[0] not in modules):
            return self._method(c, f, env)
        if path is None:
            raise _fail(c, f"calls `{_what(f)}` (not a name or a module function)")
        head, rest = path[0], path[1:]
        if head in self.mod.torch:
            if rest and rest[0] in TORCH_ALLOC and len(rest) == 1:
                self._args(c, env, tensors=False)
                return TENSOR
            if rest and rest[0] in TORCH_ALLOC_LIKE and len(rest) == 1:
                if not c.args:
                    raise _fail(c, f"torch.{rest[0]} needs its model tensor")
                self.tensor(c.args[0], env)
                for a in c.args[1:]:
                    self.scalar(a, env)
                for k in c.keywords:
                    if k.arg is None:
                        raise _fail(c, "`**` in an allocation")
                    self.scalar(k.value, env)
                return TENSOR
            if rest[:1] == ["cuda"] and len(rest) == 2 and rest[1] in TORCH_CUDA_QUERIES:
                self._args(c, env, tensors=False)
                return PROPS if rest[1] == "get_device_properties" else SCALAR
            raise _fail(c, f"calls torch.{'.'.join(rest)} (torch may only allocate; the kernel must compute "
                           "with Triton)")  # fmt: skip
        if head in self.mod.triton:
            if rest and len(rest) == 1 and rest[0] in TRITON_SCALAR_FNS:
                self._args(c, env, tensors=False)
                return SCALAR
            if rest == ["set_allocator"] and statement and len(c.args) == 1 and not c.keywords:
                arg = c.args[0]
                if not (isinstance(arg, ast.Name) and arg.id in self.mod.hosts):
                    raise _fail(c, "triton.set_allocator takes a helper function of this module")
                self.function(
                    self.mod.hosts[arg.id], [SCALAR] * len(self.mod.hosts[arg.id].args.args)
                )
                return None
            raise _fail(c, f"calls triton.{'.'.join(rest)} on the host (allowed: cdiv, next_power_of_2, "
                           "set_allocator)")  # fmt: skip
        if head in self.mod.math:
            if len(rest) == 1 and rest[0] in MATH_FNS:
                self._args(c, env, tensors=False)
                return SCALAR
            raise _fail(c, f"calls math.{'.'.join(rest)}")
        if head in self.mod.libs:
            lib = self.mod.libs[head]
            if len(rest) == 1 and rest[0] in LIBRARY_LAUNCHERS[lib]:
                for kind in self._args(c, env, tensors=True):
                    if kind not in (TENSOR, SCALAR):
                        raise _fail(
                            c,
                            f"library kernel arguments must be tensors or scalars in `{_what(c)}`",
                        )
                self.launches += 1
                return TENSOR
            raise _fail(c, f"calls {lib}.{'.'.join(rest)} (library launchers: "
                           f"{', '.join(sorted(LIBRARY_LAUNCHERS[lib]))})")  # fmt: skip
        if not rest:
            if head in self.mod.hosts:
                kinds = self._args(c, env, tensors=True)
                if c.keywords:
                    raise _fail(c, f"call `{head}` with positional arguments only")
                return self.function(self.mod.hosts[head], kinds)
            if head in HOST_BUILTINS and head not in env:
                self._args(c, env, tensors=False)
                return SCALAR
            if head in self.mod.kernels:
                raise _fail(
                    c, f"calls kernel `{head}` without a grid (launch it as `{head}[grid](...)`)"
                )
            raise _fail(c, f"calls `{head}` (not an allowed function)")
        raise _fail(c, f"calls `{_what(f)}`")

    def _method(self, c: ast.Call, f: ast.Attribute, env: dict[str, Kind]) -> Kind:
        """``<tensor>.<method>(...)``: metadata reads and layout changes only."""
        method = f.attr
        kind = self.value(f.value, env)  # the receiver first: its own violations come first
        if kind != TENSOR:
            raise _fail(c, f"calls `.{method}()` on a {self._k(kind)} `{_what(f.value)}` (host code calls "
                           "methods of tensors only)")  # fmt: skip
        if method in TENSOR_META_METHODS:
            self._args(c, env, tensors=False)
            return SCALAR
        if method in TENSOR_LAYOUT_METHODS:
            self._args(c, env, tensors=False)
            return TENSOR
        raise _fail(c, f"calls `.{method}()` on the host (tensors may only be allocated, re-laid out with "
                       f"{'/'.join(sorted(TENSOR_LAYOUT_METHODS))}, measured and passed to kernels)")  # fmt: skip
