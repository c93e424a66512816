"""The base root filesystem (debootstrap) and the Docker base image imported from it, cached by package list."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sandboxes.hostrun import host_env

log = logging.getLogger(__name__)

SUITE = "bookworm"
VARIANT = "minbase"
#: Packages added to the minimal base: the interpreter the environments are built for, venv and git.
PACKAGES = ("python3", "python3-venv", "git")
MIRROR = "http://deb.debian.org/debian"
IMAGE_REPO = "reprobot/base"
#: Label on everything reprobot creates in Docker; the reaper finds leftovers by it.
LABEL = "org.reprobot.sandbox"
DEBOOTSTRAP_TIMEOUT = 1800.0
IMPORT_TIMEOUT = 900.0


class BaseImageError(RuntimeError):
    """The base root filesystem or image could not be built; the message says which step and why."""


def package_key(packages: tuple[str, ...] = PACKAGES, suite: str = SUITE, variant: str = VARIANT) -> str:
    """Short hash of what goes into the root filesystem: the cache key of both rootfs and image."""
    blob = "\n".join([suite, variant, *sorted(packages)])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def image_tag(key: str | None = None) -> str:
    """The Docker image name for a package key (the default package list when None)."""
    return f"{IMAGE_REPO}:{key or package_key()}"


@dataclass(frozen=True)
class BaseBuild:
    """Where the root filesystem is and which image carries it; whether each was already cached."""

    rootfs: Path
    image: str | None
    rootfs_cached: bool
    image_cached: bool


def rootfs_dir(cache_dir: Path, key: str | None = None) -> Path:
    """The cached root filesystem folder for a package key."""
    return cache_dir / "rootfs" / (key or package_key())


def build_rootfs(cache_dir: Path, *, packages: tuple[str, ...] = PACKAGES, mirror: str = MIRROR) -> tuple[Path, bool]:
    """debootstrap the root filesystem once; returns (path, was cached). Blocking: run it in a thread."""
    key = package_key(packages)
    target = rootfs_dir(cache_dir, key)
    if (target / ".reprobot-ready").exists():
        return target, True
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not os.access(debootstrap, os.X_OK):
        raise BaseImageError("debootstrap is not installed (apt-get install debootstrap)")
    if os.geteuid() != 0:
        raise BaseImageError("debootstrap needs root to build the root filesystem")
    staging = target.with_name(f"{key}.build-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        debootstrap,
        f"--variant={VARIANT}",
        f"--include={','.join(packages)}",
        SUITE,
        str(staging),
        mirror,
    ]
    log.info("building root filesystem %s: %s", key, " ".join(argv))
    try:
        # Package scripts run in the chroot: they get the scrubbed host-tool environment, no bot secret.
        with tempfile.TemporaryDirectory(prefix="reprobot-debootstrap-home-") as home:
            env = host_env(home)
            proc = subprocess.run(argv, capture_output=True, timeout=DEBOOTSTRAP_TIMEOUT, check=False, env=env)
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise BaseImageError(f"debootstrap timed out after {DEBOOTSTRAP_TIMEOUT:.0f}s") from exc
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).decode(errors="replace").strip()[-1500:]
        shutil.rmtree(staging, ignore_errors=True)
        raise BaseImageError(f"debootstrap failed ({proc.returncode}): {tail}")
    # The package cache is not needed at run time; drop it to keep the image small.
    shutil.rmtree(staging / "var" / "cache" / "apt" / "archives", ignore_errors=True)
    (staging / "var" / "cache" / "apt" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (staging / "opt" / "reprobot-env").mkdir(parents=True, exist_ok=True)
    (staging / "workspace").mkdir(exist_ok=True)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    (target / ".reprobot-ready").write_text(" ".join(packages) + "\n")
    return target, False


def _docker_client(timeout: float) -> object:
    import docker  # imported lazily: the CLI and bwrap users need no Docker

    return docker.from_env(timeout=int(timeout))


def image_exists(tag: str, timeout: float = 30.0) -> bool:
    """True when the Docker engine has the image; raises docker errors when the engine is unreachable."""
    import docker.errors

    client = _docker_client(timeout)
    try:
        client.images.get(tag)  # type: ignore[attr-defined]
        return True
    except docker.errors.ImageNotFound:
        return False
    finally:
        client.close()  # type: ignore[attr-defined]


def import_image(rootfs: Path, tag: str) -> None:
    """`docker import` the root filesystem as an image (streamed as a tar, never a host file)."""
    import docker.errors

    client = _docker_client(IMPORT_TIMEOUT)
    read_fd, write_fd = os.pipe()

    def produce() -> None:
        with os.fdopen(write_fd, "wb") as sink, tarfile.open(fileobj=sink, mode="w|") as tar:
            for entry in sorted(os.listdir(rootfs)):
                if entry != ".reprobot-ready":
                    tar.add(rootfs / entry, arcname=entry)

    import threading

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    repo, _, version = tag.partition(":")
    try:
        with os.fdopen(read_fd, "rb") as source:
            client.api.import_image_from_stream(  # type: ignore[attr-defined]
                source,
                repository=repo,
                tag=version or "latest",
                changes=[f"LABEL {LABEL}=base", "USER 61000:61000", "WORKDIR /workspace", 'CMD ["sleep", "infinity"]'],
            )
    except docker.errors.DockerException as exc:
        raise BaseImageError(f"docker import of {rootfs} failed: {exc}") from exc
    finally:
        writer.join(timeout=60)
        client.close()  # type: ignore[attr-defined]
    if not image_exists(tag):
        raise BaseImageError(f"docker import reported success but {tag} is missing")


def build_base(cache_dir: Path, *, with_image: bool = True) -> BaseBuild:
    """Build (or reuse) the root filesystem and, when asked, the Docker image made from it.

    An image already in the engine is reused as is: the root filesystem is then only built when missing
    and not needed for the image, i.e. never (bwrap callers ask with with_image=False).
    """
    tag = image_tag()
    if with_image and image_exists(tag):
        target = rootfs_dir(cache_dir)
        return BaseBuild(target, tag, (target / ".reprobot-ready").exists(), True)
    rootfs, rootfs_cached = build_rootfs(cache_dir)
    if not with_image:
        return BaseBuild(rootfs, None, rootfs_cached, False)
    import_image(rootfs, tag)
    return BaseBuild(rootfs, tag, rootfs_cached, False)
