"""Benchmark, side by side in one run: first vs cached environment build; docker exec vs bare subprocess per call."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandboxes.base import SandboxSpec
from sandboxes.environment import build_environment
from sandboxes.envspec import detect_spec
from sandboxes.factory import available_backends, make_sandbox

PROJECT = "python-dateutil==2.9.0.post0"
PYTHON = Path("/usr/bin/python3")
CALLS = 40


def _fetch(work: Path) -> Path | None:
    """The project's sdist unpacked, or None when PyPI cannot be reached."""
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", PROJECT, "-d", str(work)]
    if subprocess.run(cmd, capture_output=True, timeout=300, check=False).returncode != 0:
        return None
    archive = next(work.glob("*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    return work / archive.name.removesuffix(".tar.gz")


async def build_times(work: Path) -> tuple[float, float, int] | None:
    """(first build seconds, cached build seconds, dependency count) in a fresh cache."""
    repo = _fetch(work)
    if repo is None:
        return None
    spec = detect_spec(repo)
    cache = work / "cache"
    first = await build_environment(spec, cache, python=PYTHON)
    second = await build_environment(spec, cache, python=PYTHON)
    assert not first.cache_hit and second.cache_hit
    return first.seconds, second.seconds, len(spec.deps)


async def _bare_call() -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec("/bin/true")
    await proc.wait()
    return time.perf_counter() - started


async def per_call(kind: str, workspace: Path) -> float | None:
    """Median seconds per `true` in a warm sandbox of `kind` (None when the backend is unavailable)."""
    if kind == "bare":
        await _bare_call()
        return statistics.median([await _bare_call() for _ in range(CALLS)])
    if available_backends().get(kind) is not None:
        return None
    async with make_sandbox(kind, SandboxSpec(workspace=workspace)) as sb:
        await sb.run(["true"])  # warm: the container (or bwrap's /etc) exists from here on
        samples = []
        for _ in range(CALLS):
            started = time.perf_counter()
            res = await sb.run(["true"])
            samples.append(time.perf_counter() - started)
            assert res.ok, res.output
    return statistics.median(samples)


async def _main() -> list[str]:
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="reprobot-envbench-") as tmp:
        work = Path(tmp)
        times = await build_times(work)
        if times is None:
            lines.append(f"env_bench: environment build skipped: cannot download {PROJECT} (offline?)")
        else:
            first, cached, ndeps = times
            lines.append(
                f"env_bench: environment build for {PROJECT} ({ndeps} deps): first {first:.2f}s,"
                f" cached {cached * 1000:.1f}ms, speed-up x{first / max(cached, 1e-6):.0f}"
            )
        workspace = work / "ws"
        workspace.mkdir()
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
        bare = await per_call("bare", workspace)
        assert bare is not None
        for kind in ("docker", "bwrap"):
            warm = await per_call(kind, workspace)
            if warm is None:
                lines.append(f"env_bench: {kind} exec overhead skipped: {available_backends()[kind]}")
                continue
            lines.append(
                f"env_bench: {kind} warm exec per call {warm * 1000:.1f}ms vs bare subprocess {bare * 1000:.2f}ms"
                f" (x{warm / bare:.0f}, overhead {(warm - bare) * 1000:.1f}ms; median of {CALLS})"
            )
    return lines


def main() -> None:
    """Print the benchmark lines."""
    for line in asyncio.run(_main()):
        print(line, flush=True)


if __name__ == "__main__":
    main()
