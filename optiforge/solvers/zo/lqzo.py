"""LQZO: low-rank quantized zeroth-order fine-tuning of a group-quantized model.

The paper's idea, in words: fine-tune a model whose weights are stored quantized (INT4,
INT2, one scale per group of weights) with forward passes only. Three ingredients make
the two-point (SPSA / MeZO) estimate usable at low bit widths:

1. **Low-rank perturbations.** Each weight matrix ``W`` (``m x n``) is perturbed by
   ``Z = U V^T / sqrt(r)`` with ``U`` (``m x r``) and ``V`` (``n x r``): the perturbation
   and the update live in a rank-``r`` subspace, which costs ``r (m + n)`` random numbers
   instead of ``m n`` and (with ``V`` kept for ``resample_every`` steps, the lazy
   sampling of low-rank ZO methods) concentrates the estimate on a few input
   directions.
2. **Binary-aggregated Gaussian entries.** An entry of ``U`` or ``V`` is the average of
   ``aggregate`` Rademacher signs, ``(2 Binomial(k, 1/2) - k) / sqrt(k)``: mean 0,
   variance 1, odd moments 0 and kurtosis ``3 - 2/k`` (Gaussian moments as ``k`` grows),
   drawn from ``k`` random bits instead of a Gaussian sampler.
3. **Isotropy-enhanced estimation over quantization scale groups.** The perturbation
   of a weight is multiplied by its group's quantization step ``s_g``: in the integer
   code space every group sees the same (isotropic) perturbation, so a group with a
   large step is not under-perturbed (its codes would never move) nor a group with a
   small step over-perturbed. The update ``-lr * c * (s ⊙ Z)`` with
   ``c = (f(x + mu s⊙Z) - f(x - mu s⊙Z)) / (2 mu)`` is then the same in code units for
   every group.

4. **Reshaping the groups (option ``reshape=True``; not the default, see below).** The
   paper reshapes the quantization groups "into more isotropic structures"; its text is
   not available here, so this is **our reading**: before the rank-``r`` draw, each
   matrix's groups are *rearranged* into a near-square ``a x b`` layout
   (``square_group_layout``): ordered by quantization step (groups with similar steps
   sit together, so ``s ⊙ Z`` stays close to ``diag(s_rows) U V^T``, a rank-``r``
   matrix in the layout), laid out row-major with every group whole in one row, and
   ``a ≈ b``. The per-group step multiplication ``D = s ⊙ Z`` stays. Why near-square:
   the rank constraint means something only there. A rank-``r`` draw on an elongated
   ``m x 1`` block (a column of group scales, or the ``out x in/g`` scale matrix of an
   LLM layer with few groups per row) is just a Gaussian column, a full-dimensional
   MeZO direction; on ``a x b`` with ``a ≈ b`` it costs ``r (a + b) ≈ 2 r sqrt(G)``
   random numbers and every factor entry touches ``≈ sqrt(G)`` groups, so every block,
   whatever its shape, is covered by the same kind of perturbation. ``reshape=False``
   (the default) is the rescale-only stand-in: the natural ``m x n`` layout, then
   ``s ⊙ Z``. Note the second moment is ``E[Z Z^T] = I`` in every layout: the layout
   changes the higher moments (which directions the rank-``r`` draws can reach), not
   the marginal isotropy.

   Measured (issue 40, 8 seeds, 2000 passes, 95% t-intervals of the difference paired
   by seed; ``python benchmarks/zo_claims_lqzo_farsign.py --only lqzo-reshape``):
   **no gain; a null result.** Reshaped minus rescale-only test accuracy, groups of
   4 (scale matrices ``32 x 16`` and ``10 x 8``, already near-square: the reshaping
   only reorders by step), ``lr = 0.01``: INT4
   +0.005 [-0.011, +0.022], INT2 -0.008 [-0.027, +0.010] (train loss +0.017
   [-0.039, +0.073] / +0.026 [-0.034, +0.087]); at ``lr = 0.02``: -0.016 [-0.053,
   +0.020] / -0.017 [-0.050, +0.016]. Groups of 16 (elongated ``32 x 4`` and ``10 x 2``
   scale matrices become ``16 x 8`` and ``5 x 4``), ``lr = 0.01``: INT4 +0.009 [-0.007,
   +0.025] (loss -0.048 [-0.113, +0.016]), INT2 -0.010 [-0.029, +0.009]. Against
   quantized MeZO (groups of 4, ``lr = 0.01``) the reshaped variant keeps the train
   loss gain (INT4 -0.178 [-0.262, -0.093], INT2 -0.108 [-0.189, -0.028]) and the INT4
   accuracy gain (+0.020 [+0.001, +0.038]) but its INT2 accuracy gain is not
   significant (+0.007 [-0.006, +0.021]; rescale-only +0.016 [+0.001, +0.030]); at
   ``lr = 0.02`` it loses the INT4 loss gain that rescale-only keeps (-0.037 [-0.164,
   +0.091] vs -0.125 [-0.175, -0.075]). So the gain is the per-group step, not the
   layout. Layout without the step ordering (a one-off ablation, groups of 16,
   ``lr = 0.01``): -0.006 [-0.037, +0.026] (INT4), -0.006 [-0.022, +0.011] (INT2)
   against rescale-only, also null. On this task (a ``64-32-10`` MLP, hundreds of
   groups) the reshaping neither helps nor measurably hurts; whether it pays at LLM
   scale, where the scale matrices are far more elongated, is not measured here.

Choices this module makes where the idea leaves them open (each tested):

- What is fine-tuned: the optimizer takes any parameter vector ``x`` with a
  per-coordinate quantization scale ``scales``. Two uses, both supported and tested:
  (a) ``x`` = the group scales themselves, integer codes frozen (the task default, as
  in quantized ZO fine-tuning that tunes the continuous scales): ``scales = x0``, so
  the isotropic perturbation is *relative*, ``x ⊙ (1 + mu Z)`` at the start, equal
  variance per group in log-scale; (b) ``x`` = the dequantized weights ``s ⊙ q``,
  kept on the grid (``qmax`` given): after each update the iterate is re-quantized by
  unbiased stochastic rounding, ``q <- clip(floor(x/s + xi), -qmax, qmax)``,
  ``xi ~ U[0, 1)``; probes ``x +- mu s⊙Z`` are off-grid (applied in the dequantized
  compute path). Measured (benchmarks/zo_claims_lqzo_farsign.py, 3 seeds, 2000
  passes): (b) barely moves at INT4 (LQZO 0.439, baseline 0.478, start 0.451) and
  collapses to chance at INT2 for both (0.104, 0.110): the rounding noise of each tiny
  update (first order in ``lr``) outweighs the ZO signal. The claim is tested with (a).
- Symmetric quantization, ``qmax = 2^(b-1) - 1`` (INT4: codes -7..7; INT2: -1..1).
- ``x`` is the concatenation of the row-major flattened matrices named by ``shapes``;
  a vector with no shapes is one ``1 x d`` matrix.
- The quantized ZO baseline (``rank=None, aggregate=0, isotropic=False``): MeZO-style
  full-dimensional Gaussian perturbations scaled by the *mean* quantization step
  (so ``mu`` means the same in both), the same update and the same stochastic
  re-quantization. ``QZO_BASELINE`` holds these options.

``recommend()`` returns the current (on-grid) iterate, not the best probe.

Measured on (a) (shifted digits, ``64-32-10`` MLP, groups of 4, 2000 forward passes,
seeds 0-4; test accuracy, start INT4 0.461 / INT2 0.377):

- equal ``lr = 0.01`` (the default): INT4 LQZO 0.782 vs baseline 0.770 (train loss
  0.750 vs 0.921), INT2 0.781 vs 0.768 (0.712 vs 0.822); also at ``lr = 0.005``;
- at ``lr = 0.02`` INT4 still holds (0.823 vs 0.798) but INT2 is a tie (0.809 ± 0.029
  vs 0.814 ± 0.007, loss 0.601 vs 0.620); at ``lr = 0.03`` the isotropic variants turn
  unstable (a large-scale group gets a large step) and the baseline wins;
- best of the ``lr`` grid per method: INT4 0.823 vs 0.798, INT2 0.809 vs 0.814;
- ablations: the gain is the scale isotropy (``isotropic=False`` drops to the
  baseline); binary aggregation costs nothing (``aggregate=0`` within noise); the
  low rank is neutral at small ``lr`` and steadies the isotropic update at
  ``lr = 0.02`` (full-rank isotropic: INT2 0.779); lazy ``V`` does not help.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import Array, AskTellOptimizer, Bounds, Feedback, register

QZO_BASELINE: dict[str, Any] = {"rank": None, "aggregate": 0, "isotropic": False}
"""Options that turn ``LQZO`` into the quantized-MeZO baseline (full Gaussian, global mu)."""


def qmax_for_bits(bits: int) -> int:
    """Largest code of symmetric ``bits``-bit quantization: 7 for INT4, 1 for INT2."""
    if bits < 2:
        raise ConfigError(f"bits must be >= 2, got {bits}")
    return 2 ** (bits - 1) - 1


def group_scales(W: Array, bits: int, group_size: int) -> Array:
    """Per-entry quantization step of ``W`` (``m x n``): one scale per ``group_size``
    consecutive entries of a row (``m x n``).

    The step is ``ratio * max |w| / qmax`` with the clipping ratio in ``[0.3, 1]`` that
    minimizes the group's squared rounding error (a clip search, as post-training
    quantizers do; at INT2 plain ``max |w|`` would round most weights to 0).
    """
    W = np.asarray(W, dtype=np.float64)
    m, n = W.shape
    if group_size < 1 or n % group_size:
        raise ConfigError(f"group_size {group_size} must divide the row length {n}")
    qm = qmax_for_bits(bits)
    G = W.reshape(m, n // group_size, group_size)
    top = np.maximum(np.abs(G).max(axis=2, keepdims=True), 1e-8)
    best_s, best_err = top / qm, np.full(top.shape, np.inf)
    for ratio in np.linspace(0.3, 1.0, 15):  # clip search: the ratio with least group MSE
        s = top * ratio / qm
        err = ((np.clip(np.rint(G / s), -qm, qm) * s - G) ** 2).sum(axis=2, keepdims=True)
        better = err < best_err
        best_s, best_err = np.where(better, s, best_s), np.where(better, err, best_err)
    return np.repeat(best_s[:, :, 0], group_size, axis=1)


def quantize(W: Array, scales: Array, qmax: int) -> Array:
    """Round-to-nearest symmetric quantization, returned dequantized (same shape)."""
    return np.clip(np.rint(W / scales), -qmax, qmax) * scales


def binary_gaussian(rng: np.random.Generator, shape: tuple[int, ...], k: int) -> Array:
    """Entries ``(sum of k Rademacher signs) / sqrt(k)``; ``k=0`` draws exact Gaussians."""
    if k == 0:
        return rng.standard_normal(shape)
    return (2.0 * rng.binomial(k, 0.5, size=shape) - k) / np.sqrt(k)


def square_group_layout(steps: Array, group_size: int) -> tuple[int, int, Array]:
    """Our reading of "reshaping quantization groups": the near-square layout of a block.

    ``steps`` are the per-entry quantization steps of one matrix, row-major (``G *
    group_size`` entries, each run of ``group_size`` one group). The groups are ordered
    by step (stable sort, so ties keep their natural order) and laid out row-major in an
    ``a x b`` matrix with ``a * b = G * group_size``, ``group_size`` dividing ``b`` (a
    group is never split across rows) and ``|log(a / b)|`` smallest (``a >= b`` on a tie).
    Returns ``(a, b, order)``: ``order[j]`` is the block entry that sits at flat position
    ``j`` of the layout.
    """
    steps = np.asarray(steps, dtype=np.float64).reshape(-1)
    if group_size < 1 or steps.size % group_size:
        raise ConfigError(
            f"lqzo: group_size {group_size} must divide every matrix's size ({steps.size})"
        )
    G = steps.size // group_size
    per_group = steps.reshape(G, group_size).mean(axis=1)
    groups = np.argsort(per_group, kind="stable")
    order = (groups[:, None] * group_size + np.arange(group_size)[None, :]).reshape(-1)

    # groups per row k divides G; the most nearly square (rows a, cols b = k g) wins
    def elongation(k: int) -> tuple[Fraction, int]:  # exact ratio: ties broken by k, not ulps
        a, b = G // k, k * group_size
        return Fraction(max(a, b), min(a, b)), k

    best = min((k for k in range(1, G + 1) if G % k == 0), key=elongation)
    return G // best, best * group_size, order


@register
class LQZO(AskTellOptimizer):
    """Low-rank, binary-aggregated, scale-isotropic two-point ZO on a quantized model.

    Each ``ask()`` returns the two probes ``x + mu D`` and ``x - mu D`` (``2 x d``), with
    ``D = s ⊙ Z`` (isotropic) or ``mean(s) Z``; ``tell`` applies
    ``x <- SR(x - lr c D)`` with ``c = (y+ - y-) / (2 mu)``.

    Args:
        x0: starting weights ``(d,)`` (the pretrained, quantized model); default zeros.
        shapes: matrix shapes ``(m, n)`` tiling ``x`` in order (``sum m n == d``).
        scales: per-coordinate quantization step ``(d,)``; ``None`` means no
            quantization (continuous weights, unit scale).
        qmax: largest integer code (``qmax_for_bits(bits)``); needed with ``scales``.
        rank: rank ``r`` of each matrix's perturbation; ``None`` = full-dimensional.
        aggregate: Rademacher signs averaged per entry; 0 = exact Gaussian.
        isotropic: scale the perturbation by each group's step (else by the mean step).
        mu: perturbation size, in units of the (group's or mean) scale; the default 0.05
            is for fine-tuning the scales themselves (5% relative perturbations); when
            ``x`` is on-grid weights, ``mu`` is in quantization steps (0.5 is sensible).
        lr: step size; the update is ``lr c D``, so it is in the same units as ``mu``.
        resample_every: keep each matrix's ``V`` factor for this many steps (lazy).
        clip: bound on ``|c|`` (directional-derivative clipping, as quantized ZO methods
            use against rare huge loss differences); ``None`` = no clipping.
        reshape: ``False`` (default) draws each matrix's ``U V^T`` in its natural
            ``m x n`` layout and only rescales per group (the rescale-only stand-in);
            ``True`` rearranges each matrix's quantization groups by step into a
            near-square ``a x b`` layout first (our reading of the paper's reshaping,
            see the module docstring and ``square_group_layout``).
        group_size: entries per quantization group, contiguous in each matrix's
            row-major order (1 when ``x`` holds one scale per group, as in the
            ``"scales"`` task); only used by ``reshape``.
        keep_history: keep every told probe in ``X`` / ``y`` (the base contract); off by
            default: only the last step's two probes are kept (``d``-dimensional probes
            of every step would hold ``O(steps d)`` memory for nothing).
    """

    name = "lqzo"
    box = False
    summary = (
        "LQZO: low-rank, binary-aggregated (Rademacher) ZO perturbations scaled per "
        "quantization group; fine-tunes INT4/INT2 weights with forward passes only"
    )

    def __init__(
        self,
        dim: int,
        *,
        bounds: Bounds | None = None,
        seed: int = 0,
        x0: Array | None = None,
        shapes: Sequence[tuple[int, int]] | None = None,
        scales: Array | None = None,
        qmax: int | None = None,
        rank: int | None = 2,
        aggregate: int = 4,
        isotropic: bool = True,
        mu: float = 0.05,
        lr: float = 0.01,
        resample_every: int = 1,
        keep_history: bool = False,
        clip: float | None = None,
        reshape: bool = False,
        group_size: int = 1,
    ) -> None:
        super().__init__(dim, bounds=bounds, seed=seed, keep_history=keep_history)
        self.shapes = [(int(m), int(n)) for m, n in (shapes or [(1, dim)])]
        if sum(m * n for m, n in self.shapes) != dim:
            raise ConfigError(f"lqzo: shapes {self.shapes} do not tile dim {dim}")
        if rank is not None and rank < 1:
            raise ConfigError(f"lqzo: rank must be >= 1 or None, got {rank}")
        if aggregate < 0 or mu <= 0 or lr <= 0 or resample_every < 1:
            raise ConfigError("lqzo: need aggregate >= 0, mu > 0, lr > 0, resample_every >= 1")
        if scales is None:
            self.scales = np.ones(dim)
            self.qmax: int | None = None
        else:
            self.scales = np.asarray(scales, dtype=np.float64).reshape(-1)
            if self.scales.shape != (dim,) or np.any(self.scales <= 0):
                raise ConfigError(f"lqzo: scales must be ({dim},) and positive")
            if qmax is not None and qmax < 1:
                raise ConfigError("lqzo: qmax must be >= 1 (qmax_for_bits(bits))")
            self.qmax = None if qmax is None else int(qmax)
        self.rank, self.aggregate, self.isotropic = rank, int(aggregate), bool(isotropic)
        self.mu, self.lr, self.resample_every = float(mu), float(lr), int(resample_every)
        if clip is not None and clip <= 0:
            raise ConfigError("lqzo: clip must be > 0 or None")
        self.clip = None if clip is None else float(clip)
        x = np.zeros(dim) if x0 is None else np.asarray(x0, dtype=np.float64).reshape(-1)
        if x.shape != (dim,):
            raise ConfigError(f"lqzo: x0 must have shape ({dim},)")
        self.x = self._on_grid(x, stochastic=False)
        self.reshape = bool(reshape)
        self._layouts: list[tuple[int, int, Array]] = []  # (a, b, block-local entry order)
        if self.reshape:
            off = 0
            for m, n in self.shapes:
                self._layouts.append(
                    square_group_layout(self.scales[off : off + m * n], int(group_size))
                )
                off += m * n
        self._V: list[Array] = []
        self.steps = 0
        self._D: Array | None = None

    def _on_grid(self, x: Array, *, stochastic: bool) -> Array:
        """``x`` projected onto the quantization grid (SR when ``stochastic``)."""
        if self.qmax is None:
            return x
        q = x / self.scales
        q = np.floor(q + self.rng.random(q.shape)) if stochastic else np.rint(q)
        return np.clip(q, -self.qmax, self.qmax) * self.scales

    def _direction(self) -> Array:
        """A fresh perturbation direction ``D`` (``d``)."""
        k = self.aggregate
        if self.rank is None:
            Z = binary_gaussian(self.rng, (self.dim,), k)
        else:
            r = self.rank
            # the layout each factor pair is drawn in: natural m x n, or the reshaped a x b
            dims = [(a, b) for a, b, _ in self._layouts] if self.reshape else self.shapes
            if not self._V or self.steps % self.resample_every == 0:
                self._V = [binary_gaussian(self.rng, (n, min(r, n)), k) for _, n in dims]
            parts = []
            for i, ((m, _n), V) in enumerate(zip(dims, self._V, strict=True)):
                U = binary_gaussian(self.rng, (m, V.shape[1]), k)
                flat = (U @ V.T / np.sqrt(V.shape[1])).reshape(-1)
                if self.reshape:  # scatter the a x b layout back to the matrix's entries
                    block = np.empty_like(flat)
                    block[self._layouts[i][2]] = flat
                    flat = block
                parts.append(flat)
            Z = np.concatenate(parts)
        return Z * (self.scales if self.isotropic else float(np.mean(self.scales)))

    def _ask(self) -> Array:
        self._D = self._direction()
        return np.stack([self.x + self.mu * self._D, self.x - self.mu * self._D])

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        assert self._D is not None
        c = (y[0] - y[1]) / (2.0 * self.mu)
        if self.clip is not None:  # directional-derivative clipping: one bad probe pair
            c = float(np.clip(c, -self.clip, self.clip))  # cannot throw the scales off
        self.x = self._on_grid(self.x - self.lr * c * self._D, stochastic=True)
        if self.lower is not None and self.upper is not None:  # optional bounds: stay inside
            self.x = np.clip(self.x, self.lower, self.upper)
        self.steps += 1

    def recommend(self) -> Array:
        """The current iterate (on the quantization grid when there are scales)."""
        return self.x.copy()


# -- a fine-tuning task small enough for CPU tests ----------------------------------------


@dataclass
class QuantizedFinetuneTask:
    """A pretrained MLP quantized to ``bits``, to fine-tune on a shifted digits task.

    Both layers' weights are stored as integer codes (``codes``, ``W1``: ``hidden x 64``,
    ``W2``: ``10 x hidden``) times one scale per group of ``group_size`` entries of a row.
    ``target`` says what ZO fine-tunes:

    - ``"scales"`` (default): ``x`` is the vector of group scales (``shapes`` are the
      scale matrices, ``hidden x 64/g`` and ``10 x hidden/g``); the codes stay fixed.
      Pass ``scales=x0`` and ``qmax=None`` to ``LQZO``: the isotropic perturbation is
      then relative to each group's own scale.
    - ``"weights"``: ``x`` is the dequantized weights (``shapes`` the weight matrices);
      ``LQZO`` keeps them on the grid (``scales`` per weight and ``qmax``).

    Biases are frozen at their pretrained full-precision values.
    """

    bits: int
    target: str
    group_size: int
    codes: list[Array]
    x0: Array
    shapes: list[tuple[int, int]]
    scales: Array
    """Per-coordinate quantization scale of ``x`` (``x0`` itself for ``target="scales"``)."""
    qmax: int
    b1: Array
    b2: Array
    X_train: Array
    y_train: Array
    X_test: Array
    y_test: Array
    source_acc: float
    """Full-precision accuracy of the pretrained model on the source task (its test split)."""

    @property
    def lqzo_options(self) -> dict[str, Any]:
        """The ``LQZO`` options that describe this task's parameter vector."""
        qmax = self.qmax if self.target == "weights" else None
        g = self.group_size if self.target == "weights" else 1  # a scale is its own group
        return {
            "x0": self.x0,
            "shapes": self.shapes,
            "scales": self.scales,
            "qmax": qmax,
            "group_size": g,
        }

    def weights(self, x: Array) -> tuple[Array, Array]:
        """The two weight matrices that ``x`` stands for."""
        mats, off = [], 0
        for (m, n), C in zip(self.shapes, self.codes, strict=True):
            block = x[off : off + m * n].reshape(m, n)
            off += m * n
            mats.append(
                block if self.target == "weights" else C * np.repeat(block, self.group_size, axis=1)
            )
        return mats[0], mats[1]

    def logits(self, x: Array, X: Array) -> Array:
        """Class scores ``(N, 10)`` of the MLP with parameters ``x`` on inputs ``X`` (``N x 64``)."""
        W1, W2 = self.weights(x)
        return np.maximum(X @ W1.T + self.b1, 0.0) @ W2.T + self.b2

    def loss(self, x: Array, idx: Array | None = None) -> float:
        """Mean cross-entropy on the training split (rows ``idx`` when given)."""
        X, y = (
            (self.X_train, self.y_train) if idx is None else (self.X_train[idx], self.y_train[idx])
        )
        z = self.logits(x, X)
        z = z - z.max(axis=1, keepdims=True)
        return float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y]))

    def accuracy(self, x: Array) -> float:
        """Accuracy on the target task's test split."""
        return float(np.mean(self.logits(x, self.X_test).argmax(axis=1) == self.y_test))


def _shift_images(X: Array, dx: int) -> Array:
    """The 8x8 digit images (rows of ``X``) translated ``dx`` pixels right, zero-filled."""
    img = X.reshape(-1, 8, 8)
    out = np.zeros_like(img)
    out[:, :, dx:] = img[:, :, : 8 - dx]
    return out.reshape(-1, 64)


def digits_finetune_task(
    bits: int,
    *,
    seed: int = 0,
    hidden: int = 32,
    group_size: int = 4,
    target: str = "scales",
    shift: int = 1,
) -> QuantizedFinetuneTask:
    """Pretrain an MLP on sklearn digits, quantize it to ``bits``, shift the inputs.

    Source task: digits (inputs scaled to [0, 1]); the MLP ``64 -> hidden -> 10`` is
    trained in full precision by Adam (torch, 300 full-batch steps). Target task: the
    same digits translated ``shift`` pixels to the right (a covariate shift the
    pretrained model handles poorly). Weights are quantized per row group of
    ``group_size`` (``group_scales``, round-to-nearest); fine-tuning sees half the
    data, accuracy is measured on the other half.
    """
    import torch
    from sklearn.datasets import load_digits

    if target not in ("scales", "weights"):
        raise ConfigError(f"target must be 'scales' or 'weights', got {target!r}")
    data = load_digits()
    X = data.data / 16.0
    y = data.target.astype(np.int64)
    perm = np.random.default_rng(seed).permutation(len(y))
    tr, te = perm[: len(y) // 2], perm[len(y) // 2 :]
    torch.manual_seed(seed)
    lin1, lin2 = torch.nn.Linear(64, hidden), torch.nn.Linear(hidden, 10)
    net = torch.nn.Sequential(lin1, torch.nn.ReLU(), lin2)
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    Xt, yt = torch.tensor(X[tr], dtype=torch.float32), torch.tensor(y[tr])
    for _ in range(300):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(Xt), yt).backward()
        opt.step()
    with torch.no_grad():
        src_acc = float(
            (net(torch.tensor(X[te], dtype=torch.float32)).argmax(1).numpy() == y[te]).mean()
        )
    Ws = [lin1.weight.detach().double().numpy(), lin2.weight.detach().double().numpy()]
    qm = qmax_for_bits(bits)
    S = [group_scales(W, bits, group_size) for W in Ws]
    codes = [np.clip(np.rint(W / s), -qm, qm) for W, s in zip(Ws, S, strict=True)]
    if target == "scales":
        groups = [s[:, ::group_size] for s in S]
        x0 = np.concatenate([g.reshape(-1) for g in groups])
        shapes = [(g.shape[0], g.shape[1]) for g in groups]
        scales = x0.copy()
    else:
        x0 = np.concatenate([(C * s).reshape(-1) for C, s in zip(codes, S, strict=True)])
        shapes = [(W.shape[0], W.shape[1]) for W in Ws]
        scales = np.concatenate([s.reshape(-1) for s in S])
    Xs = _shift_images(X, shift)
    return QuantizedFinetuneTask(
        bits=bits,
        target=target,
        group_size=group_size,
        codes=codes,
        x0=x0,
        shapes=shapes,
        scales=scales,
        qmax=qm,
        b1=lin1.bias.detach().double().numpy(),
        b2=lin2.bias.detach().double().numpy(),
        X_train=Xs[tr],
        y_train=y[tr],
        X_test=Xs[te],
        y_test=y[te],
        source_acc=src_acc,
    )


def finetune(
    task: QuantizedFinetuneTask,
    forward_passes: int,
    *,
    seed: int = 0,
    batch: int = 128,
    **options: Any,
) -> LQZO:
    """ZO fine-tune ``task`` with ``LQZO(**options)`` for ``forward_passes`` evaluations.

    Each step's two probes share one minibatch of ``batch`` training rows (drawn from a
    ``seed``-ed stream independent of the optimizer's), as MeZO does.
    """
    opt = LQZO(task.x0.size, seed=seed, **{**task.lqzo_options, **options})
    data_rng = np.random.default_rng(seed + 10_000)
    n = len(task.y_train)
    for _ in range(forward_passes // 2):
        idx = data_rng.choice(n, size=min(batch, n), replace=False)
        X = opt.ask()
        opt.tell(X, np.array([task.loss(x, idx) for x in X]))
    return opt


__all__ = [
    "LQZO",
    "QZO_BASELINE",
    "QuantizedFinetuneTask",
    "binary_gaussian",
    "digits_finetune_task",
    "finetune",
    "group_scales",
    "qmax_for_bits",
    "quantize",
    "square_group_layout",
]
