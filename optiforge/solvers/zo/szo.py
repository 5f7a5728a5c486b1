"""SZO-kappa: spectral zeroth-order training from the forward pass's activation geometry.

The idea (spectral zeroth-order directions): a zeroth-order (ZO) trainer such as SPSA or
weight perturbation estimates the gradient from loss differences along random parameter
perturbations; in ``D`` parameters the estimate's cosine with the true gradient is only
``~sqrt(m / D)`` for ``m`` probes, so training is slow. But the gradient of a layer is
not an arbitrary matrix: for ``y = W a + b`` the weight gradient is ``sum_n delta_n a_n^T``,
whose rows lie in the span of the layer's *input activations* ``a_n`` (and the bias
gradient is the part along the constant input). The forward pass that measures the
loss already shows that span. SZO-kappa perturbs each layer's weights only inside the
top-``kappa`` right singular subspace of its input-activation matrix, so the
perturbations live in ``D_eff = sum_l out_l * kappa_l`` dimensions instead of ``D``,
where most of the gradient is; the probes are orthogonalized, the estimate is corrected
so that it is unbiased for the gradient's projection on that subspace, and the
directions are whitened by the activations' singular values (the choice that makes the
better alignment pay off in training). The result: a higher gradient alignment and
faster training per forward pass than random perturbations.

Shapes and choices (the issue leaves them open; each is documented and tested):

- **Layers.** The flat parameter vector ``x`` (``(D,)``) is a list of ``LayerSpec``: a
  weight matrix ``out x in`` (row-major at ``offset``) and, when ``bias``, its ``out``
  biases right after. A ``nn.Linear`` is one; a ``nn.Conv2d`` is one with ``in =
  C_in * kh * kw`` acting on unfolded patches (``layer_specs(model)`` builds them in
  ``parameters_to_vector`` order). The activations of layer ``l`` are the matrix
  ``A_l`` (``n_l x in_l``) of its input rows over the minibatch (patches for a conv).
- **Subspace.** ``A_l`` is augmented with a constant column (``[A_l, 1]``, when the
  layer has a bias, so the bias gradient is inside the geometry: the first *bias
  correction*); ``V_l`` (``(in_l + 1) x kappa_l``) are its top ``kappa_l = min(kappa,
  rank)`` right singular vectors (eigenvectors of the small Gram matrix ``A^T A``). A
  layer direction is ``Z_l V_l^T`` with ``Z_l`` (``out_l x kappa_l``); the map ``z ->
  (Z_l V_l^T)_l`` from ``R^{D_eff}`` to parameter space is an isometry onto the spectral
  subspace ``S`` (before the whitening below).
- **Probes.** ``m`` Gaussian vectors in ``R^{D_eff}`` are orthogonalized together (QR;
  ``orthogonalize``) and scaled to norm ``sqrt(D_eff)`` (the second bias correction:
  then ``E[p p^T] = P_S``, so the estimate's expectation is exactly ``P_S g`` rather
  than a shrunk or distorted copy), mapped to parameter directions ``p_i``, and
  evaluated as symmetric pairs ``x +- mu p_i`` (the third: the two-point central
  difference ``a_i = (f(x + mu p_i) - f(x - mu p_i)) / (2 mu)`` cancels the ``O(mu)``
  curvature bias of a one-sided SPSA difference).
- **Whitening** (``whiten = gamma``, default 0.5). Inside the subspace, layer ``l``'s
  singular direction ``j`` is scaled by ``max(s_j / s_1, 0.01)^-gamma`` (``s`` the
  singular values; the floor keeps a near-degenerate direction from taking the budget),
  then all scales by one factor so that their mean square over the ``D_eff`` coordinates
  is 1. The probes' covariance is then ``I_out (x) V diag(s^-2 gamma) V^T``, proportional
  to ``(A^T A)^-gamma`` on the subspace: a square-root, K-FAC-like preconditioner (the
  expectation of the estimate becomes that preconditioned projected gradient, no longer
  ``P_S g``). Why: the top activation directions carry most of the gradient but also
  most of the curvature, so an unwhitened subspace (``gamma = 0``) gives the best cosine
  with the gradient yet, once each method's learning rate is tuned, trains no faster
  than random perturbations (whose directions see little curvature and so take larger
  steps); ``gamma = 0.5`` trades some cosine for equalized curvature and trains several
  times faster (``benchmarks/zo_claims_cvzod_szo.py``; tests pin both facts).
- **Estimate and step.** ``g_hat = (1/m) sum_i a_i p_i`` (``E g_hat = P_S g`` when
  ``gamma = 0``); the step is ``x <- x - lr * (m / D_eff) * g_hat``: with ``gamma = 0``
  gradient descent along the gradient's projection on the ``m`` probed directions (the
  scale ``m / D_eff`` is the signal fraction ``|g|^2 / E|g_hat|^2`` of an isotropic
  estimate). The stable ``lr`` is set by the curvature along the probes, so it is
  larger than a backprop learning rate and differs between methods: tune it per method.
- **One step = two asks.** ``[x]`` (its forward pass gives the loss and, through
  ``tell(..., feedback=[{"activations": [A_1, A_2, ...]}])``, the activations), then the
  ``2 m`` probes: ``2 m + 1`` forward passes per step. The objective must stay the
  same within a step (a fixed minibatch; draw the next one when ``ask()`` returns the
  single base row, ``opt.phase == "base"``). ``TorchObjective`` wraps a model, a loss
  and a batch into ``f(x)``, ``feedback(x)`` and the backprop ``grad(x)``.
- **Baseline.** ``directions="random"``: the same pipeline in the full parameter space
  (``D_eff = D``, no activations, no base point, ``2 m`` passes per step): weight
  perturbation, orthogonalized; with ``orthogonalize=False, rademacher=True`` it is
  classic SPSA (``+-1`` perturbations).

``recommend()`` is the current parameter vector. The optimizer is unbounded (``box =
False``); given bounds, the iterate is kept inside them (``ask`` clips the probes, so
the differences next to a bound are approximate).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import Array, AskTellOptimizer, Bounds, Feedback, register

DIRECTIONS = ("spectral", "random")
WHITEN_FLOOR = 1e-2
"""Smallest singular-value ratio ``s_j / s_1`` the whitening uses (caps a scale at 100^gamma)."""


@dataclass(frozen=True)
class LayerSpec:
    """One ``out x in`` weight matrix at ``offset`` in the flat vector (+ ``out`` biases)."""

    out_features: int
    in_features: int
    bias: bool
    offset: int

    @property
    def size(self) -> int:
        """Parameters of the layer (weights and biases)."""
        return self.out_features * (self.in_features + int(self.bias))


def layer_specs(model: nn.Module) -> list[LayerSpec]:
    """The ``LayerSpec`` of every ``nn.Linear`` / ``nn.Conv2d`` of ``model``, in flat order.

    Raises:
        ConfigError: a parameter outside those layers, a grouped convolution, or an order
            of ``model.parameters()`` that is not layer by layer (weight, then bias).
    """
    specs: list[LayerSpec] = []
    expected: list[Tensor] = []
    offset = 0
    for mod in model.modules():
        if isinstance(mod, nn.Linear | nn.Conv2d):
            if isinstance(mod, nn.Conv2d) and mod.groups != 1:
                raise ConfigError("szo: grouped convolutions are not supported")
            out = mod.weight.shape[0]
            fan_in = int(mod.weight[0].numel())
            has_bias = mod.bias is not None
            specs.append(LayerSpec(out, fan_in, has_bias, offset))
            offset += specs[-1].size
            expected += [mod.weight] + ([mod.bias] if mod.bias is not None else [])
    params = list(model.parameters())
    if len(params) != len(expected) or any(
        p is not q for p, q in zip(params, expected, strict=True)
    ):
        raise ConfigError(
            "szo: every parameter must belong to an nn.Linear or nn.Conv2d, registered "
            "layer by layer (weight, bias)"
        )
    return specs


class TorchObjective:
    """``f(x)``: the loss of ``model`` with flat parameters ``x`` on one batch.

    Also ``feedback(x)`` (the layers' input activations for SZO) and ``grad(x)``
    (backprop, the reference). The model is converted to ``dtype`` (float64 by
    default, so finite differences are not limited by float32 rounding). ``passes``
    counts forward passes (``__call__`` and ``grad``; ``feedback`` reuses the last pass
    at the same ``x``).
    """

    def __init__(
        self,
        model: nn.Module,
        loss_fn: Callable[[Tensor, Tensor], Tensor],
        inputs: Tensor,
        targets: Tensor,
        *,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        self.model = model.to(dtype)
        self.loss_fn = loss_fn
        self.inputs = inputs.to(dtype)
        self.targets = targets
        self.specs = layer_specs(self.model)
        self._layers = [m for m in self.model.modules() if isinstance(m, nn.Linear | nn.Conv2d)]
        self._seen: list[Tensor] = []
        for mod in self._layers:
            mod.register_forward_pre_hook(self._record)
        self._last_x: Array | None = None
        self.passes = 0
        self.dtype = dtype

    def _record(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        self._seen.append(args[0].detach())

    @property
    def dim(self) -> int:
        return sum(s.size for s in self.specs)

    def x0(self) -> Array:
        """The model's current parameters as a flat float64 vector ``(D,)``."""
        return nn.utils.parameters_to_vector(self.model.parameters()).detach().double().numpy()

    def _load(self, x: Array) -> None:
        vec = torch.as_tensor(np.asarray(x, dtype=np.float64), dtype=self.dtype)
        nn.utils.vector_to_parameters(vec, self.model.parameters())

    def __call__(self, x: Array) -> float:
        self._load(x)
        self._seen = []
        with torch.no_grad():
            loss = self.loss_fn(self.model(self.inputs), self.targets)
        self.passes += 1
        self._last_x = np.array(x, dtype=np.float64, copy=True)
        return float(loss)

    def feedback(self, x: Array) -> dict[str, Any]:
        """``{"activations": [A_1, ...]}``: each layer's input rows ``(n_l, in_l)`` at ``x``."""
        if self._last_x is None or not np.array_equal(self._last_x, x):
            self(x)
        acts = []
        for mod, a in zip(self._layers, self._seen, strict=True):
            if isinstance(mod, nn.Conv2d):
                cols = F.unfold(
                    a,
                    mod.kernel_size,
                    dilation=mod.dilation,
                    padding=mod.padding,  # type: ignore[arg-type]
                    stride=mod.stride,
                )
                a = cols.transpose(1, 2).reshape(-1, cols.shape[1])
            acts.append(a.reshape(-1, a.shape[-1]).double().numpy())
        return {"activations": acts}

    def grad(self, x: Array) -> Array:
        """The backprop gradient ``(D,)`` of the loss at ``x``."""
        self._load(x)
        self.model.zero_grad()
        self._seen = []
        loss = self.loss_fn(self.model(self.inputs), self.targets)
        loss.backward()
        self.passes += 1
        g = [p.grad.reshape(-1) for p in self.model.parameters() if p.grad is not None]
        return torch.cat(g).detach().double().numpy()


def spectral_basis(activations: Array, bias: bool, kappa: int) -> tuple[Array, Array]:
    """Top right singular vectors ``(in + bias, kappa')`` of ``[A, 1]`` (``A``: ``n x in``)
    and their singular values ``(kappa',)``.

    ``kappa' = min(kappa, rank)`` (the rank counted on the Gram matrix: squared singular
    values above ``1e-20`` of the largest); a zero activation matrix gives the constant direction
    alone (bias) or one arbitrary unit direction.
    """
    A = np.asarray(activations, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"szo: activations must be a matrix (n, in), got shape {A.shape}")
    if bias:
        A = np.hstack([A, np.ones((A.shape[0], 1))])
    # the right singular vectors of A are the eigenvectors of the small Gram matrix A^T A
    # (in x in), much cheaper than an SVD of the n x in activations
    w, V = np.linalg.eigh(A.T @ A)
    w, V = w[::-1], V[:, ::-1]
    rank = int(np.sum(w / w[0] > 1e-20)) if w.size and w[0] > 0 else 0
    k = max(1, min(kappa, rank))
    return np.ascontiguousarray(V[:, :k]), np.sqrt(np.maximum(w[:k], 0.0))


@register
class SZO(AskTellOptimizer):
    """Spectral zeroth-order trainer (SZO-kappa); ``directions="random"`` is the SPSA baseline.

    Args:
        layers: the flat layout (``LayerSpec`` list covering all ``dim`` parameters);
            required for ``"spectral"``, unless ``model`` is given.
        model: a torch model whose ``layer_specs`` give ``layers`` (and ``x0`` when absent).
        x0: start parameters ``(dim,)`` (zeros when neither ``x0`` nor ``model``).
        lr: step along the probed directions (see the module docstring; tune per method).
        mu: finite-difference step along directions of norm ``sqrt(D_eff)``.
        n_probes: ``m``, symmetric probe pairs per step.
        kappa: singular directions per layer.
        directions: ``"spectral"`` (SZO-kappa) or ``"random"`` (full-space perturbations);
            by default spectral when ``layers`` or ``model`` is given, else random (so a
            generic ``f`` without a layout or activations still runs, as weight perturbation).
        orthogonalize: QR-orthogonalize the ``m`` probe directions.
        rademacher: ``"random"`` only, without ``orthogonalize``: ``+-1`` perturbations (SPSA).
        whiten: exponent ``gamma`` of the singular-value scaling of the spectral directions.
        keep_history: keep every told point in ``X`` / ``y`` (off by default: the last batch).
    """

    name = "szo"
    box = False
    keep_history_default = False  # X / y: the last batch (each row is a network's weights)
    summary = (
        "SZO-kappa: zeroth-order training that perturbs each layer inside the top-kappa "
        "singular subspace of its forward-pass input activations (orthogonalized, "
        "bias-corrected two-point estimates); needs activations via tell feedback"
    )

    def __init__(
        self,
        dim: int,
        *,
        bounds: Bounds | None = None,
        seed: int = 0,
        layers: Sequence[LayerSpec] | None = None,
        model: nn.Module | None = None,
        x0: Array | None = None,
        lr: float = 0.5,
        mu: float = 1e-3,
        n_probes: int = 4,
        kappa: int = 16,
        directions: str | None = None,
        orthogonalize: bool = True,
        rademacher: bool = False,
        whiten: float = 0.5,
        keep_history: bool | None = None,
    ) -> None:
        super().__init__(dim, bounds=bounds, seed=seed, keep_history=keep_history)
        if directions is None:  # spectral when the layout is known, else the plain baseline
            directions = "spectral" if layers is not None or model is not None else "random"
        if directions not in DIRECTIONS:
            raise ConfigError(f"szo: directions must be one of {DIRECTIONS}, got {directions!r}")
        if not lr > 0 or not mu > 0 or n_probes < 1 or kappa < 1:
            raise ConfigError("szo: need lr > 0, mu > 0, n_probes >= 1, kappa >= 1")
        if not 0 <= whiten <= 2:
            raise ConfigError(f"szo: whiten must be in [0, 2], got {whiten}")
        if rademacher and (directions != "random" or orthogonalize):
            raise ConfigError("szo: rademacher needs directions='random', orthogonalize=False")
        if model is not None:
            layers = layer_specs(model) if layers is None else layers
            if x0 is None:
                x0 = nn.utils.parameters_to_vector(model.parameters()).detach().double().numpy()
        self.layers = list(layers) if layers is not None else []
        if directions == "spectral":
            if not self.layers:
                raise ConfigError("szo: directions='spectral' needs layers= or model=")
            covered = sorted((s.offset, s.offset + s.size) for s in self.layers)
            end = 0
            for lo, hi in covered:
                if lo != end:
                    break
                end = hi
            if end != dim:
                raise ConfigError(f"szo: layers must tile the {dim} parameters without gaps")
        x = np.zeros(dim) if x0 is None else np.asarray(x0, dtype=np.float64).reshape(-1)
        if x.shape != (dim,):
            raise ConfigError(f"szo: x0 must have shape ({dim},), got {x.shape}")
        self.x = x.copy()
        self.lr, self.mu = float(lr), float(mu)
        self.n_probes, self.kappa = int(n_probes), int(kappa)
        self.directions, self.orthogonalize, self.rademacher = (
            directions,
            bool(orthogonalize),
            bool(rademacher),
        )
        self.phase = "base" if directions == "spectral" else "probe"
        """``"base"``: the next ask is the iterate alone (new minibatch here); else the probes."""
        self.d_eff = dim
        """Dimension of the perturbation subspace of the last step (``D`` for random)."""
        self.last_grad: Array | None = None
        """The last gradient estimate ``g_hat`` (``(dim,)``)."""
        self.last_loss: float | None = None
        """Loss at the iterate, from the last base evaluation (spectral only)."""
        self.whiten = float(whiten)
        self.steps = 0
        self._bases: list[Array] = []
        self._svals: list[Array] = []
        self._P = np.zeros((0, dim))

    def _check_feedback(self, X: Array, y: Array, feedback: Feedback) -> None:
        if self.phase == "base":
            self._activations(feedback)  # checked before any state changes: a retry can follow

    def _activations(self, feedback: Feedback) -> list[Array]:
        """The base point's activation matrices, one ``(n_l, in_l)`` per layer, checked."""
        acts = None if feedback is None else feedback[0].get("activations")
        if acts is None or len(acts) != len(self.layers):
            raise ValueError(
                f"szo: tell() of the base point needs feedback=[{{'activations': [...]}}] "
                f"with one (n, in) matrix per layer ({len(self.layers)})"
            )
        out = []
        for spec, A in zip(self.layers, acts, strict=True):
            A = np.asarray(A, dtype=np.float64)
            if A.ndim != 2 or A.shape[1] != spec.in_features or not np.all(np.isfinite(A)):
                raise ValueError(
                    f"szo: activations of a layer with in={spec.in_features} must be finite "
                    f"(n, {spec.in_features}), got {A.shape}"
                )
            out.append(A)
        return out

    # -- ask/tell ------------------------------------------------------------------------
    def _ask(self) -> Array:
        if self.phase == "base":
            return self.x[None, :].copy()
        self._P = self._directions()
        return np.vstack([self.x + self.mu * self._P, self.x - self.mu * self._P])

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        if self.phase == "base":
            self._bases, self._svals = [], []
            for spec, A in zip(self.layers, self._activations(feedback), strict=True):
                V, sv = spectral_basis(A, spec.bias, self.kappa)
                self._bases.append(V)
                self._svals.append(sv)
            if self.whiten:
                # directions scaled by (s_j / s_1)^-whiten per layer, then one global factor so
                # that the mean squared scale over the D_eff coordinates stays 1; the ratio is
                # floored (WHITEN_FLOOR) so a near-degenerate direction cannot take the budget
                sc = [
                    np.maximum(sv / sv[0], WHITEN_FLOOR) ** -self.whiten
                    if sv[0] > 0
                    else np.ones_like(sv)
                    for sv in self._svals
                ]
                tot = sum(
                    spec.out_features * float(np.sum(c**2))
                    for spec, c in zip(self.layers, sc, strict=True)
                )
                deff = sum(
                    spec.out_features * c.size for spec, c in zip(self.layers, sc, strict=True)
                )
                norm = np.sqrt(deff / tot)
                self._bases = [B * (c * norm) for B, c in zip(self._bases, sc, strict=True)]
            self.last_loss = float(y[0])
            self.phase = "probe"
            return
        m = self._P.shape[0]
        a = (y[:m] - y[m:]) / (2 * self.mu)
        g_hat = (a @ self._P) / m
        self.last_grad = g_hat
        self.x = self.x - self.lr * (m / self.d_eff) * g_hat
        if self.lower is not None and self.upper is not None:
            self.x = np.clip(self.x, self.lower, self.upper)
        self.steps += 1
        if self.directions == "spectral":
            self.phase = "base"

    # -- directions ----------------------------------------------------------------------
    def _directions(self) -> Array:
        """The ``m`` probe directions ``(m, dim)``, each of norm ``sqrt(D_eff)`` (or ~)."""
        spectral = self.directions == "spectral"
        if spectral:
            D = sum(
                s.out_features * B.shape[1] for s, B in zip(self.layers, self._bases, strict=True)
            )
        else:
            D = self.dim
        self.d_eff = D
        m = min(self.n_probes, D)
        if self.rademacher:
            Z = self.rng.choice([-1.0, 1.0], size=(m, D))
        else:
            Z = self.rng.standard_normal((m, D))
            if self.orthogonalize:
                # QR of the (D x m) block: orthonormal columns; fix signs for determinism
                Q, R = np.linalg.qr(Z.T)
                Z = (Q * np.sign(np.diag(R))).T * np.sqrt(D)
        if not spectral:
            return Z
        P = np.zeros((m, self.dim))
        j = 0
        for spec, B in zip(self.layers, self._bases, strict=True):
            k, out, fan_in = B.shape[1], spec.out_features, spec.in_features
            Zl = Z[:, j : j + out * k].reshape(m, out, k)
            j += out * k
            full = Zl @ B.T  # (m, out, in + bias)
            o = spec.offset
            P[:, o : o + out * fan_in] = full[:, :, :fan_in].reshape(m, -1)
            if spec.bias:
                P[:, o + out * fan_in : o + spec.size] = full[:, :, fan_in]
        return P

    def recommend(self) -> Array:
        """The current parameters ``(dim,)``."""
        return self.x.copy()


__all__ = ["SZO", "LayerSpec", "TorchObjective", "layer_specs", "spectral_basis"]
