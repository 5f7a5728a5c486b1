"""Test doubles shipped with the package: scripted LLMs and a local OpenAI-compatible server."""

from optiforge.testing.scripted import FunctionLLM, Raise, ScriptedLLM, ScriptExhausted, Sleep
from optiforge.testing.server import OpenAICompatServer, SilentServer

__all__ = [
    "FunctionLLM",
    "OpenAICompatServer",
    "Raise",
    "ScriptExhausted",
    "ScriptedLLM",
    "SilentServer",
    "Sleep",
]
