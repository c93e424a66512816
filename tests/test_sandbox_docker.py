"""Docker-only behaviour: the container's lockdown as the engine reports it, cleanup, reaping leftovers."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandboxes.base import Limits, SandboxSpec
from sandboxes.baseimage import LABEL, PACKAGES, build_base, image_tag, package_key
from sandboxes.docker import DockerSandbox, docker_problem, reap_leftovers
from sandboxes.factory import available_backends

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def engine() -> Iterator[Any]:
    """A docker client, or a skip that says why the docker backend cannot run here."""
    problem = available_backends()["docker"]
    if problem is not None:
        pytest.skip(f"docker backend unavailable: {problem}")
    import docker

    client = docker.from_env(timeout=60)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("x\n")
    return ws


def test_missing_image_is_reported_with_the_fix() -> None:
    problem = docker_problem("reprobot/base:does-not-exist")
    assert problem is not None
    assert "not built" in problem or "no Docker engine" in problem


async def test_container_is_locked_down(engine: Any, workspace: Path) -> None:
    limits = Limits(memory_bytes=512 * 1024**2, max_processes=100, cpus=1.0)
    async with DockerSandbox(SandboxSpec(workspace=workspace, limits=limits)) as sb:
        assert sb._container is not None
        attrs = engine.api.inspect_container(sb._container.id)
        res = await sb.run(["sh", "-c", "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; ls /sys/class/net"])
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["Memory"] == 512 * 1024**2 and host["MemorySwap"] == 512 * 1024**2
    assert host["PidsLimit"] >= 100 and host["NanoCpus"] == 10**9
    assert "/tmp" in host["Tmpfs"]
    assert not attrs["Config"]["User"].startswith("0")
    assert attrs["Config"]["Labels"][LABEL] == "sandbox"
    assert attrs["Config"]["Image"] == image_tag()
    lines = res.stdout.split()
    assert lines[0] != "0"
    assert lines[1:5] == ["CapEff:", "0000000000000000", "NoNewPrivs:", "1"]
    assert lines[5:] == ["lo"]  # no interface but loopback


async def test_close_removes_the_container(engine: Any, workspace: Path) -> None:
    import docker.errors

    sb = DockerSandbox(SandboxSpec(workspace=workspace))
    async with sb:
        assert (await sb.run(["true"])).ok
        cid = sb._container.id
    await sb.close()
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(cid)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


async def test_leftovers_of_dead_workers_are_reaped(engine: Any, workspace: Path) -> None:
    import docker.errors

    labels = {LABEL: "sandbox", f"{LABEL}.pid": str(_dead_pid()), f"{LABEL}.host": socket.gethostname()}
    orphan = engine.containers.run(
        image_tag(), ["sleep", "infinity"], detach=True, labels=labels, network_mode="none", user="61001"
    )
    foreign = engine.containers.run(
        image_tag(),
        ["sleep", "infinity"],
        detach=True,
        labels={**labels, f"{LABEL}.host": "some-other-machine"},
        network_mode="none",
        user="61001",
    )
    try:
        async with DockerSandbox(SandboxSpec(workspace=workspace)) as live:
            removed = reap_leftovers()
            assert removed >= 1
            with pytest.raises(docker.errors.NotFound):
                engine.containers.get(orphan.id)
            # A live worker's sandbox (this process) and another machine's are left alone.
            assert engine.containers.get(live._container.id).status == "running"
            assert engine.containers.get(foreign.id)
    finally:
        for container in (orphan, foreign):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)


async def test_strays_do_not_count_against_the_next_command(engine: Any, workspace: Path) -> None:
    async with DockerSandbox(SandboxSpec(workspace=workspace, limits=Limits(max_processes=8))) as sb:
        for _ in range(3):
            res = await sb.run(["sh", "-c", "for i in 1 2 3 4; do sleep 100 & done; echo ok"])
            assert res.stdout.strip() == "ok", res.output
        assert os.path.exists(workspace / "f.txt")


def test_package_key_tracks_the_package_list() -> None:
    assert package_key() == package_key(("git", "python3-venv", "python3"))  # order does not matter
    assert package_key() != package_key((*PACKAGES, "curl"))
    assert package_key() != package_key(suite="trixie")
    assert image_tag().endswith(":" + package_key())


def test_build_base_reuses_the_image_by_package_list(engine: Any, tmp_path: Path) -> None:
    built = build_base(tmp_path / "cache")
    assert built.image == image_tag() and built.image_cached
    assert not (tmp_path / "cache" / "rootfs").exists()  # nothing rebuilt when the image exists
