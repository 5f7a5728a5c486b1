"""The asynchronous data + pipeline parallel engine on 4 real gloo processes (127.0.0.1):
the bytes factor (deterministic accounting), the staleness the schedule gives, the loss
against the synchronous baseline, an ablation that loses, and no worker left behind when a
worker fails or hangs.

The asynchrony has a fixed schedule (stage 0 is ``in_flight - 1`` versions stale; an
exchange is folded in exactly ``avg_every`` steps after it is sent), so a run is
reproducible bit for bit and the loss comparisons below are exact facts of this torch
build, checked with margins, not statistics (the benchmark has the seeds and intervals).
"""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

import pytest

from optiforge.errors import SolverError
from optiforge.solvers.train.async_parallel import Config, run
from optiforge.solvers.train.async_parallel.rules import make_stages
from optiforge.solvers.train.async_parallel.text import VOCAB

STEPS = 200
TOL = 0.045
"""Held-out loss (nats/token, about 2.4% of it) the async run may lose against sync after
this short run (async lags early; after 600 steps the benchmark measures about 0.01)."""


@pytest.mark.slow
def test_async_matches_sync_with_fewer_bytes_and_the_ablation_loses(tmp_path: Path) -> None:
    base = Config(steps=STEPS, lr=1e-2, seed=0, data_seed=0)
    sync, asyn, again, no_avg = run(
        [
            Config(**{**base.__dict__, "mode": "sync"}),
            base,
            base,
            Config(**{**base.__dict__, "fraction": 0.0}),
        ],  # fmt: skip
        timeout_s=120,
        workdir=tmp_path,
    )
    # bytes: every tensor sent, counted exactly
    n = [sum(p.numel() for p in st.parameters()) for st in make_stages(0, len(VOCAB), base.context, base.d, base.hidden)]  # fmt: skip
    k = [max(1, round(base.fraction * ni)) for ni in n]
    pipe = STEPS * 2 * 2 * base.batch * base.hidden * 4  # replicas x (activation + gradient)
    assert sync.bytes_pipeline == asyn.bytes_pipeline == pipe
    assert sync.bytes_dp == STEPS * 2 * sum(n) * 4  # ring all-reduce, P = 2: N bytes per rank
    assert asyn.bytes_dp == STEPS // base.avg_every * 2 * sum(k) * 4
    factor = sync.bytes_dp / asyn.bytes_dp
    assert factor == pytest.approx(base.avg_every * sum(n) / sum(k)) and factor > 35
    assert sync.bytes_total / asyn.bytes_total > 4
    assert no_avg.bytes_dp == 0
    # staleness: the 1F1B schedule's, per update (both replicas)
    assert sync.staleness == {0: {0: 2 * STEPS}, 1: {0: 2 * STEPS}}
    assert asyn.staleness == {0: {0: 2, 1: 2 * STEPS - 2}, 1: {0: 2 * STEPS}}
    assert asyn.dp_delay == {base.avg_every: 4 * (STEPS // base.avg_every - 1)}
    # reproducible bit for bit, so the comparisons below are not noise
    assert asyn.val_loss == again.val_loss and asyn.curve == again.curve
    # the claim: async matches sync's held-out loss within TOL ...
    gap = asyn.val_mean - sync.val_mean
    assert abs(gap) < TOL, (sync.val_mean, asyn.val_mean)
    # ... and without the sparse averaging it is not: the replicas drift apart (measured at
    # seed 0: sync 1.910, async +0.031, no averaging +0.053)
    no_avg_gap = no_avg.val_mean - sync.val_mean
    assert no_avg_gap > TOL and no_avg_gap > gap + 0.01, (sync.val_mean, asyn.val_mean, no_avg.val_mean)  # fmt: skip


def test_a_failing_worker_stops_all_and_says_which(tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(SolverError, match="rank 2: RuntimeError: injected failure"):
        run([Config(steps=5, fail_rank=2)], timeout_s=60, workdir=tmp_path)
    assert time.monotonic() - t0 < 30
    assert mp.active_children() == []
    assert list(tmp_path.iterdir()) == []  # the run's directory is removed


def test_a_hanging_worker_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    with pytest.raises(SolverError):
        run([Config(steps=5, hang_rank=1)], timeout_s=3, workdir=tmp_path)
    assert mp.active_children() == []
    assert list(tmp_path.iterdir()) == []  # the run's directory is removed
