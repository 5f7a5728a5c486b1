"""Instant OpenAI-compatible chat server for throughput benchmarks (stdlib only).

Every ``POST /v1/chat/completions`` (or ``/chat/completions``) is answered at once with one
```python code block defining ``f(x)``; the constants come from a request counter, so every
reply is a different program (no duplicate is skipped by either search loop). Runs under
any Python 3 (it is started from another venv's interpreter as well).

    python benchmarks/_instant_llm.py [--port 0] [--port-file PATH] [--burn-ms MS]

It prints ``PORT <n>`` on stdout once listening (and writes the port to ``--port-file``),
then serves until killed. ``GET /stats`` returns ``{"requests": n}``.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_LOCK = threading.Lock()
_COUNT = [0]
_BURN_MS = [0.0]


def program(n: int, burn_ms: float = 0.0) -> str:
    """The ``n``-th reply's program: a quadratic whose constants drift with ``n``; with
    ``burn_ms``, ``f`` first spends that much CPU time (an evaluation that costs what a
    real one does, so worker scaling is measured where evaluations are the work)."""
    a = 3.0 + ((n * 37) % 101 - 50) / 100.0
    b = -2.0 + ((n * 53) % 97 - 48) / 100.0
    c = 1.0 + ((n * 71) % 89 - 44) / 100.0 + n * 1e-6
    burn = (
        f"    end = time.process_time() + {burn_ms / 1000.0:.6f}\n"
        "    while time.process_time() < end:\n        pass\n"
        if burn_ms > 0
        else ""
    )
    head = "import time\n" if burn_ms > 0 else ""
    return (
        f"{head}import numpy as np\n\n\ndef f(x):\n{burn}"
        f"    return {a:.4f} * x**2 + ({b:.4f}) * x + {c:.6f}\n"
    )


def reply_text(n: int) -> str:
    return f"Variant {n}: adjusted the coefficients.\n\n```python\n{program(n, _BURN_MS[0])}```\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Like a production server: no Nagle delay on the keep-alive connection.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _send(self, status: int, obj: object) -> None:
        body = json.dumps(obj).encode()
        head = (
            f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: keep-alive\r\n\r\n"
        ).encode()
        self.wfile.write(head + body)  # one write: headers and body in one segment
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        if self.path.rstrip("/").endswith("/stats"):
            with _LOCK:
                self._send(200, {"requests": _COUNT[0]})
        elif self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "instant", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            req = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            req = {}
        with _LOCK:
            n = _COUNT[0]
            _COUNT[0] += 1
        text = reply_text(n)
        prompt_chars = sum(len(str(m.get("content", ""))) for m in req.get("messages", []))
        usage = {
            "prompt_tokens": max(1, prompt_chars // 4),
            "completion_tokens": max(1, len(text) // 4),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        self._send(
            200,
            {
                "id": f"chatcmpl-instant-{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": req.get("model") or "instant",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            },
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", default=None)
    ap.add_argument(
        "--burn-ms", type=float, default=0.0, help="CPU milliseconds each program's f spends"
    )
    args = ap.parse_args()
    _BURN_MS[0] = args.burn_ms
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    httpd.daemon_threads = True
    port = httpd.server_address[1]
    if args.port_file:
        with open(args.port_file, "w") as fh:
            fh.write(str(port))
    print(f"PORT {port}", flush=True)
    try:
        httpd.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
