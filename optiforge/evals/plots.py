"""Plot helpers shared by the run report (``optiforge.harness.report``) and suite reports."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def task_grid(n_tasks: int) -> tuple[Any, Any]:
    """A figure with one subplot per task, three per row (``axes`` is 2-d)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ncol = min(3, n_tasks)
    nrow = math.ceil(n_tasks / ncol)
    return plt.subplots(nrow, ncol, figsize=(4.5 * ncol, 3.2 * nrow), squeeze=False)


def save_task_grid(fig: Any, axes: Any, n_tasks: int, path: Path) -> Path:
    """Blank the unused subplots, put the legend on the first, save ``path`` and close."""
    import matplotlib.pyplot as plt

    for ax in list(axes.flat)[n_tasks:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
