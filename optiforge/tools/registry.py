"""Tool registry: typed Python functions (or pydantic models) -> function-calling specs.

A tool is defined once; its argument model comes from the type hints (via
``pydantic.create_model``), its OpenAI spec from that model's JSON schema, and
``dispatch`` validates the model's JSON arguments, runs the function and returns a
``ToolResult``. Validation errors and unknown tools come back as text (``ok=False``), not
exceptions, so the model can correct itself inside ``run_tool_loop``.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
from collections.abc import Callable
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from optiforge.errors import ToolError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")  # OpenAI function-name rule


class ToolResult(BaseModel):
    """Outcome of one dispatched tool call; ``content`` is what the model sees."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    name: str
    ok: bool
    content: str
    error: Literal["unknown_tool", "invalid_arguments", "tool_failed"] | None = None
    value: Any = None
    """The function's return value (None on failure)."""


def _describe_validation(err: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in err.errors()
    )


def _to_content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str)


def _first_paragraph(doc: str | None) -> str:
    return inspect.cleandoc(doc).split("\n\n", 1)[0].replace("\n", " ").strip() if doc else ""


def args_model_from_function(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    """A pydantic model (extra="forbid") whose fields are ``fn``'s typed parameters."""
    # Closure variables help resolve string annotations of nested functions.
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
    localns: dict[str, Any] = {}
    if code is not None:
        for var, cell in zip(code.co_freevars, cells, strict=False):
            with contextlib.suppress(ValueError):  # an empty cell has no contents
                localns[var] = cell.cell_contents
    try:
        hints = get_type_hints(fn, localns=localns, include_extras=True)
    except Exception as e:  # unresolved forward references etc.
        raise ToolError(f"tool {name!r}: cannot resolve type hints ({e})") from e
    fields: dict[str, Any] = {}
    for pname, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ToolError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
        if pname not in hints:
            raise ToolError(f"tool {name!r}: parameter {pname!r} needs a type hint")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[pname] = (hints[pname], default)
    return create_model(  # type: ignore[call-overload, no-any-return]
        f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields
    )


class Tool:
    """One callable tool: name, description, argument schema and the function.

    With ``args_model`` the arguments are validated by pydantic and passed as keyword
    arguments (field values, nested models kept as instances). Without it, ``parameters``
    (a JSON schema) is enforced with ``jsonschema`` and ``fn`` gets the argument dict.
    """

    def __init__(
        self,
        name: str,
        description: str,
        fn: Callable[..., Any],
        *,
        args_model: type[BaseModel] | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> None:
        if not _NAME.match(name or ""):
            raise ToolError(f"tool name {name!r} must match {_NAME.pattern}")
        if args_model is None and parameters is None:
            raise ToolError(f"tool {name!r} needs args_model or a JSON-schema 'parameters'")
        self.name = name
        self.description = description
        self.fn = fn
        self.args_model = args_model
        if parameters is None:
            assert args_model is not None
            parameters = args_model.model_json_schema()
            parameters.pop("title", None)
        self.parameters: dict[str, Any] = parameters

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def spec(self) -> dict[str, Any]:
        """OpenAI function-calling spec."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def validate(self, arguments: dict[str, Any]) -> Any:
        """Validated arguments; raises ValidationError / jsonschema.ValidationError."""
        if self.args_model is not None:
            return self.args_model.model_validate(arguments)
        import jsonschema

        jsonschema.validate(arguments, self.parameters)
        return arguments

    def invoke(self, validated: Any) -> Any:
        """Call the function with already-validated arguments."""
        if isinstance(validated, BaseModel) and self.args_model is not None:
            return self.fn(**{k: getattr(validated, k) for k in type(validated).model_fields})
        return self.fn(validated)


class ToolRegistry:
    """Named tools; ``specs()`` for the LLM, ``dispatch()`` for the model's calls."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools or []:
            self.add(t)

    def add(self, tool: Tool, *, replace: bool = False) -> Tool:
        """Register a built Tool; a duplicate name is an error unless ``replace``."""
        if tool.name in self._tools and not replace:
            raise ToolError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return tool

    def register(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        replace: bool = False,
    ) -> Any:
        """Register a typed function (also usable as ``@registry.register``); returns ``fn``."""

        def deco(f: Callable[..., Any]) -> Callable[..., Any]:
            tname = name or f.__name__
            if tname in self._tools and not replace:  # before deriving the schema
                raise ToolError(f"tool {tname!r} is already registered")
            self.add(
                Tool(
                    tname,
                    description if description is not None else _first_paragraph(f.__doc__),
                    f,
                    args_model=args_model_from_function(f, tname),
                ),
                replace=replace,
            )
            return f

        return deco(fn) if fn is not None else deco

    def register_model(
        self,
        model: type[BaseModel],
        fn: Callable[[Any], Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> Tool:
        """Register a pydantic model as the argument schema.

        The tool calls ``fn(instance)`` or, without ``fn``, ``instance.run()``.
        """
        if fn is None and not callable(getattr(model, "run", None)):
            raise ToolError(f"{model.__name__} needs a run(self) method or an explicit fn")
        call = fn if fn is not None else (lambda inst: inst.run())
        tname = name or re.sub(r"(?<!^)(?=[A-Z])", "_", model.__name__).lower()
        tool = Tool(
            tname,
            description if description is not None else _first_paragraph(model.__doc__),
            lambda **kw: call(model.model_validate(kw)),
            args_model=model,
        )
        return self.add(tool)

    def get(self, name: str) -> Tool:
        """The tool called ``name``; ToolError if unknown."""
        try:
            return self._tools[name]
        except KeyError:
            raise ToolError(f"unknown tool {name!r}; available: {', '.join(self.names)}") from None

    @property
    def names(self) -> list[str]:
        """Registered tool names, sorted."""
        return sorted(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI tool specs of every registered tool (sorted by name)."""
        return [self._tools[n].spec() for n in self.names]

    def dispatch(self, name: str, arguments_json: str | dict[str, Any]) -> ToolResult:
        """Run one tool call from the model; every failure becomes ``ok=False`` text."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(
                name=name,
                ok=False,
                error="unknown_tool",
                content=f"error: unknown tool {name!r}; available tools: {', '.join(self.names)}",
            )
        if isinstance(arguments_json, dict):
            arguments: Any = arguments_json
        else:
            try:
                arguments = json.loads(arguments_json or "{}")
            except json.JSONDecodeError as e:
                return ToolResult(
                    name=name,
                    ok=False,
                    error="invalid_arguments",
                    content=f"error: arguments for {name!r} are not valid JSON ({e})",
                )
        if not isinstance(arguments, dict):
            return ToolResult(
                name=name,
                ok=False,
                error="invalid_arguments",
                content=f"error: arguments for {name!r} must be a JSON object",
            )
        try:
            validated = tool.validate(arguments)
        except ValidationError as e:
            return ToolResult(
                name=name,
                ok=False,
                error="invalid_arguments",
                content=f"error: invalid arguments for {name!r}: {_describe_validation(e)}",
            )
        except Exception as e:  # jsonschema.ValidationError / SchemaError
            msg = getattr(e, "message", str(e))
            return ToolResult(
                name=name,
                ok=False,
                error="invalid_arguments",
                content=f"error: invalid arguments for {name!r}: {msg}",
            )
        try:
            value = tool.invoke(validated)
        except Exception as e:  # the model should see a tool's failure, not crash the loop
            return ToolResult(
                name=name,
                ok=False,
                error="tool_failed",
                content=f"error: tool {name!r} failed: {type(e).__name__}: {e}",
            )
        return ToolResult(name=name, ok=True, content=_to_content(value), value=value)

    def call(self, name: str, **arguments: Any) -> Any:
        """Programmatic call: validate and run, raising ToolError instead of returning text."""
        result = self.dispatch(name, arguments)
        if not result.ok:
            raise ToolError(result.content.removeprefix("error: "))
        return result.value
