"""What every autoro task tells the model: the I/O protocol, with each set defined."""

from __future__ import annotations


def test_the_protocol_in_every_task_defines_each_uncertainty_set() -> None:
    from optiforge.evals.registry import get_benchmark

    task = get_benchmark("autoro").tasks("dev")[0]
    for definition in ("max_i |z_i| <= rho", "||z||_2 <= rho", "D z <= d", "sum_j |z_j| <= gamma",
                       "z`` in every part", "worst case over ``Z``"):  # fmt: skip
        assert definition in task.description, definition
