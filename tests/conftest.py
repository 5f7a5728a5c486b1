"""Shared test setup: no internet, offline model hub, quiet litellm."""

import os
from collections.abc import Iterator

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def _no_cuda() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return True
    return not torch.cuda.is_available()


# Triton must see this before anything imports it (transformers does, via the memory store).
if _no_cuda():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

pytest_plugins = ["optiforge.testing.pytest_plugin"]


@pytest.fixture(autouse=True)
def _private_memory(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test writes to the user's ~/.optiforge/memory.db (tests may override this)."""
    db = tmp_path_factory.getbasetemp() / "default-memory.db"
    monkeypatch.setenv("OPTIFORGE_MEMORY", f"sqlite:///{db}")


def pytest_sessionstart(session: pytest.Session) -> None:
    """One intra-op thread: on 2 shared cores, torch/BLAS threading makes small fits ~50x slower."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(1)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say which sandbox modes this machine has; without an isolating one, say what that means."""
    from optiforge.sandboxes import UNSAFE_ENV
    from optiforge.sandboxes.local import available_isolations

    modes = available_isolations()
    lines = [f"sandbox modes: {', '.join(modes)}"]
    if modes == ["none"]:
        # Agent and suite tests feed scripted (not LLM-written) candidates: they may run
        # unisolated here; the red-team tests still check that mode none reports honestly.
        os.environ[UNSAFE_ENV] = "1"
        lines.append(
            "WARNING: no isolating sandbox mode (no bubblewrap, not root): agent tests run "
            f"with {UNSAFE_ENV}=1; the containment tests cover mode none only"
        )
    return lines


@pytest.fixture(autouse=True)
def _close_evaluation_sandboxes() -> Iterator[None]:
    """A test that runs an agent without the harness leaves no warm zygote behind."""
    yield
    from optiforge.agents.kit.evaluator import close_sandboxes

    close_sandboxes()


def _local_model_missing() -> str | None:
    """Why ``--model local`` cannot run here (None: it can)."""
    from optiforge.llm.local import INSTALL_HINT, bundled_model, llama_cpp_installed

    if not llama_cpp_installed() or bundled_model() is None:
        return f"the embedded model is not installed ({INSTALL_HINT})"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``local_llm`` tests skip where the embedded model is not installed, and fail there
    instead under ``OPTIFORGE_REQUIRE_LOCAL_LLM=1`` (CI installs it: a skip would hide a
    broken install)."""
    if item.get_closest_marker("local_llm") is None:
        return
    why = _local_model_missing()
    if why is None:
        return
    if os.environ.get("OPTIFORGE_REQUIRE_LOCAL_LLM") == "1":
        pytest.fail(f"OPTIFORGE_REQUIRE_LOCAL_LLM=1 but {why}")
    pytest.skip(why)
