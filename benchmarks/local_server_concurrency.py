"""The embedded model's server: 4 concurrent vs 4 sequential requests, keep-alive latency.

Starts ``optiforge.llm.local_server`` on the bundled SmolLM2-135M GGUF (through
``optiforge.llm.local.LocalServer``, as ``--model local`` does), then measures, with the
stdlib HTTP client:

- ``concurrent/sequential``: the wall of ``--n`` chat completions sent at once (one
  connection each) over the wall of the same requests one after another (1.0: the server
  answers one at a time; 1/n: perfect overlap). Same prompts, fixed seed, fixed length.
- keep-alive vs fresh: median latency of a 1-token completion and of ``GET /v1/models``
  through httpx on one kept-alive connection and on a new connection each time (the
  difference was Nagle + delayed ACK: ~40-55 ms).

Run it against another checkout for a before/after (``PYTHONPATH=OTHER python ...``;
a checkout without ``llm.local.parallel`` serves one at a time).

    python benchmarks/local_server_concurrency.py [--n 4] [--tokens 48] [--parallel 0]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import threading
import time
from urllib.parse import urlparse

from optiforge.config import LocalModelSettings
from optiforge.llm.local import LocalServer, model_file


def _body(i: int, tokens: int) -> bytes:
    return json.dumps(
        {
            "model": "local",
            "messages": [{"role": "user", "content": f"Write a haiku about the number {i}."}],
            "max_tokens": tokens,
            "temperature": 0.0,
            "seed": 1,
        }
    ).encode()


def _post(host: str, port: int, i: int, tokens: int) -> int:
    conn = http.client.HTTPConnection(host, port, timeout=600)
    try:
        conn.request(
            "POST", "/v1/chat/completions", _body(i, tokens), {"Content-Type": "application/json"}
        )
        resp = conn.getresponse()
        data = json.loads(resp.read())
        return int(data["usage"]["completion_tokens"])
    finally:
        conn.close()


def _latency(url: str, keep_alive: bool, reps: int, post: bool) -> float:
    """Median latency through httpx (the client litellm's OpenAI path uses; it writes a
    request's headers and body apart, unlike ``http.client``): a 1-token completion
    (``post``) or ``GET /models``, on one kept-alive connection or a new one each time."""
    import httpx

    body = {"model": "local", "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 1, "temperature": 0.0, "seed": 1}  # fmt: skip
    times = []
    client = httpx.Client()
    for _ in range(reps):
        if not keep_alive:
            client.close()
            client = httpx.Client()
        t = time.perf_counter()
        if post:
            client.post(f"{url}/chat/completions", json=body)
        else:
            client.get(f"{url}/models")
        times.append(time.perf_counter() - t)
    client.close()
    return statistics.median(times[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--parallel", type=int, default=0, help="0: the server's default")
    ap.add_argument("--reps", type=int, default=21)
    args = ap.parse_args()
    fields = LocalModelSettings.model_fields
    kw = {"parallel": args.parallel or None} if "parallel" in fields else {}
    settings = LocalModelSettings(**kw)
    path, name = model_file("local", settings)
    server = LocalServer(path, name, settings)
    try:
        server.wait_ready()
        u = urlparse(server.url)
        host, port = u.hostname or "127.0.0.1", int(u.port or 80)
        lat = {  # first: on a server that has served nothing else yet
            (post, keep): _latency(server.url, keep, args.reps, post)
            for post in (True, False)
            for keep in (True, False)
        }
        # warm-up, concurrent: a pool makes its instances on demand (not timed below)
        warm = [
            threading.Thread(target=_post, args=(host, port, 100 + i, 8)) for i in range(args.n)
        ]
        for th in warm:
            th.start()
        for th in warm:
            th.join()
        t = time.perf_counter()
        toks = [_post(host, port, i, args.tokens) for i in range(args.n)]
        seq = time.perf_counter() - t
        out: list[int] = []
        threads = [
            threading.Thread(target=lambda i=i: out.append(_post(host, port, i, args.tokens)))
            for i in range(args.n)
        ]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        conc = time.perf_counter() - t
    finally:
        server.close()
    print(
        f"parallel setting: {kw.get('parallel', 'n/a (one at a time)')}; tokens {sum(toks)} seq, {sum(out)} conc"
    )
    print(
        f"{args.n} sequential: {seq:.2f} s | {args.n} concurrent: {conc:.2f} s | ratio {conc / seq:.2f}"
    )
    for post, what in ((True, "POST 1-token completion"), (False, "GET /v1/models")):
        print(
            f"{what} median (httpx): keep-alive {1000 * lat[post, True]:.1f} ms | "
            f"fresh connection {1000 * lat[post, False]:.1f} ms"
        )


if __name__ == "__main__":
    main()
