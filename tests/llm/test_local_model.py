"""``--model local`` with the real embedded model (SmolLM2-135M-Instruct through llama.cpp):
a real reply with real token counts at no cost, schema-shaped output, replay without the
model, clear errors, and a server that never outlives its process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _procs import wait_gone
from pydantic import BaseModel

from optiforge.errors import ConfigError
from optiforge.llm import Cassette, make_llm
from optiforge.llm.local import LocalLLM, close_local_servers, local_server

pytestmark = pytest.mark.local_llm


class Sum(BaseModel):
    answer: int
    explanation: str


def test_ping_answers_at_no_cost() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "optiforge.cli", "llm", "ping", "--model", "local"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert "smollm2-135m-instruct" in out.stdout and "cost $0.000000" in out.stdout
    tokens_out = int(out.stdout.split(" / ")[1].split()[0])
    assert tokens_out > 0


def test_a_schema_reply_has_the_schema_shape() -> None:
    """The grammar holds even a 135M model to the schema (its arithmetic is its own)."""
    llm = make_llm("local")
    assert isinstance(llm, LocalLLM)
    c = llm.complete([{"role": "user", "content": "What is 2 + 3?"}], schema=Sum)
    assert isinstance(c.parsed, Sum)
    assert c.record.cost_known and c.record.cost_usd == 0.0
    assert c.record.tokens_in > 0 and c.record.tokens_out > 0


def test_a_replay_never_starts_the_model(tmp_path: Path) -> None:
    tape = tmp_path / "tape.jsonl"
    prompt = [{"role": "user", "content": "Say hi."}]
    first = LocalLLM(cassette=Cassette(tape, mode="record")).complete(prompt)
    close_local_servers()
    replayed = LocalLLM(cassette=Cassette(tape, mode="replay"))
    again = replayed.complete(prompt)
    assert again.text == first.text and again.record.replayed
    from optiforge.llm import local

    assert local._SERVERS == {}  # nothing was started for the replay


def test_a_missing_model_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no GGUF file"):
        make_llm(f"local/{tmp_path / 'nope.gguf'}")
    from optiforge.config import LocalModelSettings

    with pytest.raises(ConfigError, match="llm.local.path"):
        make_llm("local", local=LocalModelSettings(path=tmp_path / "nope.gguf"))


def test_another_gguf_file_is_served_under_its_name(tmp_path: Path) -> None:
    from optiforge.llm.local import bundled_model

    bundled = bundled_model()
    assert bundled is not None
    other = tmp_path / "My-Model.gguf"
    other.symlink_to(bundled)
    llm = make_llm(f"local/{other}")
    assert llm is not None and llm.model == "openai/my-model"
    assert llm.complete([{"role": "user", "content": "hi"}]).record.tokens_out > 0


def test_the_server_dies_with_its_process() -> None:
    code = textwrap.dedent(
        """
        import time
        from optiforge.llm.local import local_server
        s = local_server("local")
        s.wait_ready()
        print(s.proc.pid, flush=True)
        time.sleep(600)
        """
    )
    run = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    server = int(run.stdout.readline())
    run.kill()
    run.wait()
    wait_gone(server, 15, "the local model server")


def test_a_server_that_dies_mid_run_is_started_again() -> None:
    llm = make_llm("local")
    assert llm is not None
    llm.complete([{"role": "user", "content": "hi"}])
    old = local_server("local")
    os.kill(old.proc.pid, signal.SIGKILL)
    old.proc.wait()
    assert llm.complete([{"role": "user", "content": "hi"}]).record.tokens_out > 0
    assert local_server("local").proc.pid != old.proc.pid


def test_a_code_grammar_holds_the_reply_to_one_block_defining_the_function() -> None:
    """With ``llm.local.code_grammars`` the model's code reply is exactly the shape the
    agent parses (the grammar's own text is the check), and without it the same request
    is answered free (the parameter is dropped, so the request is the plain one)."""
    from optiforge.config import LocalModelSettings
    from optiforge.llm.grammars import matches, python_function_block
    from optiforge.llm.structured import CODE_STOP

    grammar = python_function_block("f")
    prompt = [
        {
            "role": "system",
            "content": "You improve Python programs. Reply with exactly one ```python code block.",
        },
        {
            "role": "user",
            "content": "Write a Python function f(x) (x is a numpy array) that returns x squared.",
        },
    ]
    held = LocalLLM(settings=LocalModelSettings(code_grammars=True)).complete(
        prompt, stop=CODE_STOP, grammar=grammar
    )
    assert matches(grammar, held.text), held.text
    free = LocalLLM().complete(prompt, stop=CODE_STOP, grammar=grammar)
    plain = LocalLLM().complete(prompt, stop=CODE_STOP)
    assert free.record.request_key == plain.record.request_key
