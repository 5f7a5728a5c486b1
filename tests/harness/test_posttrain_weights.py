"""The shipped GGUF through torch and back: GGUF(Q4_1) -> torch -> GGUF(q8_0) -> torch keeps
every tensor within q8_0's rounding, and llama.cpp serving the exported file agrees with the
torch model on greedy continuations (within its own activation quantization: torch's greedy
token is in llama.cpp's top 3 at every position, and the first token is the same)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from optiforge.errors import ConfigError

_EXTRA = ("torch", "transformers", "gguf", "sentencepiece", "llama_cpp")
_MISSING = [m for m in _EXTRA if importlib.util.find_spec(m) is None]
needs_extra = pytest.mark.skipif(
    bool(_MISSING),
    reason=f"needs the posttrain and local extras (missing: {', '.join(_MISSING)})",
)
PROMPTS = ("The capital of France is", "def fibonacci(n):")
NEW_TOKENS = 12
Q8_BLOCK = 32


def q8_error_ratio(a: Any, b: Any) -> float:
    """The largest |a - b| per q8_0 block of 32, in units of the block's step ``max|a|/127``
    (q8_0's rounding keeps it at 0.5, plus a little for the fp16 block scale)."""
    x = a.detach().reshape(-1, Q8_BLOCK).double()
    y = b.detach().reshape(-1, Q8_BLOCK).double()
    step = (x.abs().amax(1, keepdim=True) / 127).clamp_min(1e-30)
    return float(((x - y).abs() / step).max().item())


def test_bad_outtype_and_missing_dir_are_one_line_errors(tmp_path: Path) -> None:
    from optiforge.harness.posttrain.weights import export_gguf

    with pytest.raises(ConfigError, match="outtype must be one of"):
        export_gguf(tmp_path, tmp_path / "x.gguf", outtype="q4_k")
    with pytest.raises(ConfigError, match="not a Hugging Face model directory"):
        export_gguf(tmp_path, tmp_path / "x.gguf")


@needs_extra
@pytest.mark.parametrize("perturb", [0.0, 1.0])
def test_q8_error_ratio_flags_a_changed_tensor(perturb: float) -> None:
    """The tolerance used below discriminates: q8_0-rounded weights pass, the same weights
    with one entry moved by a full block step fail."""
    import torch

    g = torch.Generator().manual_seed(0)
    a = torch.randn(64, 64, generator=g)
    blocks = a.reshape(-1, Q8_BLOCK)
    step = blocks.abs().amax(1, keepdim=True) / 127
    b = ((blocks / step).round() * step).reshape(64, 64)
    b[3, 5] += perturb * float(step[3 * 64 // Q8_BLOCK].item())  # a[3, 5]'s block
    ratio = q8_error_ratio(a, b)
    assert (ratio <= 0.5 + 1e-6) if perturb == 0 else (ratio > 0.6)


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from optiforge.harness.posttrain.weights import export_gguf, load_gguf, save_hf

    base, tok = load_gguf()
    where = tmp_path_factory.mktemp("roundtrip")
    save_hf(base, tok, where / "hf")
    gguf = export_gguf(where / "hf", where / "rt.q8_0.gguf", outtype="q8_0")
    back, tok2 = load_gguf(gguf)
    return {"base": base, "back": back, "tok": tok, "tok2": tok2, "gguf": gguf}


@needs_extra
@pytest.mark.slow
@pytest.mark.local_llm
def test_round_trip_tensors_within_q8_rounding(round_trip: dict[str, Any]) -> None:
    base, back = round_trip["base"].state_dict(), round_trip["back"].state_dict()
    assert set(base) == set(back)
    worst = {k: q8_error_ratio(v, back[k]) for k, v in base.items() if v.ndim >= 2}
    # 1-d tensors (norms) are kept in f32 by the converter: exact
    exact = {k: float((v - back[k]).abs().max()) for k, v in base.items() if v.ndim < 2}
    assert max(exact.values()) == 0.0
    # half a step, plus the fp16 scale's relative rounding (2^-11) times up to 127 steps
    assert max(worst.values()) <= 0.5 + 127 * 2**-11, max(worst.items(), key=lambda kv: kv[1])
    assert round_trip["gguf"].stat().st_size < 160e6  # q8_0 of 135M params: ~145 MB


@needs_extra
@pytest.mark.slow
@pytest.mark.local_llm
def test_llama_cpp_serves_the_export_like_torch(round_trip: dict[str, Any]) -> None:
    """Greedy continuations: llama.cpp (1 thread) on the exported file vs the torch model
    loaded from it. llama.cpp quantizes activations to 8 bits in q8_0 dot products, so near
    ties may flip; what must hold is that torch's greedy token is llama.cpp's first choice at
    the first position and in its top 3 at every position of torch's continuation."""
    import numpy as np
    import torch
    from llama_cpp import Llama

    model, tok = round_trip["back"], round_trip["tok2"]
    llm = Llama(str(round_trip["gguf"]), n_threads=1, n_ctx=256, logits_all=True, verbose=False)
    try:
        for prompt in PROMPTS:
            ids = tok(prompt, return_tensors="pt").input_ids
            assert llm.tokenize(prompt.encode(), add_bos=False) == ids[0].tolist()
            with torch.no_grad():
                cont = model.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False)
            new = cont[0, ids.shape[1] :].tolist()
            llm.reset()
            llm.eval(ids[0].tolist() + new)
            scores = np.asarray(llm.scores[: ids.shape[1] + len(new)])
            ranks = []
            for i, token in enumerate(new):
                row = scores[ids.shape[1] - 1 + i]
                ranks.append(int((row > row[token]).sum()))
            assert ranks[0] == 0, (prompt, ranks)
            assert max(ranks) <= 2, (prompt, ranks)
    finally:
        llm.close()
