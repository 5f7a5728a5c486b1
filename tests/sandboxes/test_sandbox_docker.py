"""DockerSandbox: a clear SandboxUnavailable without an engine; the battery where one exists."""

from __future__ import annotations

import io
import tarfile

import pytest

from optiforge.errors import SandboxError, SandboxUnavailable
from optiforge.sandboxes import get_sandbox
from optiforge.sandboxes.conformance import self_check
from optiforge.sandboxes.docker import DockerSandbox, _tar, docker_client


def _engine_reason() -> str | None:
    try:
        docker_client(timeout_s=2.0).close()
    except SandboxUnavailable as e:
        return str(e)
    return None


REASON = _engine_reason()


def test_unreachable_engine_raises_clear_error() -> None:
    with pytest.raises(
        SandboxUnavailable, match=r"no Docker engine reachable at tcp://127\.0\.0\.1:9"
    ):
        DockerSandbox(base_url="tcp://127.0.0.1:9")


def test_factory_reports_missing_engine() -> None:
    if REASON is None:
        pytest.skip("an engine is reachable here")
    with pytest.raises(SandboxUnavailable, match="no Docker engine reachable at"):
        get_sandbox("docker")


def test_tar_payload_roundtrip_and_path_checks() -> None:
    data = _tar({"a.txt": "hi", "sub/b.bin": b"\x00\x01"})
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        got = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert got == {"a.txt": b"hi", "sub/b.bin": b"\x00\x01"}
    with pytest.raises(SandboxError, match="relative"):
        _tar({"../x": "no"})


@pytest.fixture(scope="module")
def docker_sb() -> DockerSandbox:
    if REASON is not None:
        pytest.skip(REASON)
    return DockerSandbox()


@pytest.mark.docker
def test_docker_self_check(docker_sb: DockerSandbox) -> None:
    results = self_check(docker_sb)
    assert all(r.acceptable for r in results), [(r.name, r.detail) for r in results]


@pytest.mark.docker
def test_docker_files_and_timeout(docker_sb: DockerSandbox) -> None:
    r = docker_sb.run("cat in.txt > out.txt", files={"in.txt": "x"}, collect=["out.txt"])
    assert r.ok and r.files == {"out.txt": "x"}
    t = docker_sb.run("sleep 30", timeout_s=1)
    assert t.timed_out and t.killed_by == "timeout"
    assert t.protections.network_how == "docker-none"


@pytest.mark.docker
def test_docker_red_team(docker_sb: DockerSandbox) -> None:
    """The same attacks as the local modes; docker reports dies_with_timeout_and_parent unmet."""
    from optiforge.sandboxes.redteam import red_team

    results = red_team(docker_sb)
    assert all(r.acceptable for r in results), [(r.name, r.detail) for r in results]
    unmet = docker_sb.protections().unmet()
    assert set(unmet) <= {"dies_with_timeout_and_parent"}, unmet
    assert all(r.passed for r in results if r.name != "parent_killed")
