"""Asynchronous data + pipeline parallel training on ``torch.distributed`` (gloo) across
four local processes, and its synchronous baseline.

Topology: 2 data-parallel replicas x 2 pipeline stages, ``rank = 2 * replica + stage``.
Pipeline messages (activations forward, their gradients back) go between ``2r`` and
``2r + 1``; data-parallel traffic between ``s`` and ``2 + s``.

- ``mode="sync"``: GPipe. Each step a replica's minibatch is split into ``microbatches``;
  stage 0 forwards all of them, stage 1 forwards and back-propagates each, stage 0
  back-propagates all (a flush), then each stage ``all_reduce``\\ s its full gradient with
  the other replica's (mean over the global batch) and both take the same Adam step.
- ``mode="async"``: PipeDream-style 1F1B without flushes. Stage 0 keeps ``in_flight``
  minibatches in the pipeline (forward of minibatch ``t + in_flight - 1``, then backward of
  minibatch ``t``) and updates as soon as a gradient returns, so its gradients are
  ``in_flight - 1`` versions stale; stage 1 updates on every minibatch with no staleness.
  Stage 0 forwards on look-ahead weights (``rules.lookahead``). Replicas never
  ``all_reduce``: every ``avg_every`` steps each stage exchanges a random ``fraction`` of
  its coordinates with its peer through ``isend``/``irecv`` and keeps training; the exchange
  is folded in one round later with the EMA correction (``rules.EMACorrection``).

Both modes see the same data (``LMData.batch(replica, step)``), the same model, steps,
batch size and Adam learning rate. The asynchrony is real (separate processes, non-blocking
sends, no global barrier per step) but its schedule is fixed: stage 0's staleness is set by
``in_flight`` and an exchange is folded in exactly ``avg_every`` steps after it was sent, so
a run is reproducible bit for bit (CPU, one thread per process), which is what lets the CI
test compare runs with tight tolerances.

Bytes communicated: every tensor a rank hands to ``send``/``isend`` counts its
``numel * element_size`` (received bytes are not counted again); an ``all_reduce`` of an
``N``-byte tensor among ``P`` ranks counts ``2 (P - 1) / P * N`` per rank, what a ring
all-reduce sends (``N`` for ``P = 2``). The counts are deterministic. Staleness: for every
update the gap between the weight version its gradient was computed on and the version it
is applied to. What is torch's: the process group, gloo, autograd, Adam,
``torch.func.functional_call``; the schedules, the look-ahead, the sparse averaging and the
accounting are ours.

Evaluation: each replica's own model (no final averaging) on held-out windows of a
separately drawn grammar stream; a run reports both replicas and their mean. The last
exchange of an async run is completed (its bytes are counted) but not applied.

Measured (``benchmarks/async_parallel_claims.py``, 5 seeds, 600 steps): async is
+0.0115 [+0.0063, +0.0167] nats above sync with 40x fewer data-parallel bytes; dropping the
averaging or making it 1% loses ~0.012-0.014 more; neither the EMA correction nor the
look-ahead measurably helps at this scale (see the README row).

Ray is not used: the gloo process group already gives the four processes point-to-point
and collective calls; Ray would add seconds of start-up and nothing these runs need.

Processes: started with ``multiprocessing`` (``fork`` by default: the parent has already
imported torch, so four workers start in ~0.1 s instead of ~5 s with ``spawn``; pass
``start_method="spawn"`` where fork is unsafe), rendezvous through a ``file://`` store in
a private temp dir (no port to pick, so no port race; gloo's own sockets bind to ports the
OS assigns, on loopback). The parent polls the workers' sentinels: a worker that fails
(its traceback is written and shown) or a run past ``timeout_s`` gets every worker
terminated, then killed, then joined with a timeout, and a ``SolverError`` raised; the
workers are daemonic, so they die with the parent too.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import multiprocessing.connection
import os
import shutil
import tempfile
import time
import traceback
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from optiforge.errors import SolverError
from optiforge.solvers.train.async_parallel.rules import (
    EMACorrection,
    flatten_params,
    lookahead,
    make_stages,
    sparse_indices,
)
from optiforge.solvers.train.async_parallel.text import VOCAB, LMData

WORLD = 4
_TAG_ACT, _TAG_GRAD, _TAG_DP = 1, 2, 3


@dataclass(frozen=True)
class Config:
    """One training run (all four ranks run it)."""

    mode: Literal["sync", "async"] = "async"
    steps: int = 600
    batch: int = 32
    """Minibatch per replica per step (global batch: twice this)."""
    microbatches: int = 2
    """GPipe's microbatches per step (sync)."""
    lr: float = 1e-2
    lr_end: float = 0.1
    """The learning rate decays from ``lr`` to ``lr_end * lr`` along a cosine (both modes)."""
    seed: int = 0
    """Model initialization (the data stream is ``data_seed``'s)."""
    data_seed: int = 0
    context: int = 6
    d: int = 16
    hidden: int = 128
    in_flight: int = 2
    """Async: minibatches in the pipeline at stage 0 (its staleness is ``in_flight - 1``;
    2 is 1F1B on two stages)."""
    lookahead: bool = True
    lookahead_decay: float = 1.0
    """Look-ahead horizon ``sum_{k<tau} decay**k`` steps (1: ``tau`` steps, SpecTrain's)."""
    avg_every: int = 4
    """Async: steps between sparse-averaging rounds (also the delay an exchange is folded in)."""
    fraction: float = 0.1
    """Async: fraction of a stage's coordinates exchanged per round (0: no averaging)."""
    beta: float = 0.5
    """EMA weight on the replica's own consensus estimate when a received average is folded in."""
    gamma: float = 0.5
    """Fraction of the offset applied to the weights per step."""
    fail_rank: int = -1
    """Testing: this rank raises at the start of the run."""
    hang_rank: int = -1
    """Testing: this rank sleeps forever at the start of the run."""

    def __post_init__(self) -> None:
        if self.mode not in ("sync", "async"):
            raise ValueError(f"mode must be 'sync' or 'async', got {self.mode!r}")
        if self.steps < 1 or self.batch % self.microbatches or self.in_flight < 1:
            raise ValueError("need steps >= 1, in_flight >= 1 and batch divisible by microbatches")  # fmt: skip
        if self.avg_every < 1 or not 0.0 <= self.fraction <= 1.0:
            raise ValueError("need avg_every >= 1 and 0 <= fraction <= 1")


@dataclass
class RunResult:
    """What one run measured (bytes and staleness summed over the ranks)."""

    config: Config
    val_loss: list[float]
    """Held-out cross-entropy (nats/token) of each replica's model at the end."""
    curve: list[float]
    """Training loss per step, mean over replicas."""
    bytes_pipeline: int
    bytes_dp: int
    staleness: dict[int, dict[int, int]]
    """stage -> {version gap: number of updates}."""
    dp_delay: dict[int, int]
    """Async: steps between sending an exchange and folding it in -> count."""
    wall_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def bytes_total(self) -> int:
        return self.bytes_pipeline + self.bytes_dp

    @property
    def val_mean(self) -> float:
        return sum(self.val_loss) / len(self.val_loss)


class _Comm:
    """Point-to-point and collective calls that count the bytes they send."""

    def __init__(self) -> None:
        self.sent: Counter[str] = Counter()
        self.works: list[Any] = []

    def isend(self, t: torch.Tensor, dst: int, tag: int, cat: str) -> None:
        self.sent[cat] += t.numel() * t.element_size()
        self.works.append((dist.isend(t, dst, tag=tag), t))
        self.works = [(w, x) for w, x in self.works if not w.is_completed()]

    def recv(self, shape: tuple[int, ...], src: int, tag: int) -> torch.Tensor:
        buf = torch.empty(shape)
        dist.recv(buf, src, tag=tag)
        return buf

    def all_reduce_mean(self, t: torch.Tensor, group: Any, size: int, cat: str) -> None:
        self.sent[cat] += int(2 * (size - 1) / size * t.numel() * t.element_size())
        dist.all_reduce(t, group=group)
        t.div_(size)

    def finish(self) -> None:
        for w, _ in self.works:
            w.wait()
        self.works = []


def _ce(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, y)


def _grad_flat(module: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) if p.grad is not None else torch.zeros(p.numel()) for p in module.parameters()])  # fmt: skip


def _set_grad_flat(module: nn.Module, g: torch.Tensor) -> None:
    off = 0
    for p in module.parameters():
        p.grad = g[off : off + p.numel()].view_as(p).clone()
        off += p.numel()


def _adam(
    cfg: Config, module: nn.Module
) -> tuple[torch.optim.Adam, torch.optim.lr_scheduler.LambdaLR]:
    opt = torch.optim.Adam(module.parameters(), lr=cfg.lr)

    def ramp(t: int) -> float:
        return cfg.lr_end + (1 - cfg.lr_end) * 0.5 * (1 + math.cos(math.pi * min(t, cfg.steps) / cfg.steps))  # fmt: skip

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, ramp)


def _run_sync(cfg: Config, rank: int, data: LMData, module: nn.Module, comm: _Comm, groups: list[Any]) -> dict[str, Any]:  # fmt: skip
    replica, stage = divmod(rank, 2)
    peer = 2 * replica + (1 - stage)
    opt, sched = _adam(cfg, module)
    m = cfg.microbatches
    mb = cfg.batch // m
    curve: list[float] = []
    for t in range(cfg.steps):
        x, y = data.batch(replica, t, cfg.batch)
        opt.zero_grad(set_to_none=True)
        if stage == 0:
            outs = []
            for i in range(m):
                out = module(x[i * mb : (i + 1) * mb])
                comm.isend(out.detach(), peer, _TAG_ACT, "pipeline")
                outs.append(out)
            for out in outs:  # the flush: every microbatch's gradient before the update
                out.backward(comm.recv((mb, cfg.hidden), peer, _TAG_GRAD))
        else:
            total = 0.0
            for i in range(m):
                a = comm.recv((mb, cfg.hidden), peer, _TAG_ACT).requires_grad_()
                loss = _ce(module(a), y[i * mb : (i + 1) * mb]) / m
                loss.backward()
                assert a.grad is not None
                comm.isend(a.grad, peer, _TAG_GRAD, "pipeline")
                total += float(loss.detach())
            curve.append(total)
        g = _grad_flat(module)
        comm.all_reduce_mean(g, groups[stage], 2, "dp")
        _set_grad_flat(module, g)
        opt.step()
        sched.step()
    return {"curve": curve, "staleness": dict(Counter({0: cfg.steps})), "dp_delay": {}}


def _run_async(cfg: Config, rank: int, data: LMData, module: nn.Module, flat: torch.Tensor, comm: _Comm) -> dict[str, Any]:  # fmt: skip
    replica, stage = divmod(rank, 2)
    peer = 2 * replica + (1 - stage)
    dp_peer = 2 * (1 - replica) + stage
    opt, sched = _adam(cfg, module)
    names = [n for n, _ in module.named_parameters()]
    params = list(module.parameters())
    tau = cfg.in_flight - 1 if stage == 0 else 0
    delta = torch.zeros_like(flat)
    corr = EMACorrection(flat, cfg.beta, cfg.gamma)
    staleness: Counter[int] = Counter()
    dp_delay: Counter[int] = Counter()
    curve: list[float] = []
    pending: tuple[int, torch.Tensor, torch.Tensor, torch.Tensor, Any, Any] | None = None
    inflight: deque[tuple[list[torch.Tensor], torch.Tensor, int]] = deque()
    version = 0

    def delta_views() -> list[torch.Tensor]:
        out, off = [], 0
        for p in params:
            out.append(delta[off : off + p.numel()].view_as(p))
            off += p.numel()
        return out

    def forward(step: int) -> None:  # stage 0 only
        x, _ = data.batch(replica, step, cfg.batch)
        ws = [p.detach() for p in params]
        if cfg.lookahead and tau > 0:
            stash = lookahead(ws, delta_views(), tau, cfg.lookahead_decay)
        else:
            stash = [w.clone() for w in ws]  # weight stashing
        for w in stash:
            w.requires_grad_()
        out = functional_call(module, dict(zip(names, stash, strict=True)), (x,))
        comm.isend(out.detach(), peer, _TAG_ACT, "pipeline")
        inflight.append((stash, out, version))

    def fold(step: int, record: bool = True) -> None:
        nonlocal pending
        if pending is None:
            return
        sent_at, idx, sent, buf, w_send, w_recv = pending
        w_send.wait()
        w_recv.wait()
        corr.receive(idx, sent, buf)
        if record:
            dp_delay[step - sent_at] += 1
        pending = None

    if stage == 0:
        for s in range(min(cfg.in_flight - 1, cfg.steps)):
            forward(s)
    for t in range(cfg.steps):
        opt.zero_grad(set_to_none=True)
        if stage == 0:
            if t + cfg.in_flight - 1 < cfg.steps:
                forward(t + cfg.in_flight - 1)
            g = comm.recv((cfg.batch, cfg.hidden), peer, _TAG_GRAD)
            stash, out, used = inflight.popleft()
            grads = torch.autograd.grad(out, stash, g)
            for p, gr in zip(params, grads, strict=True):
                p.grad = gr
        else:
            _, y = data.batch(replica, t, cfg.batch)
            a = comm.recv((cfg.batch, cfg.hidden), peer, _TAG_ACT).requires_grad_()
            loss = _ce(module(a), y)
            loss.backward()
            assert a.grad is not None
            comm.isend(a.grad, peer, _TAG_GRAD, "pipeline")
            curve.append(float(loss.detach()))
            used = version
        before = flat.clone()
        opt.step()
        sched.step()
        torch.sub(flat, before, out=delta)
        staleness[version - used] += 1
        version += 1
        if cfg.fraction > 0:
            corr.apply()
            if (t + 1) % cfg.avg_every == 0:
                fold(t)
                idx = sparse_indices(
                    flat.numel(), cfg.fraction, cfg.seed, stage, (t + 1) // cfg.avg_every
                )
                sent = corr.estimate(idx)
                buf = torch.empty_like(sent)
                comm.sent["dp"] += sent.numel() * sent.element_size()
                w_send = dist.isend(sent, dp_peer, tag=_TAG_DP)
                w_recv = dist.irecv(buf, dp_peer, tag=_TAG_DP)
                pending = (t, idx, sent, buf, w_send, w_recv)
    fold(cfg.steps, record=False)  # complete the last exchange (its bytes were sent); not applied
    return {"curve": curve, "staleness": dict(staleness), "dp_delay": dict(dp_delay)}


def _warm_torch() -> None:
    """Import what the first optimizer step and ``functional_call`` import lazily (~5 s
    here, in every worker otherwise): done in the parent, forked workers inherit it."""
    lin = nn.Linear(2, 2)
    opt = torch.optim.Adam(lin.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 1.0)
    w = {n: p.detach().clone().requires_grad_() for n, p in lin.named_parameters()}
    out = functional_call(lin, w, (torch.zeros(1, 2),))
    torch.autograd.grad(out.sum(), list(w.values()))
    _ce(lin(torch.zeros(1, 2)), torch.zeros(1, dtype=torch.int64)).backward()
    opt.step()
    sched.step()


def _worker(rank: int, init_file: str, jobs: list[Config], out_dir: str, timeout_s: float) -> None:
    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD, timeout=timedelta(seconds=timeout_s))  # fmt: skip
        groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
        datas: dict[int, LMData] = {}
        for j, cfg in enumerate(jobs):
            if rank == cfg.fail_rank:
                raise RuntimeError(f"injected failure on rank {rank}")
            if rank == cfg.hang_rank:
                time.sleep(10_000)
            if cfg.data_seed not in datas:
                datas[cfg.data_seed] = LMData(cfg.context, data_seed=cfg.data_seed)
            data = datas[cfg.data_seed]
            module: nn.Module = make_stages(cfg.seed, len(VOCAB), cfg.context, cfg.d, cfg.hidden)[
                rank % 2
            ]
            flat = flatten_params(module)
            comm = _Comm()
            dist.barrier()
            t0 = time.perf_counter()
            if cfg.mode == "sync":
                res = _run_sync(cfg, rank, data, module, comm, groups)
            else:
                res = _run_async(cfg, rank, data, module, flat, comm)
            comm.finish()
            dist.barrier()
            res.update(wall_s=time.perf_counter() - t0, sent=dict(comm.sent), state=flat.clone())
            torch.save(res, os.path.join(out_dir, f"job{j}_rank{rank}.pt"))
        dist.destroy_process_group()
    except BaseException:
        with open(os.path.join(out_dir, f"error_rank{rank}.txt"), "w") as f:
            f.write(traceback.format_exc())
        os._exit(1)


def _last_line(path: str) -> str:
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        lines = f.read().strip().splitlines()
    return lines[-1] if lines else ""


def _stop(procs: list[Any]) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=3)
        if p.is_alive():
            p.kill()
            p.join(timeout=3)


def _evaluate(cfg: Config, data: LMData, states: list[torch.Tensor]) -> float:
    """Held-out cross-entropy of the model whose stage buffers are ``states`` (stage 0, 1)."""
    stages = make_stages(cfg.seed, len(VOCAB), cfg.context, cfg.d, cfg.hidden)
    for st, flat in zip(stages, states, strict=True):
        torch.nn.utils.vector_to_parameters(flat, st.parameters())
    with torch.no_grad():
        return float(_ce(stages[1](stages[0](data.val_x)), data.val_y))


def run(
    jobs: list[Config],
    timeout_s: float = 300.0,
    start_method: str = "fork",
    workdir: str | os.PathLike[str] | None = None,
) -> list[RunResult]:
    """Run ``jobs`` one after another on four gloo worker processes; evaluate here.

    The rendezvous store and the workers' results live in a fresh directory under
    ``workdir`` (the system temp dir by default), removed at the end."""
    tmp = tempfile.mkdtemp(prefix="optiforge-async-", dir=workdir)
    ctx: Any = mp.get_context(start_method)
    if start_method == "fork":
        _warm_torch()
    procs = [ctx.Process(target=_worker, args=(r, os.path.join(tmp, "store"), jobs, tmp, timeout_s), daemon=True) for r in range(WORLD)]  # fmt: skip
    try:
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout_s
        while True:
            failed = [r for r, p in enumerate(procs) if p.exitcode not in (None, 0)]
            if failed:
                _stop(procs)
                msgs = []
                for r in failed:
                    path = os.path.join(tmp, f"error_rank{r}.txt")
                    tb = _last_line(path) or f"exit code {procs[r].exitcode}"
                    msgs.append(f"rank {r}: {tb}")
                raise SolverError("async_parallel worker failed: " + "; ".join(msgs))
            alive = [p for p in procs if p.exitcode is None]
            if not alive:
                break
            if time.monotonic() > deadline:
                _stop(procs)
                raise SolverError(
                    f"async_parallel run passed its {timeout_s:.0f} s timeout; workers stopped"
                )
            multiprocessing.connection.wait([p.sentinel for p in alive], timeout=0.2)
        results = []
        datas: dict[int, LMData] = {}
        for j, cfg in enumerate(jobs):
            per_rank = [torch.load(os.path.join(tmp, f"job{j}_rank{r}.pt")) for r in range(WORLD)]
            if cfg.data_seed not in datas:
                datas[cfg.data_seed] = LMData(cfg.context, data_seed=cfg.data_seed)
            val = [_evaluate(cfg, datas[cfg.data_seed], [per_rank[2 * k]["state"], per_rank[2 * k + 1]["state"]]) for k in range(2)]  # fmt: skip
            curves = [per_rank[1]["curve"], per_rank[3]["curve"]]
            results.append(RunResult(
                config=cfg,
                val_loss=val,
                curve=[(a + b) / 2 for a, b in zip(*curves, strict=True)],
                bytes_pipeline=sum(pr["sent"].get("pipeline", 0) for pr in per_rank),
                bytes_dp=sum(pr["sent"].get("dp", 0) for pr in per_rank),
                staleness={s: dict(sum((Counter(per_rank[2 * k + s]["staleness"]) for k in range(2)), Counter())) for s in range(2)},  # fmt: skip
                dp_delay=dict(sum((Counter(pr["dp_delay"]) for pr in per_rank), Counter())),
                wall_s=max(pr["wall_s"] for pr in per_rank),
            ))  # fmt: skip
        return results
    finally:
        _stop(procs)
        shutil.rmtree(tmp, ignore_errors=True)
