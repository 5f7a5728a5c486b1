"""Keep-alive vs fresh-connection latency of the embedded model's server through httpx.

The client litellm's OpenAI path uses; 15 requests each, median of the last 14: a
1-token completion and ``GET /v1/models``. Before TCP_NODELAY and one-write replies a
kept-alive request waited ~40-55 ms on Nagle + delayed ACK. Compare checkouts with
``PYTHONPATH=OTHER python benchmarks/local_server_keepalive.py``.
"""

import statistics
import time

import httpx

from optiforge.config import LocalModelSettings
from optiforge.llm.local import LocalServer, model_file

BODY = {
    "model": "local",
    "messages": [{"role": "user", "content": "hi"}],
    "max_tokens": 1,
    "seed": 1,
    "temperature": 0,
}


def latency_ms(url: str, keep: bool, reps: int = 15, get: bool = False) -> float:
    """Median ms of a request on one kept-alive httpx client (``keep``) or a new one each."""
    ts = []
    c = httpx.Client()
    for _ in range(reps):
        if not keep:
            c.close()
            c = httpx.Client()
        t = time.perf_counter()
        if get:
            c.get(url + "/models")
        else:
            c.post(url + "/chat/completions", json=BODY)
        ts.append(time.perf_counter() - t)
    c.close()
    return 1000 * statistics.median(ts[1:])


def main() -> None:
    s = LocalModelSettings()
    path, name = model_file("local", s)
    srv = LocalServer(path, name, s)
    try:
        srv.wait_ready()
        u = srv.url
        post = (latency_ms(u, True), latency_ms(u, False))
        get = (latency_ms(u, True, get=True), latency_ms(u, False, get=True))
    finally:
        srv.close()
    print(f"1-token completion (httpx): keep-alive {post[0]:.1f} ms | fresh {post[1]:.1f} ms")
    print(f"GET /v1/models (httpx):     keep-alive {get[0]:.1f} ms | fresh {get[1]:.1f} ms")


if __name__ == "__main__":
    main()
