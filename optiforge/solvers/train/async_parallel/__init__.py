"""Asynchronous data + pipeline parallelism with weight look-ahead and sparse averaging
(EMA-corrected), on ``torch.distributed`` gloo across four local processes, with its
synchronous baseline (GPipe + all-reduce data parallel). See ``engine`` for the schedules
and the accounting, ``rules`` for the look-ahead and averaging rules, ``text`` for the task.
"""

from optiforge.solvers.train.async_parallel.engine import Config, RunResult, run

__all__ = ["Config", "RunResult", "run"]
