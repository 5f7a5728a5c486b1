"""LLM layer: one ``LLM`` contract over litellm, with budget, cache, cassette and retries.

Importing this package never imports litellm (it is loaded on the first real call) and
never touches the network.
"""

from optiforge.llm.base import LLM, BaseLLM
from optiforge.llm.budget import Budget, BudgetConfig
from optiforge.llm.litellm_client import LiteLLM
from optiforge.llm.offline import OfflineLLM, is_offline, make_llm
from optiforge.llm.ping import ping
from optiforge.llm.providers import PROVIDERS, ProviderExample, provider_rows
from optiforge.llm.recording import Cassette, ResponseCache, request_key
from optiforge.llm.tool_loop import ToolLoopResult, run_tool_loop
from optiforge.llm.types import CallRecord, Completion, ProviderReply, ToolCall

__all__ = [
    "LLM",
    "PROVIDERS",
    "BaseLLM",
    "Budget",
    "BudgetConfig",
    "CallRecord",
    "Cassette",
    "Completion",
    "LiteLLM",
    "OfflineLLM",
    "ProviderExample",
    "ProviderReply",
    "ResponseCache",
    "ToolCall",
    "ToolLoopResult",
    "is_offline",
    "make_llm",
    "ping",
    "provider_rows",
    "request_key",
    "run_tool_loop",
]
