"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted replies, for tests.

It speaks ``POST /v1/chat/completions`` (and ``/chat/completions``) so the whole litellm ->
openai-client -> HTTP path is exercised. Each request pops the next scripted reply:

- ``"text"``                      a plain assistant message
- ``{"content": "..."}``          the same, explicit
- ``{"tool_calls": [{"name": "f", "arguments": {...} | "raw json"}]}``
- ``{"status": 429, "headers": {"Retry-After": "0.05"}}``  an error status
- ``{"delay_s": 2.0, ...}``       sleep first (to trigger client timeouts)
- ``{"usage": {"prompt_tokens": 10, "completion_tokens": 3}}``  override token counts

When the script is exhausted the ``default`` reply is used; without one the server answers
500 with "script exhausted" so a test that makes too many calls fails loudly. A
``handler(body) -> reply`` callable may replace the script to react to the conversation.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = str | dict[str, Any]

_PATHS = {"/v1/chat/completions", "/chat/completions"}


def _estimate_tokens(obj: Any) -> int:
    """Deterministic token estimate (~4 characters per token) for the usage block."""
    return max(1, len(json.dumps(obj, sort_keys=True)) // 4)


class OpenAICompatServer:
    """Threaded stdlib HTTP server that answers chat completions from a script.

    ``replies``: consumed one per request; ``default``: used once the script is empty;
    ``handler``: if given, called with the request body instead of popping the script.
    """

    def __init__(
        self,
        replies: list[Reply] | None = None,
        *,
        default: Reply | None = None,
        handler: Callable[[dict[str, Any]], Reply] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._replies: list[Reply] = list(replies or [])
        self.default = default
        self.handler = handler
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        """The ``Authorization`` header of each request, in order (None when absent)."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- script control -------------------------------------------------------------
    def script(
        self,
        replies: list[Reply],
        *,
        default: Reply | None = None,
        handler: Callable[[dict[str, Any]], Reply] | None = None,
    ) -> OpenAICompatServer:
        """Replace the script (and default/handler) and forget recorded requests."""
        with self._lock:
            self._replies = list(replies)
            self.default = default
            self.handler = handler
            self.requests = []
        return self

    @property
    def count(self) -> int:
        """Number of chat-completion requests received so far."""
        with self._lock:
            return len(self.requests)

    @property
    def url(self) -> str:
        """Base URL to pass as ``api_base`` (ends with ``/v1``)."""
        if self._httpd is None:
            raise RuntimeError("OpenAICompatServer is not running; call start() first")
        port = self._httpd.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    # -- lifecycle ------------------------------------------------------------------
    def start(self) -> OpenAICompatServer:
        """Bind a random free port on 127.0.0.1 and serve in a daemon thread."""
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None  # keep test output clean

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                server.authorizations.append(self.headers.get("Authorization"))
                raw = self.rfile.read(length) if length else b"{}"
                if self.path.rstrip("/") not in _PATHS:
                    self._send(404, {"error": {"message": f"unknown path {self.path}"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "request body is not JSON"}})
                    return
                reply = server._next_reply(body)
                server._respond(self, body, reply)

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test); nothing to do

        self._handler_cls = _Handler
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OpenAICompatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ------------------------------------------------------------------
    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            handler = self.handler
            if handler is None:
                if self._replies:
                    return self._replies.pop(0)
                if self.default is not None:
                    return self.default
                n = len(self.requests)
                return {
                    "status": 500,
                    "error": f"OpenAICompatServer script exhausted at request {n}",
                }
        return handler(body)

    def _respond(self, h: Any, body: dict[str, Any], reply: Reply) -> None:
        spec: dict[str, Any] = {"content": reply} if isinstance(reply, str) else dict(reply)
        if spec.get("delay_s"):
            time.sleep(float(spec["delay_s"]))
        status = int(spec.get("status", 200))
        headers = {str(k): str(v) for k, v in (spec.get("headers") or {}).items()}
        if status != 200:
            error = spec.get("error", f"scripted status {status}")
            h._send(
                status, {"error": {"message": error, "type": "scripted", "code": status}}, headers
            )
            return
        message: dict[str, Any] = {"role": "assistant", "content": spec.get("content")}
        finish = "stop"
        if spec.get("tool_calls"):
            calls = []
            for i, call in enumerate(spec["tool_calls"]):
                args = call.get("arguments", {})
                calls.append(
                    {
                        "id": call.get("id", f"call_{len(self.requests)}_{i}"),
                        "type": "function",
                        "function": {
                            "name": call["name"],
                            "arguments": args if isinstance(args, str) else json.dumps(args),
                        },
                    }
                )
            message["tool_calls"] = calls
            finish = "tool_calls"
        usage = dict(spec.get("usage") or {})
        usage.setdefault("prompt_tokens", _estimate_tokens(body.get("messages", [])))
        usage.setdefault("completion_tokens", _estimate_tokens(message))
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        payload = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "unknown"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }
        h._send(200, payload, headers)


class SilentServer:
    """Accepts connections on 127.0.0.1 and never answers: a provider that hangs (for
    tests of timeouts and wall caps). ``accepted`` is set once a client has connected."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.accepted = threading.Event()
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            self.accepted.set()

    def close(self) -> None:
        """Stop accepting and drop every held connection."""
        self.sock.close()
        for c in self._conns:
            c.close()
