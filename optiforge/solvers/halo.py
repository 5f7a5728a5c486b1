"""HALO: homotopy-driven layer-wise post-training (supervised fine-tuning and distillation).

The idea, in words: a continuous homotopy parameter ``t`` rises from 0 to 1 over
training; monotonically increasing auxiliary functions ``a_l(t)`` (one per block)
deform the problem so that blocks join the trainable set progressively, **from the
output back to the input**. Early on only the head and the top blocks train, so the
backward pass stops high in the network and an early step is cheap on a CPU; by
``t = 1`` the problem is full fine-tuning.

The deformation this module implements (the idea leaves it open; choices tested in
``tests/solvers/test_halo.py``):

- **Objective homotopy by reparametrization** (``deformation="reparam"``, the default).
  Block ``l``'s parameters are ``theta_l = theta_l^0 + a_l(t) * delta_l`` with
  ``delta_l`` the trained variable (starting at 0) and ``theta_l^0`` the pretrained
  weights; the head (``head=``) is always trained directly. The deformed objective is
  ``H(delta, t) = loss(theta^0 + A(t) delta)``: at ``t = 0`` it is head-only training on a
  frozen pretrained body, at ``t = 1`` full fine-tuning in displacement coordinates, and it
  is continuous in ``t``. ``d H / d delta_l = a_l(t) * d loss / d theta_l`` (computed
  from the module's own gradient, no forward overhead). A block's parameters always hold
  its current ``theta_l``, so the model can be used (or saved) at any step.
  ``deformation="step"`` is the alternative reading: the block's AdamW learning rate is
  ``lr * a_l(t)`` (a homotopy of the dynamics, not of the objective).
- **Auxiliary functions**: block ``k`` counted from the output (``k = 0`` is the last
  block) ramps ``a_k(t) = smoothstep((t - s_k) / w)`` with ``smoothstep(x) = 3x^2 - 2x^3``
  on ``[0, 1]`` (0 before, 1 after: monotone and C^1), starts
  ``s_k = k (1 - w) / (L - 1)`` and width ``w`` (``HaloConfig.width``, default
  ``2 / (L + 1)``: each ramp overlaps half of its neighbours'), so the input block
  finishes exactly at ``t = 1``. ``homotopy=False`` replaces every ramp by a hard 0/1
  switch at its midpoint (progressive top-down unfreezing without the deformation: the
  stand-in the claim tests compare against).
- **Schedule**: ``t = min(1, step / (ramp * steps))`` (``HaloConfig.ramp``, default 0.5):
  the second part of the run is the full problem.
- **Frozen means free**: a block with ``a_l(t) = 0`` has ``requires_grad=False``; with
  all blocks below the lowest active one frozen, autograd stops there. This needs every
  parameter *below* the blocks (the embeddings) to be frozen by the caller: with tied
  input/output embeddings (SmolLM2's ``lm_head`` *is* ``embed_tokens``) a trainable head
  makes the backward pass reach the embeddings through every block. ``train`` warns once
  when it sees that (the input of a frozen first block requires grad).
- All methods use ``torch.optim.AdamW`` with ``HaloConfig.weight_decay`` (default 0, so
  the displacement parametrization gains no hidden pull towards the pretrained weights
  that the baselines lack).

Baselines in the same function: ``method="full"`` (every block and the head trainable from
step 0) and ``method="blockwise"`` (plain block-wise layer training: ``L`` equal phases,
one block trainable at a time from the output to the input, hard switches, head always
trainable, no homotopy).
"""

from __future__ import annotations

import itertools
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

Method = Literal["halo", "full", "blockwise"]
METHODS: tuple[str, ...] = ("halo", "full", "blockwise")


class HaloConfig(BaseModel):
    """Options of the homotopy (``method="halo"``) and of the shared optimizer."""

    model_config = ConfigDict(extra="forbid")

    ramp: float = Field(default=0.5, gt=0.0, le=1.0)
    """Fraction of the steps over which ``t`` rises from 0 to 1 (then stays at 1)."""
    width: float | None = Field(default=None, gt=0.0, le=1.0)
    """Width in ``t`` of each block's ramp; None: ``2 / (L + 1)``."""
    homotopy: bool = True
    """False: hard 0/1 switches at the ramps' midpoints (no deformation; a stand-in)."""
    deformation: Literal["reparam", "step"] = "reparam"
    """``reparam``: theta = theta0 + a(t) delta; ``step``: block lr scaled by a(t)."""
    weight_decay: float = Field(default=0.0, ge=0.0)
    """AdamW weight decay, the same for every method."""
    grad_clip: float | None = Field(default=1.0, gt=0.0)
    """Clip the global gradient norm (all methods); None: no clipping."""


class StepInfo(BaseModel):
    """What ``on_step`` receives after every optimizer step."""

    model_config = ConfigDict(frozen=True)

    step: int
    t: float
    """Homotopy parameter in ``[0, 1]`` (full / blockwise: the fraction of steps done)."""
    loss: float
    """The minibatch loss before this step's update."""
    active_blocks: int
    """How many blocks were trainable in this step (the head is not counted)."""
    cpu_seconds: float
    """Process CPU time of this step (forward, backward and update)."""


class TrainResult(BaseModel):
    """History of a ``train`` run."""

    history: list[StepInfo]
    final_loss: float
    steps: int


def smoothstep(x: float) -> float:
    """``3x^2 - 2x^3`` on ``[0, 1]``, 0 below and 1 above (monotone, C^1)."""
    x = min(1.0, max(0.0, x))
    return x * x * (3.0 - 2.0 * x)


def ramp_starts(n_blocks: int, width: float) -> list[float]:
    """Start ``s_k`` of each block's ramp, ``k = 0`` the output-most block."""
    if n_blocks == 1:
        return [0.0]
    return [k * (1.0 - width) / (n_blocks - 1) for k in range(n_blocks)]


def auxiliary(t: float, n_blocks: int, config: HaloConfig | None = None) -> list[float]:
    """``a_l(t)`` for every block in INPUT->OUTPUT order (the list ``blocks`` uses)."""
    cfg = config or HaloConfig()
    width = cfg.width if cfg.width is not None else 2.0 / (n_blocks + 1)
    out = []
    for s in ramp_starts(n_blocks, width):
        if cfg.homotopy:
            out.append(smoothstep((t - s) / width))
        else:
            out.append(1.0 if t >= s + width / 2.0 else 0.0)
    return out[::-1]  # starts were counted from the output


def _params(modules: Iterable[nn.Module]) -> list[nn.Parameter]:
    seen: set[int] = set()
    out = []
    for m in modules:
        for p in m.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def _cycle(batches: Iterable[Any]) -> Iterator[Any]:
    it = itertools.cycle(batches)
    first = next(it, _EMPTY)
    if first is _EMPTY:
        raise ValueError("train: batches is empty")
    return itertools.chain([first], it)


_EMPTY = object()


def _scales(
    method: str, step: int, steps: int, n: int, cfg: HaloConfig
) -> tuple[float, list[float]]:
    """``(t, a)`` of a step: ``a`` per block, INPUT->OUTPUT order, 0 = frozen."""
    if method == "full":
        return step / max(1, steps - 1), [1.0] * n
    if method == "blockwise":
        phase = min(n - 1, step * n // steps)  # 0 = output-most block
        a = [0.0] * n
        a[n - 1 - phase] = 1.0
        return step / max(1, steps - 1), a
    t = min(1.0, step / max(1.0, cfg.ramp * steps))
    return t, auxiliary(t, n, cfg)


def train(
    loss_fn: Callable[[Any], torch.Tensor],
    batches: Iterable[Any],
    *,
    blocks: Sequence[nn.Module],
    head: Sequence[nn.Module],
    steps: int,
    method: Method = "halo",
    lr: float = 1e-4,
    config: HaloConfig | None = None,
    on_step: Callable[[StepInfo], None] | None = None,
    seed: int = 0,
) -> TrainResult:
    """Fine-tune ``blocks`` and ``head`` on ``loss_fn`` over ``batches`` for ``steps`` steps.

    Args:
        loss_fn: ``loss_fn(batch)`` returns a scalar loss (SFT cross-entropy, a
            distillation KL, ...), computed through the model that owns the blocks.
        batches: cycled as needed.
        blocks: the model's layers in INPUT->OUTPUT order (e.g. ``model.model.layers``).
        head: modules trained in every step (e.g. ``[model.model.norm, model.lm_head]``).
            Parameters in neither are not trained; freeze those below the blocks
            (embeddings) yourself, or frozen blocks still cost a backward pass.
        method: ``halo``, ``full`` (all blocks from step 0) or ``blockwise`` (one block at
            a time, output to input, hard switches).
        seed: seeds torch's generator (dropout, anything ``loss_fn`` draws).
    """
    if method not in METHODS:
        raise ValueError(f"train: method must be one of {METHODS}, got {method!r}")
    if steps < 1:
        raise ValueError(f"train: steps must be >= 1, got {steps}")
    if not blocks:
        raise ValueError("train: blocks is empty")
    if not lr > 0:
        raise ValueError(f"train: lr must be > 0, got {lr}")
    cfg = config or HaloConfig()
    torch.manual_seed(seed)
    n = len(blocks)
    block_params = [_params([b]) for b in blocks]
    head_params = [p for p in _params(head) if all(p is not q for ps in block_params for q in ps)]
    all_params = [p for ps in block_params for p in ps] + head_params
    saved_flags = [p.requires_grad for p in all_params]
    reparam = method == "halo" and cfg.deformation == "reparam"

    # In the reparam deformation the optimizer owns delta (one leaf per block parameter)
    # and the module holds theta0 + a * delta; otherwise it owns the module parameters.
    theta0 = [[p.detach().clone() for p in ps] for ps in block_params] if reparam else []
    delta = [[torch.zeros_like(p) for p in ps] for ps in block_params] if reparam else []
    block_vars = delta if reparam else block_params
    groups: list[dict[str, Any]] = [{"params": list(vs), "lr": lr} for vs in block_vars]
    if head_params:
        groups.append({"params": head_params, "lr": lr})
    groups = [g for g in groups if g["params"]]
    opt = torch.optim.AdamW(groups, lr=lr, weight_decay=cfg.weight_decay)
    group_of_block = [i for i, vs in enumerate(block_vars) if vs]
    group_index = {b: g for g, b in enumerate(group_of_block)}

    warned = [False]

    def _probe(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        # Seen at the first block's input: does anything below it still want gradients?
        x = args[0] if args else kwargs.get("hidden_states")
        if (
            not warned[0]
            and isinstance(x, torch.Tensor)
            and x.requires_grad
            and not any(p.requires_grad for p in block_params[0])
        ):
            warned[0] = True
            warnings.warn(
                "halo.train: the input of the frozen first block requires grad (trainable "
                "parameters below the blocks, e.g. tied embeddings): frozen blocks are "
                "still back-propagated",
                stacklevel=2,
            )

    hook = blocks[0].register_forward_pre_hook(_probe, with_kwargs=True)
    data = _cycle(batches)
    history: list[StepInfo] = []
    prev_a = [0.0] * n  # reparam: theta = theta0 while a = 0, so skip rewriting it
    try:
        for p in head_params:
            p.requires_grad_(True)
        for step in range(steps):
            c0 = time.process_time()
            t, a = _scales(method, step, steps, n, cfg)
            for b in range(n):
                live = a[b] > 0.0
                for p in block_params[b]:
                    p.requires_grad_(live)
                if reparam and a[b] != prev_a[b]:
                    with torch.no_grad():
                        for p, p0, d in zip(block_params[b], theta0[b], delta[b], strict=True):
                            p.copy_(p0 + a[b] * d)
                if b in group_index:
                    scale = a[b] if (method == "halo" and not reparam) else 1.0
                    opt.param_groups[group_index[b]]["lr"] = lr * scale
            opt.zero_grad(set_to_none=True)
            for ps in block_params:
                for p in ps:
                    p.grad = None
            loss = loss_fn(next(data))
            if loss.dim() != 0:
                raise ValueError(
                    f"train: loss_fn must return a scalar, got shape {tuple(loss.shape)}"
                )
            if not torch.isfinite(loss):
                raise FloatingPointError(f"train: loss is {loss.item()} at step {step}")
            loss.backward()
            if reparam:
                for b in range(n):
                    for p, d in zip(block_params[b], delta[b], strict=True):
                        d.grad = None if p.grad is None else a[b] * p.grad
            prev_a = a
            trained = [v for b in range(n) if a[b] > 0 for v in block_vars[b]] + head_params
            if cfg.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(
                    [v for v in trained if v.grad is not None], cfg.grad_clip
                )
            opt.step()
            if reparam:
                with torch.no_grad():
                    for b in range(n):
                        if a[b] > 0:
                            for p, p0, d in zip(block_params[b], theta0[b], delta[b], strict=True):
                                p.copy_(p0 + a[b] * d)
            info = StepInfo(
                step=step,
                t=t,
                loss=float(loss.detach()),
                active_blocks=sum(1 for x in a if x > 0.0),
                cpu_seconds=time.process_time() - c0,
            )
            history.append(info)
            if on_step is not None:
                on_step(info)
    finally:
        hook.remove()
        for p, flag in zip(all_params, saved_flags, strict=True):
            p.requires_grad_(flag)
            p.grad = None
    return TrainResult(history=history, final_loss=history[-1].loss, steps=steps)


def lowest_active_block(a: Sequence[float]) -> int | None:
    """Index (INPUT->OUTPUT) of the lowest block with ``a > 0``; None if all are frozen."""
    for i, x in enumerate(a):
        if x > 0.0:
            return i
    return None


__all__ = [
    "METHODS",
    "HaloConfig",
    "StepInfo",
    "TrainResult",
    "auxiliary",
    "lowest_active_block",
    "ramp_starts",
    "smoothstep",
    "train",
]
