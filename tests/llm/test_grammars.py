"""Code grammars (optiforge/llm/grammars.py): the GBNF text, what it admits, and its path
through the LLM layer (kept by the local model, dropped for every other provider)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from optiforge.llm.grammars import (
    MAX_LINES,
    gbnf_literal,
    matches,
    python_function_block,
    shell_command_block,
    to_regex,
)
from optiforge.llm.local_server import RequestError, llama_request
from optiforge.testing import FunctionLLM

GOOD_PY = "```python\nimport numpy as np\n\ndef f(x):\n    return np.sin(x) * 2\n```"


def test_python_block_admits_one_fenced_block_that_defines_the_function() -> None:
    g = python_function_block("f")
    assert g.startswith('root ::= "```python\\n" pre "def f(" ')
    assert matches(g, GOOD_PY)
    assert matches(g, "```python\ndef f(x):\n    return x\n\n```")
    assert matches(g, "```python\nfrom math import sin\ndef f(x): return sin(x)\n```")


@pytest.mark.parametrize(
    "reply",
    [
        "Here is the program:\n" + GOOD_PY,  # prose before the block
        GOOD_PY + "\nThis works because ...",  # prose after it
        GOOD_PY.replace("def f(", "def g("),  # another function
        GOOD_PY.replace("```python", "```"),  # no language tag
        "```python\nx = 1\ndef f(x):\n    return x\n```",  # code before the def
        "```python\ndef f(x):\n    return x\n",  # never closed
        "```python\ndef f(x):\n```\n```python\ndef f(x): pass\n```",  # two blocks
        "```python\ndef f(x):\n" + "    x = x\n" * (MAX_LINES + 1) + "```",  # too long
    ],
)
def test_python_block_refuses_other_shapes(reply: str) -> None:
    assert not matches(python_function_block("f"), reply)


def test_a_preamble_admits_the_constants_an_agent_asks_for_before_the_function() -> None:
    reply = (
        '```python\nNAME = "rq"\nHYPERPARAMETERS = {\n    "alpha": {"shape": "scalar"},\n}\n'
        "def kernel(x1, x2, params):\n    return torch.exp(-torch.cdist(x1, x2))\n```"
    )
    assert matches(python_function_block("kernel", preamble_lines=24), reply)
    assert not matches(python_function_block("kernel"), reply)  # imports only by default
    assert not matches(python_function_block("kernel", preamble_lines=2), reply)


def test_shell_block_admits_one_command_line() -> None:
    g = shell_command_block()
    assert matches(g, "```bash\nls -la /tmp | head\n```")
    for bad in ["```bash\nls\ncat x\n```", "```bash\n\n```", "```bash\n# comment\n```", "ls -la"]:
        assert not matches(g, bad)


def test_names_and_literals_are_checked_and_escaped() -> None:
    with pytest.raises(ValueError, match="not a Python identifier"):
        python_function_block("f(x); import os")
    assert gbnf_literal('a"b\\c\n') == '"a\\"b\\\\c\\n"'
    with pytest.raises(ValueError, match="recursive"):
        to_regex("root ::= a\na ::= root")


def test_the_local_server_takes_a_grammar_and_refuses_it_beside_a_schema() -> None:
    msgs = [{"role": "user", "content": "x"}]
    g = python_function_block("f")
    assert llama_request({"messages": msgs, "grammar": g})["grammar"] == g
    with pytest.raises(RequestError, match="not both"):
        llama_request({"messages": msgs, "grammar": g, "response_format": {"type": "json_object"}})
    with pytest.raises(RequestError, match="non-empty GBNF"):
        llama_request({"messages": msgs, "grammar": ""})


def test_the_grammar_is_compiled_and_reaches_the_backend() -> None:
    import socket

    from optiforge.llm.local_server import LocalModelServer

    calls: list[dict[str, Any]] = []

    class Backend:
        def create_chat_completion(self, **kw: Any) -> dict[str, Any]:
            calls.append(kw)
            return {"choices": [{"message": {"content": GOOD_PY}}]}

    sock = socket.socket()
    try:
        server = LocalModelServer(Backend(), "m", sock, compile_grammar=lambda t: ("compiled", t))
        server.complete({"messages": [{"role": "user", "content": "x"}], "grammar": 'root ::= "a"'})
        assert calls[-1]["grammar"] == ("compiled", 'root ::= "a"')
        server.httpd.server_close()
    finally:
        sock.close()


def test_a_provider_without_grammars_never_sees_the_parameter_nor_keys_on_it() -> None:
    seen: list[dict[str, Any]] = []

    class Recording(FunctionLLM):
        def _send(
            self, messages: Any, tools: Any, params: Any, json_mode: Any, schema: Any = None
        ) -> Any:
            seen.append(dict(params))
            return super()._send(messages, tools, params, json_mode, schema)

    llm = Recording(lambda m, t, s: "ok")
    a = llm.complete([{"role": "user", "content": "x"}], grammar=python_function_block("f"))
    b = llm.complete([{"role": "user", "content": "x"}])
    assert a.record.request_key == b.record.request_key
    assert seen == [{}, {}]


def test_the_local_model_sends_the_grammar_in_the_request_body(monkeypatch: Any) -> None:
    from optiforge.config import LocalModelSettings
    from optiforge.llm.litellm_client import LiteLLM
    from optiforge.llm.local import LocalLLM

    sent: list[dict[str, Any]] = []
    reply = SimpleNamespace(model_copy=lambda update: update)
    monkeypatch.setattr(
        LiteLLM, "_send", lambda self, m, t, params, j, s=None: sent.append(params) or reply
    )
    llm = LocalLLM.__new__(LocalLLM)  # no model file needed to check the request
    llm.settings = LocalModelSettings(code_grammars=True)
    llm.server = lambda: type("S", (), {"wait_ready": lambda self: None})()  # type: ignore[method-assign]
    assert (
        llm._send([{"role": "user", "content": "x"}], None, {"grammar": "G"}, False)["cost_usd"]
        == 0.0
    )
    assert sent[-1]["extra_body"] == {"grammar": "G"} and "grammar" not in sent[-1]
    assert not LiteLLM.supports_grammar
    assert not LocalModelSettings().code_grammars  # off until the local cassettes carry it


def test_kernel_discoverys_grammar_is_its_code_protocol() -> None:
    from optiforge.agents.kernel_discovery.proposers import KERNEL_GRAMMAR

    reply = (
        '```python\nNAME = "rbf"\nHYPERPARAMETERS = {\n'
        '    "lengthscale": {"shape": "ard", "init": 1.0, "bounds": [0.01, 100.0]},\n}\n'
        "def kernel(x1, x2, params):\n    d = torch.cdist(x1, x2)\n    return torch.exp(-0.5 * d**2)\n```"
    )
    assert matches(KERNEL_GRAMMAR, reply)
    assert not matches(
        KERNEL_GRAMMAR,
        reply.replace("def kernel(x1, x2, params)", "def kernel_rbf(x1, x2, params)"),
    )
    assert not matches(KERNEL_GRAMMAR, reply.replace('"ard"', '"array_like"'))
    assert not matches(KERNEL_GRAMMAR, reply.replace("    return", "return"))  # body indented
    template = reply.split("    d = ")[0] + "    ...\n```"
    assert not matches(KERNEL_GRAMMAR, template)  # the protocol's placeholder body
    assert not matches(KERNEL_GRAMMAR, template.replace("    ...", "    return ..."))
