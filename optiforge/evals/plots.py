"""Plot helpers shared by the run report (``optiforge.harness.report``) and suite reports."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MIN_SEEDS_FOR_CI = 5
"""Seeds from which a band is the 95% t-interval of the mean (below it: the seeds' range)."""


def task_grid(n_tasks: int) -> tuple[Any, Any]:
    """A figure with one subplot per task, three per row (``axes`` is 2-d)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ncol = min(3, n_tasks)
    nrow = math.ceil(n_tasks / ncol)
    return plt.subplots(nrow, ncol, figsize=(4.5 * ncol, 3.2 * nrow + 0.5), squeeze=False)


def save_task_grid(
    fig: Any,
    axes: Any,
    n_tasks: int,
    path: Path,
    *,
    handles: Sequence[Any] | None = None,
    extra_handles: Sequence[Any] = (),
    title: str | None = None,
) -> Path:
    """Blank the unused subplots, put one legend for the figure, save ``path`` and close.

    The legend holds the first subplot's lines (or ``handles``) plus ``extra_handles``
    (e.g. what a shaded band is), below the title.
    """
    import matplotlib.pyplot as plt

    for ax in list(axes.flat)[n_tasks:]:
        ax.axis("off")
    if handles is None:
        seen: dict[str, Any] = {}
        for ax in list(axes.flat)[:n_tasks]:
            for h, label in zip(*ax.get_legend_handles_labels(), strict=False):
                seen.setdefault(label, h)
        handles = list(seen.values())
    handles = [*handles, *extra_handles]
    ncol = max(1, min(len(handles), 4, int(fig.get_figwidth() / 2.0)))
    head = (
        0.12 + (0.3 if title else 0.0) + (0.27 * math.ceil(len(handles) / ncol) if handles else 0)
    )
    top = 1.0 - head / fig.get_figheight()
    fig.tight_layout(rect=(0, 0, 1, max(top, 0.5)))
    if title:
        fig.suptitle(title, fontsize=10, y=1.0 - 0.06 / fig.get_figheight(), va="top")
    if handles:
        fig.legend(
            handles=handles,
            loc="upper center",
            bbox_to_anchor=(0.5, 1.0 - (0.36 if title else 0.06) / fig.get_figheight()),
            ncol=ncol,
            fontsize=8,
            frameon=False,
        )
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def use_log_scale(values: Sequence[float]) -> bool:
    """Log y when every value is positive and they span more than two decades."""
    vals = [v for v in values if isinstance(v, int | float) and math.isfinite(v)]
    if not vals or min(vals) <= 0:
        return False
    return max(vals) / min(vals) > 100.0


def band(arr: Any) -> tuple[Any, Any, str]:
    """The shaded band of curves ``arr`` (runs x steps, NaN for missing): ``(lo, hi, what)``.

    From ``MIN_SEEDS_FOR_CI`` runs at a step it is the mean ± the 95% Student-t interval,
    clipped at 0 when every value is non-negative (a non-negative metric has no band below
    zero); below that, the min-max range of the runs, because a t-interval from 2-4 runs
    (t = 12.7 at 2) is wider than anything the runs show and says nothing. ``what`` names the
    band for a legend ("" when there is a single run: no band).
    """
    import numpy as np
    from scipy import stats

    a = np.asarray(arr, dtype=float)
    n = np.sum(np.isfinite(a), axis=0)
    nmax = int(n.max()) if n.size else 0
    if nmax < 2:
        return np.full(a.shape[1], np.nan), np.full(a.shape[1], np.nan), ""
    with np.errstate(all="ignore"):
        if nmax >= MIN_SEEDS_FOR_CI:
            mean = np.nanmean(a, axis=0)
            sd = np.nanstd(a, axis=0, ddof=1)
            t = stats.t.ppf(0.975, np.maximum(n - 1, 1))
            half = np.where(n >= 2, t * sd / np.sqrt(np.maximum(n, 1)), np.nan)
            lo, hi = mean - half, mean + half
            if np.nanmin(a) >= 0:
                lo = np.maximum(lo, 0.0)
            return lo, hi, f"mean ± 95% CI over {nmax} seeds"
        return np.nanmin(a, axis=0), np.nanmax(a, axis=0), f"min–max over {nmax} seeds"
