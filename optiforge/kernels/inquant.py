"""InQuant: a 4-bit packed KV cache that keeps salient channels at 8 bits *in place*.

Layout (per head ``h``; a cache tensor is `H x T x D`: heads (batch folded in) x tokens
x head dim; ``D`` even, ``D % G == 0``, ``G`` even)

* **Payload** ``packed``: `H x T x D/2` uint8. Byte ``b`` of a row holds channel
  ``2b`` in its low nibble and channel ``2b+1`` in its high nibble. The payload is
  exactly ``numel / 2`` bytes whatever the outliers are: **4.0x vs fp16 for the payload,
  fixed**. Outliers do not add bytes to it; they borrow slots.
* **Roles** (per head, shared by all tokens). ``k`` *outlier* channels (the most
  salient) are stored as signed 8-bit codes. Outlier ``c`` keeps the low nibble of its
  code in its own slot and puts the high nibble in the slot of a *donor* channel; the
  donor's own value is dropped and reconstructed at dequantisation as a per-head
  constant (its mean over the saliency sample). All other channels are *normal*
  (4-bit asymmetric).
* **Donor rule** (stride handling for adjacent outliers). Outliers are visited in
  ascending channel order; outlier ``c`` looks at the first ``W`` channels in
  ``c+1, c+2, ..., D-1, 0, 1, ...`` (cyclic) that are neither outliers nor already
  donors and takes the one with the smallest spread (std over the saliency sample;
  nearest on ties). With ``W = 1`` an isolated outlier ``j`` borrows ``j+1``, adjacent
  outliers ``j, j+1`` borrow ``j+2`` and ``j+3``, and a run at the end of the row wraps
  to the first free channels. Requires ``k <= D/2``. The donor is recorded as a
  one-byte cyclic offset, so recovery never has to re-derive the choice.
* **Normal channels**: per (token, group of ``G`` consecutive channels) asymmetric
  4-bit: ``zero = min``, ``scale = (max - min)/15`` over the group's *normal* channels
  only (outliers and donors excluded, which is where the accuracy gain comes from),
  both stored as fp16; ``q = clamp(floor((x - zero)/scale + 1/2), 0, 15)``,
  ``x^ = zero + q * scale``.
* **Outlier channels**: per token symmetric 8-bit: ``oscale = max|x_outliers| / 127``
  (fp16, one per token), ``q8 = clamp(floor(x/oscale + 1/2), -127, 127)`` stored as its
  two's-complement byte (low nibble in own slot, high nibble in the donor slot).
* **Descriptor** (per head, guides recovery): ``outlier_mask`` `H x D/8` uint8
  bitmask (bit ``c % 8`` of byte ``c // 8``), ``donor_offset`` `H x k` uint8 (cyclic
  distance from each outlier, ascending, to its donor; 0 marks an unused entry) and
  ``donor_fill`` `H x k` fp16 (the value each dropped donor is reconstructed as: its
  mean over the saliency sample).
* **Saliency**: sample ``n_sample`` tokens uniformly without replacement (seeded),
  score channel ``c`` of head ``h`` by ``max |x[h, sample, c]|``; the top ``k`` per head
  are the outliers, optionally only those above ``min_ratio`` x the head's median
  score (a head without outlier channels then keeps all its donors; entries stay
  allocated, so the byte count does not shrink).

Byte accounting (honest): per token ``D/2`` payload + ``4 D/G`` (scale, zero) + 2
(oscale) bytes; per head ``D/8 + 3k`` descriptor bytes (amortised over T tokens).
E.g. ``D=128, G=32, k=4``: payload 64 B/token (4.00x vs fp16's 256 B), with
metadata 82 B/token + 28 B/head (3.12x); plain 4-bit at the same ``G`` carries
80 B/token (3.20x). See :meth:`InQuantCache.nbytes`.

Kernels: ``_inquant_quantize_kernel`` and ``_inquant_dequantize_kernel``, one program
per (head, token) row, tile `D/G x G/2` bytes. ``reference_quantize`` /
``reference_dequantize`` are plain-torch versions of the same arithmetic; on CPU (the
interpreter) the packed payload and metadata match them bit for bit. On GPU the
division uses ``div_rn``, so codes should match as well and dequantised values may
differ by an ulp (FMA contraction); that has not been run on a GPU yet.

Notes. Scales are per token, so tokens appended during decoding are quantised with the
prefill descriptor without clamping problems; only the *choice* of outlier channels
is fixed at descriptor time. Values must fit fp16 (scales are stored as fp16). Under
plain 4-bit an outlier is usually the extreme of its group and so is kept almost
exactly; the damage is to the other channels of that group, whose step size the
outlier inflates. InQuant's gain is on those channels; its cost is the donors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from pydantic import BaseModel, ConfigDict, Field

from optiforge.kernels._backend import check_device, check_float, configure_triton_backend

configure_triton_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

ROLE_NORMAL, ROLE_OUTLIER, ROLE_DONOR = 0, 1, 2


class InQuantConfig(BaseModel):
    """Settings of an InQuant cache."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group_size: int = Field(default=32, ge=2)
    """Channels per (scale, zero) group along the head dim; even, divides D."""
    n_outliers: int = Field(default=4, ge=0)
    """Outlier slots per head kept at 8 bits (each borrows one donor slot)."""
    n_sample: int = Field(default=64, ge=1)
    """Tokens sampled per head to estimate channel saliency (capped at T)."""
    donor_window: int = Field(default=4, ge=1)
    """Free channels after an outlier among which the lowest-spread one becomes its donor."""
    min_ratio: float = Field(default=4.0, ge=0.0)
    """An outlier's saliency must exceed this multiple of the head's median (0: always k)."""
    seed: int = 0
    """Seed of the token sample."""


@dataclass(frozen=True)
class InQuantDescriptor:
    """Per-head recovery descriptor: which channels are outliers, what donors become.

    outlier_mask: `H x D/8` uint8 bitmask. donor_offset: `H x k` uint8, cyclic distance
    from each outlier (ascending) to its donor, 0 = unused entry. donor_fill: `H x k`
    fp16, the value a dropped donor is reconstructed as.
    """

    outlier_mask: torch.Tensor
    donor_offset: torch.Tensor
    donor_fill: torch.Tensor
    head_dim: int

    @property
    def n_outliers(self) -> int:
        """Outlier channels per head (``k``)."""
        return int(self.donor_fill.shape[1])

    def tables(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(role, partner, fill) scratch tables, derived once and cached (see :func:`slot_tables`)."""
        cached = self.__dict__.get("_tables")
        if cached is None:
            cached = slot_tables(self)
            object.__setattr__(self, "_tables", cached)  # frozen: cache outside the fields
        return cached

    def nbytes(self) -> int:
        """Stored bytes of the descriptor (bitmask + donor offsets + donor fills)."""
        return self.outlier_mask.numel() + self.donor_offset.numel() + 2 * self.donor_fill.numel()


@dataclass(frozen=True)
class InQuantCache:
    """A quantised `H x T x D` cache: payload, per-token metadata and the descriptor.

    packed `H x T x D/2` uint8; scale, zero `H x T x D/G` fp16; oscale `H x T` fp16.
    """

    packed: torch.Tensor
    scale: torch.Tensor
    zero: torch.Tensor
    oscale: torch.Tensor
    descriptor: InQuantDescriptor
    group_size: int

    @property
    def shape(self) -> tuple[int, int, int]:
        """Logical shape `H x T x D`."""
        h, t, half = self.packed.shape
        return (h, t, 2 * half)

    def nbytes(self) -> dict[str, int]:
        """Byte counts: payload, per-token metadata, descriptor, total."""
        payload = self.packed.numel()
        meta = 2 * (self.scale.numel() + self.zero.numel() + self.oscale.numel())
        desc = self.descriptor.nbytes()
        return {"payload": payload, "metadata": meta, "descriptor": desc,
                "total": payload + meta + desc}  # fmt: skip


def _check_cache_input(x: torch.Tensor, group_size: int) -> tuple[int, int, int]:
    check_float("x", x)
    if x.dim() != 3:
        raise ValueError(f"KV cache must be 3-D `H x T x D`, got shape {tuple(x.shape)}")
    h, t, d = x.shape
    if d % 2 or group_size % 2 or d % group_size:
        raise ValueError(f"need even D and G with D % G == 0, got D={d}, G={group_size}")
    return h, t, d


# --------------------------------------------------------------------- descriptor


def choose_donors(outlier: torch.Tensor, spread: torch.Tensor, window: int = 4) -> torch.Tensor:
    """Donor of every outlier by the cyclic-window rule; `H x D` int64 (-1 where not an outlier).

    outlier: `H x D` bool. spread: `H x D` per-channel std over the saliency sample.
    Outliers are visited in ascending order; outlier ``c`` considers the first
    ``window`` channels after it (cyclic) that are neither outliers nor donors and
    takes the one with the smallest spread (nearest on ties).
    """
    h, d = outlier.shape
    if window < 1:
        raise ValueError(f"donor window must be >= 1, got {window}")
    out = outlier.cpu()
    sp = spread.cpu().float()
    donors = torch.full((h, d), -1, dtype=torch.int64)
    for hi in range(h):
        taken = out[hi].clone()  # outliers are never donors
        for c in torch.nonzero(out[hi]).flatten().tolist():
            cands: list[int] = []
            for step in range(1, d):
                cand = (c + step) % d
                if not taken[cand]:
                    cands.append(cand)
                    if len(cands) == window:
                        break
            if not cands:  # unreachable when k <= D/2; kept as a loud contract check
                raise ValueError(f"head {hi}: no free donor for outlier channel {c}")
            best = min(cands, key=lambda j: float(sp[hi, j]))  # min() keeps the first (nearest) tie
            donors[hi, c] = best
            taken[best] = True
    return donors.to(outlier.device)


def unpack_mask(outlier_mask: torch.Tensor, head_dim: int) -> torch.Tensor:
    """`H x D/8` uint8 bitmask -> `H x D` bool."""
    bits = torch.arange(8, device=outlier_mask.device, dtype=torch.uint8)
    m = (outlier_mask.unsqueeze(-1) >> bits) & 1
    return m.reshape(outlier_mask.shape[0], -1)[:, :head_dim].bool()


def pack_mask(outlier: torch.Tensor) -> torch.Tensor:
    """`H x D` bool -> `H x ceil(D/8)` uint8 bitmask."""
    h, d = outlier.shape
    pad = (-d) % 8
    o = torch.nn.functional.pad(outlier.to(torch.uint8), (0, pad)).reshape(h, -1, 8)
    weights = (1 << torch.arange(8, device=outlier.device)).to(torch.uint8)
    return (o * weights).sum(-1, dtype=torch.int64).to(torch.uint8)


def slot_tables(
    desc: InQuantDescriptor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Derive (role, partner, fill) `H x D` tables from the descriptor (scratch, not stored).

    role: 0 normal / 1 outlier / 2 donor (int32); partner: the donor of an outlier,
    the outlier of a donor, the channel itself otherwise (int32); fill: fp32 value of
    each donor channel (0 elsewhere). Raises ValueError on a corrupt descriptor.
    """
    outlier = unpack_mask(desc.outlier_mask, desc.head_dim).cpu()
    h, d = outlier.shape
    offsets = desc.donor_offset.cpu().long()
    fills = desc.donor_fill.cpu().float()
    role = torch.zeros(h, d, dtype=torch.int32)
    partner = torch.arange(d, dtype=torch.int32).repeat(h, 1)
    fill = torch.zeros(h, d, dtype=torch.float32)
    for hi in range(h):
        cs = torch.nonzero(outlier[hi]).flatten()
        n = cs.numel()
        if n > offsets.shape[1] or (offsets[hi, :n] == 0).any() or (offsets[hi, n:] != 0).any():
            raise ValueError(
                f"corrupt descriptor: head {hi} has {n} outliers but offsets {offsets[hi].tolist()}"
            )
        ds = (cs + offsets[hi, :n]) % d
        if outlier[hi, ds].any() or ds.unique().numel() != n:
            raise ValueError(f"corrupt descriptor: head {hi} donors {ds.tolist()} clash")
        role[hi, cs] = ROLE_OUTLIER
        role[hi, ds] = ROLE_DONOR
        partner[hi, cs] = ds.to(torch.int32)
        partner[hi, ds] = cs.to(torch.int32)
        fill[hi, ds] = fills[hi, :n]
    dev = desc.outlier_mask.device
    return role.to(dev), partner.to(dev), fill.to(dev)


def build_descriptor(
    x: torch.Tensor,
    n_outliers: int,
    n_sample: int = 64,
    seed: int = 0,
    *,
    donor_window: int = 4,
    min_ratio: float = 0.0,
) -> InQuantDescriptor:
    """Pick up to ``n_outliers`` salient channels per head of `H x T x D` ``x`` by sampling.

    min_ratio: a top-k channel only becomes an outlier if its saliency exceeds
    ``min_ratio`` x the head's median saliency (0 keeps exactly ``n_outliers``), so a
    cache without outlier channels (typically V) does not give up donor channels.
    donor_window: free channels after an outlier among which the lowest-spread one is
    its donor (1 = strictly the next free channel).
    """
    h, t, d = x.shape
    if not 0 <= n_outliers <= d // 2:
        raise ValueError(f"n_outliers must be in [0, D/2] = [0, {d // 2}], got {n_outliers}")
    if n_outliers > 0 and d > 256:
        raise ValueError(f"donor offsets are stored as uint8, so D must be <= 256, got {d}")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    idx = torch.randperm(t, generator=gen)[: min(n_sample, t)].to(x.device)
    sample = x[:, idx, :].float()  # `H x S x D`
    sal = sample.abs().amax(dim=1)
    outlier = torch.zeros(h, d, dtype=torch.bool, device=x.device)
    if n_outliers:
        top = torch.topk(sal, n_outliers, dim=1)
        keep = top.values > min_ratio * sal.median(dim=1, keepdim=True).values
        outlier.scatter_(1, top.indices, keep)
    spread = sample.std(dim=1, correction=0) if sample.shape[1] > 1 else sample.abs().mean(1)
    donors = choose_donors(outlier, spread, donor_window)
    mean = sample.mean(dim=1)  # `H x D`: reconstruction value of a dropped donor
    offsets = torch.zeros(h, n_outliers, dtype=torch.uint8)
    fills = torch.zeros(h, n_outliers, dtype=torch.float16)
    for hi in range(h):
        cs = torch.nonzero(outlier[hi]).flatten()
        ds = donors[hi, cs]
        offsets[hi, : cs.numel()] = ((ds - cs) % d).cpu().to(torch.uint8)
        fills[hi, : cs.numel()] = mean[hi, ds].cpu().half()
    dev = x.device
    return InQuantDescriptor(pack_mask(outlier), offsets.to(dev), fills.to(dev), d)


# ------------------------------------------------------------------------ kernels


@triton.jit
def _inquant_quantize_kernel(
    x_ptr, role_ptr, partner_ptr, packed_ptr, scale_ptr, zero_ptr, oscale_ptr,
    T, sxh, sxt, sxd,
    D: tl.constexpr, G: tl.constexpr, NG_B: tl.constexpr, HG_B: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)  # row = h * T + t
    h = row // T
    t = row % T
    NG: tl.constexpr = D // G
    HG: tl.constexpr = G // 2
    g = tl.arange(0, NG_B)[:, None]
    i = tl.arange(0, HG_B)[None, :]
    valid = (g < NG) & (i < HG)
    byte = g * HG + i  # NG_B x HG_B byte index in the row
    c_lo = 2 * byte
    c_hi = c_lo + 1
    xrow = x_ptr + h * sxh + t * sxt
    x_lo = tl.load(xrow + c_lo * sxd, mask=valid, other=0.0).to(tl.float32)
    x_hi = tl.load(xrow + c_hi * sxd, mask=valid, other=0.0).to(tl.float32)
    r_lo = tl.load(role_ptr + h * D + c_lo, mask=valid, other=-1)
    r_hi = tl.load(role_ptr + h * D + c_hi, mask=valid, other=-1)
    p_lo = tl.load(partner_ptr + h * D + c_lo, mask=valid, other=0)
    p_hi = tl.load(partner_ptr + h * D + c_hi, mask=valid, other=0)

    # 4-bit group statistics over normal channels only.
    n_lo = r_lo == 0
    n_hi = r_hi == 0
    inf = float("inf")
    mn = tl.minimum(
        tl.min(tl.where(n_lo, x_lo, inf), axis=1), tl.min(tl.where(n_hi, x_hi, inf), axis=1)
    )
    mx = tl.maximum(
        tl.max(tl.where(n_lo, x_lo, -inf), axis=1), tl.max(tl.where(n_hi, x_hi, -inf), axis=1)
    )
    empty = mn == inf  # a group with no normal channel: store zeros
    mn = tl.where(empty, 0.0, mn)
    mx = tl.where(empty, 0.0, mx)
    zero16 = mn.to(tl.float16)
    scale16 = ((mx - mn) / 15.0).to(tl.float16)
    zero = zero16.to(tl.float32)[:, None]
    scale = scale16.to(tl.float32)
    safe = tl.where(scale > 0.0, scale, 1.0)[:, None]
    q_lo = tl.floor(tl.math.div_rn(x_lo - zero, safe) + 0.5)
    q_hi = tl.floor(tl.math.div_rn(x_hi - zero, safe) + 0.5)
    q_lo = tl.minimum(tl.maximum(q_lo, 0.0), 15.0).to(tl.int32)
    q_hi = tl.minimum(tl.maximum(q_hi, 0.0), 15.0).to(tl.int32)

    # 8-bit symmetric codes for outliers, one scale per token.
    omax = tl.maximum(
        tl.max(tl.max(tl.where(r_lo == 1, tl.abs(x_lo), 0.0), axis=1), axis=0),
        tl.max(tl.max(tl.where(r_hi == 1, tl.abs(x_hi), 0.0), axis=1), axis=0),
    )
    oscale16 = (omax / 127.0).to(tl.float16)
    oscale = oscale16.to(tl.float32)
    osafe = tl.where(oscale > 0.0, oscale, 1.0)
    o_lo = tl.minimum(tl.maximum(tl.floor(tl.math.div_rn(x_lo, osafe) + 0.5), -127.0), 127.0)
    o_hi = tl.minimum(tl.maximum(tl.floor(tl.math.div_rn(x_hi, osafe) + 0.5), -127.0), 127.0)
    o_lo = o_lo.to(tl.int32) & 255
    o_hi = o_hi.to(tl.int32) & 255
    # A donor slot holds the high nibble of its outlier's code: re-read that channel.
    d_lo = r_lo == 2
    d_hi = r_hi == 2
    xp_lo = tl.load(xrow + p_lo * sxd, mask=valid & d_lo, other=0.0).to(tl.float32)
    xp_hi = tl.load(xrow + p_hi * sxd, mask=valid & d_hi, other=0.0).to(tl.float32)
    op_lo = tl.minimum(tl.maximum(tl.floor(tl.math.div_rn(xp_lo, osafe) + 0.5), -127.0), 127.0)
    op_hi = tl.minimum(tl.maximum(tl.floor(tl.math.div_rn(xp_hi, osafe) + 0.5), -127.0), 127.0)
    op_lo = (op_lo.to(tl.int32) & 255) >> 4
    op_hi = (op_hi.to(tl.int32) & 255) >> 4

    nib_lo = tl.where(n_lo, q_lo, tl.where(r_lo == 1, o_lo & 15, tl.where(d_lo, op_lo, 0)))
    nib_hi = tl.where(n_hi, q_hi, tl.where(r_hi == 1, o_hi & 15, tl.where(d_hi, op_hi, 0)))
    packed = (nib_lo | (nib_hi << 4)).to(tl.uint8)
    tl.store(packed_ptr + row * (D // 2) + byte, packed, mask=valid)
    gm = tl.arange(0, NG_B)
    tl.store(scale_ptr + row * NG + gm, scale16, mask=gm < NG)
    tl.store(zero_ptr + row * NG + gm, zero16, mask=gm < NG)
    tl.store(oscale_ptr + row, oscale16)


@triton.jit
def _inquant_dequantize_kernel(
    packed_ptr, scale_ptr, zero_ptr, oscale_ptr, role_ptr, partner_ptr, fill_ptr, out_ptr,
    T, D: tl.constexpr, G: tl.constexpr, NG_B: tl.constexpr, HG_B: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    h = row // T
    NG: tl.constexpr = D // G
    HG: tl.constexpr = G // 2
    g = tl.arange(0, NG_B)[:, None]
    i = tl.arange(0, HG_B)[None, :]
    valid = (g < NG) & (i < HG)
    byte = g * HG + i
    c_lo = 2 * byte
    c_hi = c_lo + 1
    prow = packed_ptr + row * (D // 2)
    p = tl.load(prow + byte, mask=valid, other=0).to(tl.int32)
    nib_lo = p & 15
    nib_hi = (p >> 4) & 15
    gmask = tl.arange(0, NG_B) < NG
    scale = tl.load(scale_ptr + row * NG + tl.arange(0, NG_B), mask=gmask, other=0.0)
    zero = tl.load(zero_ptr + row * NG + tl.arange(0, NG_B), mask=gmask, other=0.0)
    scale = scale.to(tl.float32)[:, None]
    zero = zero.to(tl.float32)[:, None]
    oscale = tl.load(oscale_ptr + row).to(tl.float32)
    r_lo = tl.load(role_ptr + h * D + c_lo, mask=valid, other=0)
    r_hi = tl.load(role_ptr + h * D + c_hi, mask=valid, other=0)
    p_lo = tl.load(partner_ptr + h * D + c_lo, mask=valid, other=0)
    p_hi = tl.load(partner_ptr + h * D + c_hi, mask=valid, other=0)
    # Descriptor-guided recovery: an outlier's high nibble sits in its donor's slot.
    b_lo = tl.load(prow + p_lo // 2, mask=valid & (r_lo == 1), other=0).to(tl.int32)
    b_hi = tl.load(prow + p_hi // 2, mask=valid & (r_hi == 1), other=0).to(tl.int32)
    hn_lo = (b_lo >> ((p_lo % 2) * 4)) & 15
    hn_hi = (b_hi >> ((p_hi % 2) * 4)) & 15
    code_lo = nib_lo | (hn_lo << 4)
    code_hi = nib_hi | (hn_hi << 4)
    code_lo = tl.where(code_lo >= 128, code_lo - 256, code_lo).to(tl.float32)
    code_hi = tl.where(code_hi >= 128, code_hi - 256, code_hi).to(tl.float32)
    f_lo = tl.load(fill_ptr + h * D + c_lo, mask=valid, other=0.0)
    f_hi = tl.load(fill_ptr + h * D + c_hi, mask=valid, other=0.0)
    v_lo = zero + nib_lo.to(tl.float32) * scale
    v_hi = zero + nib_hi.to(tl.float32) * scale
    v_lo = tl.where(r_lo == 1, code_lo * oscale, tl.where(r_lo == 2, f_lo, v_lo))
    v_hi = tl.where(r_hi == 1, code_hi * oscale, tl.where(r_hi == 2, f_hi, v_hi))
    orow = out_ptr + row * D
    tl.store(orow + c_lo, v_lo.to(out_ptr.dtype.element_ty), mask=valid)
    tl.store(orow + c_hi, v_hi.to(out_ptr.dtype.element_ty), mask=valid)


def _check_descriptor(desc: InQuantDescriptor, h: int, d: int) -> None:
    if desc.head_dim != d or desc.outlier_mask.shape != (h, (d + 7) // 8):
        raise ValueError(
            f"descriptor is for {tuple(desc.outlier_mask.shape)} heads x mask bytes, "
            f"head_dim {desc.head_dim}; cache is H={h}, D={d}"
        )
    if desc.donor_fill.shape[0] != h:
        raise ValueError(f"donor_fill has {desc.donor_fill.shape[0]} heads, cache has {h}")


def quantize(
    x: torch.Tensor,
    descriptor: InQuantDescriptor,
    *,
    group_size: int = 32,
    num_warps: int = 1,
) -> InQuantCache:
    """Quantise `H x T x D` ``x`` (any strides, fp16/fp32) with a Triton kernel."""
    h, t, d = _check_cache_input(x, group_size)
    check_device(("x", x))
    _check_descriptor(descriptor, h, d)
    role, partner, _ = descriptor.tables()
    ng = d // group_size
    dev = x.device
    packed = torch.empty((h, t, d // 2), dtype=torch.uint8, device=dev)
    scale = torch.empty((h, t, ng), dtype=torch.float16, device=dev)
    zero = torch.empty((h, t, ng), dtype=torch.float16, device=dev)
    oscale = torch.empty((h, t), dtype=torch.float16, device=dev)
    _inquant_quantize_kernel[(h * t,)](
        x, role, partner, packed, scale, zero, oscale, t, *x.stride(),
        D=d, G=group_size, NG_B=triton.next_power_of_2(ng),
        HG_B=triton.next_power_of_2(group_size // 2), num_warps=num_warps,
    )  # fmt: skip
    return InQuantCache(packed, scale, zero, oscale, descriptor, group_size)


def _check_cache(cache: InQuantCache) -> tuple[int, int, int]:
    h, t, d = cache.shape
    ng = d // cache.group_size
    if cache.packed.dtype != torch.uint8 or not cache.packed.is_contiguous():
        raise ValueError("cache.packed must be a contiguous uint8 tensor")
    for name, ten, shp in (("scale", cache.scale, (h, t, ng)), ("zero", cache.zero, (h, t, ng)),
                           ("oscale", cache.oscale, (h, t))):  # fmt: skip
        if ten.shape != shp or ten.dtype != torch.float16 or not ten.is_contiguous():
            raise ValueError(f"cache.{name} must be contiguous fp16 of shape {shp}")
    _check_descriptor(cache.descriptor, h, d)
    return h, t, d


def dequantize(
    cache: InQuantCache, *, dtype: torch.dtype = torch.float16, num_warps: int = 1
) -> torch.Tensor:
    """Recover the `H x T x D` cache in ``dtype`` with a Triton kernel."""
    h, t, d = _check_cache(cache)
    check_device(("packed", cache.packed))
    role, partner, fill = cache.descriptor.tables()
    out = torch.empty((h, t, d), dtype=dtype, device=cache.packed.device)
    ng = d // cache.group_size
    _inquant_dequantize_kernel[(h * t,)](
        cache.packed, cache.scale, cache.zero, cache.oscale, role, partner, fill, out, t,
        D=d, G=cache.group_size, NG_B=triton.next_power_of_2(ng),
        HG_B=triton.next_power_of_2(cache.group_size // 2), num_warps=num_warps,
    )  # fmt: skip
    return out


# ---------------------------------------------------------------------- reference


def reference_quantize(
    x: torch.Tensor, descriptor: InQuantDescriptor, *, group_size: int = 32
) -> InQuantCache:
    """Plain-torch InQuant quantisation, same arithmetic as the kernel."""
    h, t, d = _check_cache_input(x, group_size)
    _check_descriptor(descriptor, h, d)
    role, partner, _ = descriptor.tables()
    ng = d // group_size
    xf = x.float()
    role3 = role.long()[:, None, :].expand(h, t, d)
    normal = role3 == ROLE_NORMAL
    xg = xf.reshape(h, t, ng, group_size)
    ng_mask = normal.reshape(h, t, ng, group_size)
    inf = float("inf")
    mn = torch.where(ng_mask, xg, inf).amin(-1)
    mx = torch.where(ng_mask, xg, -inf).amax(-1)
    empty = mn == inf
    mn = torch.where(empty, 0.0, mn)
    mx = torch.where(empty, 0.0, mx)
    zero16 = mn.half()
    scale16 = ((mx - mn) / 15.0).half()
    zero = zero16.float()[..., None]
    scale = scale16.float()
    safe = torch.where(scale > 0, scale, 1.0)[..., None]
    q4 = torch.floor((xg - zero) / safe + 0.5).clamp(0, 15).to(torch.int32).reshape(h, t, d)

    is_out = role3 == ROLE_OUTLIER
    omax = torch.where(is_out, xf.abs(), 0.0).amax(-1)
    oscale16 = (omax / 127.0).half()
    oscale = oscale16.float()
    osafe = torch.where(oscale > 0, oscale, 1.0)[..., None]
    q8 = torch.floor(xf / osafe + 0.5).clamp(-127, 127).to(torch.int32) & 255
    donor_nib = torch.gather(q8, 2, partner.long()[:, None, :].expand(h, t, d)) >> 4
    nib = torch.where(
        normal,
        q4,
        torch.where(is_out, q8 & 15, torch.where(role3 == ROLE_DONOR, donor_nib, 0)),
    )
    packed = (nib[..., 0::2] | (nib[..., 1::2] << 4)).to(torch.uint8)
    return InQuantCache(
        packed.contiguous(), scale16, zero16, oscale16.contiguous(), descriptor, group_size
    )


def reference_dequantize(
    cache: InQuantCache, *, dtype: torch.dtype = torch.float16
) -> torch.Tensor:
    """Plain-torch InQuant dequantisation (descriptor-guided recovery)."""
    h, t, d = _check_cache(cache)
    role, partner, fill = cache.descriptor.tables()
    g = cache.group_size
    p = cache.packed.to(torch.int32)
    nib = torch.stack([p & 15, (p >> 4) & 15], dim=-1).reshape(h, t, d)
    high = torch.gather(nib, 2, partner.long()[:, None, :].expand(h, t, d))
    code = nib | (high << 4)
    code = torch.where(code >= 128, code - 256, code).float()
    normal_val = (
        cache.zero.float()[..., None]
        + nib.reshape(h, t, d // g, g).float() * cache.scale.float()[..., None]
    ).reshape(h, t, d)
    role3 = role.long()[:, None, :].expand(h, t, d)
    out = torch.where(
        role3 == ROLE_OUTLIER,
        code * cache.oscale.float()[..., None],
        torch.where(role3 == ROLE_DONOR, fill[:, None, :].expand(h, t, d), normal_val),
    )
    return out.to(dtype)


def reference_uniform_roundtrip(x: torch.Tensor, *, bits: int, group_size: int) -> torch.Tensor:
    """Plain asymmetric ``bits``-bit quantise->dequantise per (token, group); fp32 out.

    The baseline InQuant is compared with (fp16 scale and zero per group, like InQuant's
    normal channels). With ``bits=4`` it equals InQuant with zero outliers.
    """
    h, t, d = _check_cache_input(x, group_size)
    levels = float(2**bits - 1)
    xg = x.float().reshape(h, t, d // group_size, group_size)
    mn = xg.amin(-1)
    mx = xg.amax(-1)
    zero = mn.half().float()[..., None]
    scale = ((mx - mn) / levels).half().float()[..., None]
    safe = torch.where(scale > 0, scale, 1.0)
    q = torch.floor((xg - zero) / safe + 0.5).clamp(0, levels)
    return (zero + q * scale).reshape(h, t, d)


def compress(x: torch.Tensor, config: InQuantConfig | None = None) -> InQuantCache:
    """Estimate saliency, build the descriptor and quantise `H x T x D` ``x`` (Triton)."""
    cfg = config or InQuantConfig()
    desc = build_descriptor(
        x,
        cfg.n_outliers,
        cfg.n_sample,
        cfg.seed,
        donor_window=cfg.donor_window,
        min_ratio=cfg.min_ratio,
    )
    return quantize(x, desc, group_size=cfg.group_size)
