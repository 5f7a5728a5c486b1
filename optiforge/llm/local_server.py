"""The embedded model's OpenAI-compatible server: ``python -m optiforge.llm.local_server``.

One GGUF model (by default the bundled SmolLM2-135M-Instruct) loaded with llama.cpp
(``llama-cpp-python``) and served on a listening socket its parent made (``--fd``), so
the parent knows the address before the model has loaded: requests wait in the socket's
backlog meanwhile. Concurrent requests are served by a small pool of model instances
(``BackendPool``; ``--parallel``, ``llm.local.parallel``, by default sized by cores and
free memory): llama-cpp-python 0.3's ``Llama`` has one context, not thread-safe, and no
parallel-slot API for chat completions, so each generation holds one instance; the
weights are memory-mapped once (the instances share the file's pages), each instance
adds its own KV cache. Instances beyond the first load when a request finds every one
busy. Accepted sockets set ``TCP_NODELAY`` and a reply is one write (headers and body),
so a keep-alive request does not wait on Nagle's algorithm and a delayed ACK.

``POST /v1/chat/completions`` takes OpenAI's chat request. Structured output is enforced
as a grammar: ``response_format`` of type ``json_schema`` (OpenAI's structured outputs)
or ``json_object`` with or without a ``schema`` becomes llama.cpp's JSON-schema grammar
(llama-cpp-python's own server answers HTTP 500 to ``json_schema``), with the strings and
arrays the schema leaves unbounded bounded (``bounded``). A ``grammar`` field (a GBNF
text, llama.cpp's server extension; ``optiforge.llm.grammars`` writes the code shapes)
holds a free-text reply to that grammar. Tools and streaming
are refused with HTTP 400 (the agents use neither). A request without a ``seed`` is
sampled with ``DEFAULT_SEED`` (not a random one; llama.cpp's reuse of a cached prompt
prefix can still change a reply's numerics, so only a cassette replays a run exactly). Usage counts are the model's real
token counts. ``GET /v1/models`` and ``GET /health`` answer too.

The server exits when its parent closes its stdin (or dies).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, cast

MAX_TOKENS_DEFAULT = 512
"""Reply length when the request names none (a 135M model rambles: bound it)."""
DEFAULT_SEED = 1
"""Sampling seed of a request that names none (llama-cpp-python reads 0 as "random")."""
STRING_CAP = 400
ARRAY_CAP = 32
"""Bounds the grammar puts on a schema's strings (characters) and arrays (items) that set
none: a small model inside a JSON string can loop until the length limit cuts the reply
(an unterminated string); bounded, it has to close it."""
_PASSED = ("temperature", "top_p", "seed", "stop", "presence_penalty", "frequency_penalty")


class ChatBackend(Protocol):
    """What the server needs of a model (``llama_cpp.Llama`` has it)."""

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]: ...


class BackendPool:
    """Up to ``size`` backends, one per generation in flight (a llama.cpp context is not
    thread-safe); more are made by ``make`` when a request finds every one busy.

    ``close`` wakes every waiter (they get ``RequestError``), so a shut-down server does
    not leave request threads blocked.
    """

    def __init__(
        self, first: ChatBackend, size: int = 1, make: Callable[[], ChatBackend] | None = None
    ) -> None:
        if size < 1:
            raise ValueError(f"a backend pool needs size >= 1, got {size}")
        self.size = size if make is not None else 1
        self.make = make
        self.idle: list[ChatBackend] = [first]
        self.made = 1
        self.closed = False
        self.cond = threading.Condition()

    def acquire(self) -> ChatBackend:
        """An idle backend (the most recently used: its prompt cache is warm), a new one
        while the pool is below ``size``, else wait for one."""
        with self.cond:
            while True:
                if self.closed:
                    raise RequestError("the model server is shutting down")
                if self.idle:
                    return self.idle.pop()
                if self.made < self.size:
                    self.made += 1
                    break
                self.cond.wait()
        assert self.make is not None
        try:
            return self.make()  # outside the lock: a load takes a while
        except BaseException:
            with self.cond:
                self.made -= 1
                self.size = self.made or 1  # a load that fails is not tried again
                self.cond.notify_all()
            raise

    def release(self, backend: ChatBackend) -> None:
        with self.cond:
            self.idle.append(backend)
            self.cond.notify()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def default_parallel(model_bytes: int, n_ctx: int, threads: int) -> int:
    """Model instances to serve with: one per ``threads`` cores, at most 4, and as many
    as half the available memory holds (an instance: its KV cache, ~48 KiB a token of
    context for the bundled model, plus a tenth of the mapped file)."""
    cores = max(1, (os.cpu_count() or 1) // max(1, threads))
    per = n_ctx * (48 << 10) + model_bytes // 10
    avail = _available_memory()
    by_memory = max(1, (avail // 2) // per) if avail else 1
    return int(max(1, min(4, cores, by_memory)))


def _available_memory() -> int | None:
    """``MemAvailable`` in bytes (None where /proc/meminfo does not say)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        return None
    return None


class RequestError(ValueError):
    """A request the server refuses (HTTP 400, with this message)."""


def llama_request(body: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``Llama.create_chat_completion`` for an OpenAI request.

    Raises:
        RequestError: no messages, tools, streaming, or an unknown response format.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty list")
    if body.get("tools") or body.get("functions"):
        raise RequestError("the local model does not support tools (function calling)")
    if body.get("stream"):
        raise RequestError("the local model server does not stream")
    out: dict[str, Any] = {
        "messages": [
            {"role": str(m.get("role", "user")), "content": _text(m.get("content"))}
            for m in messages
        ],
        "max_tokens": int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        or MAX_TOKENS_DEFAULT,
    }
    for key in _PASSED:
        if body.get(key) is not None:
            out[key] = body[key]
    out.setdefault("seed", DEFAULT_SEED)
    fmt = body.get("response_format")
    grammar = body.get("grammar")
    if grammar is not None:
        if not isinstance(grammar, str) or not grammar.strip():
            raise RequestError("'grammar' must be a non-empty GBNF text")
        if fmt and not (isinstance(fmt, dict) and fmt.get("type") == "text"):
            raise RequestError("a request may carry a 'grammar' or a 'response_format', not both")
        out["grammar"] = grammar
    if fmt:
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        if kind == "json_schema":
            spec = fmt.get("json_schema") or {}
            schema = spec.get("schema") if isinstance(spec, dict) else None
            out["response_format"] = {"type": "json_object", "schema": bounded(schema or {})}
        elif kind == "json_object":
            schema = fmt.get("schema")
            out["response_format"] = (
                {"type": "json_object", "schema": bounded(schema)}
                if schema
                else {"type": "json_object"}
            )
        elif kind != "text":
            raise RequestError(f"unsupported response_format type {kind!r}")
    return out


def bounded(schema: Any) -> Any:
    """A copy of a JSON schema whose unbounded strings and arrays get ``STRING_CAP`` /
    ``ARRAY_CAP`` (what the schema bounds itself, or fixes by enum, const, pattern or
    format, is left alone)."""
    if isinstance(schema, list):
        return [bounded(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: bounded(v) for k, v in schema.items()}
    fixed = any(k in out for k in ("enum", "const", "pattern", "format"))
    if out.get("type") == "string" and "maxLength" not in out and not fixed:
        out["maxLength"] = STRING_CAP
    if out.get("type") == "array" and "maxItems" not in out:
        out["maxItems"] = ARRAY_CAP
    return out


def _text(content: Any) -> str:
    """A message's content as text (OpenAI's list-of-parts form joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def completion_reply(result: dict[str, Any], model: str) -> dict[str, Any]:
    """llama.cpp's completion as OpenAI's response (real token counts)."""
    choice = (result.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    usage = result.get("usage") or {}
    return {
        "id": result.get("id") or f"chatcmpl-local-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(result.get("created") or time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": message.get("content") or ""},
                "finish_reason": choice.get("finish_reason") or "stop",
            }
        ],
        "usage": {
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0),
            "total_tokens": int(usage.get("total_tokens") or 0),
        },
    }


class LocalModelServer:
    """The HTTP front of a pool of backends, on a listening socket made elsewhere.

    parallel: generations served at once (backends made by ``make_backend`` on demand;
    without it, one at a time on ``backend``).
    """

    def __init__(
        self,
        backend: ChatBackend,
        model: str,
        sock: socket.socket,
        compile_grammar: Callable[[str], Any] | None = None,
        *,
        parallel: int = 1,
        make_backend: Callable[[], ChatBackend] | None = None,
    ) -> None:
        self.backend = backend
        self.pool = BackendPool(backend, parallel, make_backend)
        """One backend per generation in flight: a llama.cpp context is not thread-safe."""
        self.compile_grammar = compile_grammar or llama_grammar
        """GBNF text -> what the backend's ``grammar=`` takes (``llama_cpp.LlamaGrammar``)."""
        self.model = model
        self.httpd = ThreadingHTTPServer(sock.getsockname(), self._handler(), False)
        self.httpd.socket.close()
        self.httpd.socket = sock
        self.httpd.daemon_threads = True

    def serve_forever(self) -> None:
        self.httpd.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        self.pool.close()
        self.httpd.shutdown()
        self.httpd.server_close()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion (raises ``RequestError`` for a request it refuses)."""
        kwargs = llama_request(body)
        if "grammar" in kwargs:
            kwargs["grammar"] = self.compile_grammar(kwargs["grammar"])
        backend = self.pool.acquire()
        try:
            result = backend.create_chat_completion(**kwargs)
        finally:
            self.pool.release(backend)
        return completion_reply(result, self.model)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = -1  # a buffered writer: a reply is one write, not headers then body

            def setup(self) -> None:
                super().setup()
                # a reply's last segment must not wait for the ACK of its first (Nagle's
                # algorithm against the client's delayed ACK: ~40-55 ms a keep-alive call)
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()  # buffered (wbufsize): headers and body leave in one write
                self.wfile.write(body)
                self.wfile.flush()

            def _error(self, status: int, message: str, kind: str) -> None:
                self._send(status, {"error": {"message": message, "type": kind, "code": status}})

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                path = self.path.rstrip("/")
                if path.endswith("/models"):
                    self._send(200, {"object": "list",
                                     "data": [{"id": server.model, "object": "model"}]})  # fmt: skip
                elif path.endswith("/health"):
                    self._send(200, {"status": "ok", "model": server.model})
                else:
                    self._error(404, f"no route {self.path}", "not_found")

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._error(404, f"no route {self.path}", "not_found")
                    return
                try:
                    body = json.loads(raw or b"{}")
                    if not isinstance(body, dict):
                        raise RequestError("the request body must be a JSON object")
                    self._send(200, server.complete(body))
                except (RequestError, json.JSONDecodeError) as e:
                    self._error(400, str(e), "invalid_request_error")
                except Exception as e:  # noqa: BLE001 - a failed generation is the server's 500
                    self._error(500, f"{type(e).__name__}: {e}", "server_error")

        return Handler


@functools.lru_cache(maxsize=32)
def llama_grammar(text: str) -> Any:
    """``llama_cpp.LlamaGrammar`` of a GBNF text (agents resend the same few grammars)."""
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_string(text, verbose=False)
    except ValueError as e:
        raise RequestError(f"the grammar does not parse: {e}") from None


def load_llama(path: str, n_ctx: int, n_threads: int) -> ChatBackend:
    """``llama_cpp.Llama`` over ``path`` (quiet; the chat template from the GGUF file)."""
    from llama_cpp import Llama

    llama = Llama(
        model_path=path, n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads,
        verbose=False,
    )  # fmt: skip
    return cast(ChatBackend, llama)


def _exit_with_parent() -> None:
    """Exit when the parent closes our stdin (it died or stopped us)."""
    try:
        while sys.stdin.buffer.read(1 << 16):
            pass
    finally:
        os._exit(0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--name", required=True, help="the model's name in replies")
    ap.add_argument("--fd", type=int, required=True, help="a listening socket to serve on")
    ap.add_argument("--n-ctx", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--parallel", type=int, default=0,
        help="model instances serving at once (0: by cores and free memory)",
    )  # fmt: skip
    args = ap.parse_args()
    threading.Thread(target=_exit_with_parent, name="parent-watch", daemon=True).start()
    sock = socket.socket(fileno=args.fd)
    backend = load_llama(args.model_path, args.n_ctx, args.threads)
    parallel = args.parallel or default_parallel(
        os.path.getsize(args.model_path), args.n_ctx, args.threads
    )
    server = LocalModelServer(
        backend, args.name, sock, parallel=parallel,
        make_backend=functools.partial(load_llama, args.model_path, args.n_ctx, args.threads),
    )  # fmt: skip
    print("ready", flush=True)  # the parent waits for this line (or for our exit)
    server.serve_forever()


if __name__ == "__main__":
    main()
