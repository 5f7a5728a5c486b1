"""Tool registry: typed functions -> function-calling specs; built-ins; the memory tool pool.

Run the loop with ``optiforge.llm.run_tool_loop(llm, messages, registry)``.
"""

from optiforge.llm.tool_loop import ToolLoopResult, run_tool_loop
from optiforge.tools.builtins import (
    builtin_registry,
    file_tools,
    memory_search_tool,
    resolve_in_workdir,
    run_python_tool,
)
from optiforge.tools.pool import load_tool_pool, sandboxed_tool
from optiforge.tools.registry import Tool, ToolRegistry, ToolResult, args_model_from_function

__all__ = [
    "Tool",
    "ToolLoopResult",
    "ToolRegistry",
    "ToolResult",
    "args_model_from_function",
    "builtin_registry",
    "file_tools",
    "load_tool_pool",
    "memory_search_tool",
    "resolve_in_workdir",
    "run_python_tool",
    "run_tool_loop",
    "sandboxed_tool",
]
