"""Rust: the host toolchain made visible read-only in sandboxes, and crates vendored on the host for offline builds."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sandboxes.base import WORKSPACE_MOUNT, Mount
from sandboxes.hostrun import host_env, run_host

#: Where the host's active Rust toolchain (its sysroot: bin/cargo, bin/rustc, lib/) is mounted read-only.
RUST_MOUNT = "/opt/reprobot-rust"
#: Files of a cargo project that decide which crates are needed (part of the environment's cache key).
MANIFESTS = ("Cargo.toml", "Cargo.lock")
#: Folders never searched for manifests: build output, VCS data, reprobot's scratch.
_SKIP_DIRS = frozenset({"target", ".git", ".reprobot", "node_modules"})
_REPLACE_DEFAULT = (
    '[source.crates-io]\nreplace-with = "vendored-sources"\n\n[source.vendored-sources]\ndirectory = "{dir}"\n'
)


class RustSetupError(RuntimeError):
    """The Rust toolchain is missing or vendoring the crates failed; the message says which and why."""


@dataclass(frozen=True)
class RustToolchain:
    """A Rust toolchain on the host: its sysroot holds bin/cargo, bin/rustc and the standard library."""

    sysroot: Path
    version: str

    @property
    def cargo(self) -> Path:
        """The toolchain's own cargo (not a rustup proxy, so no toolchain file in a repo can pick another)."""
        return self.sysroot / "bin" / "cargo"

    @property
    def mount(self) -> Mount:
        """The read-only mount of the sysroot inside a sandbox."""
        return Mount(self.sysroot, RUST_MOUNT, read_only=True)


def find_rust_toolchain(rustc: str | None = None) -> RustToolchain | None:
    """The host's active toolchain (rustup's default or Debian's), or None when rustc or cargo is missing.

    Runs `rustc --print sysroot` from / so that no project's rust-toolchain file selects (or installs) another.
    """
    rustc = rustc or shutil.which("rustc")
    if rustc is None:
        return None
    # rustup's proxy finds its toolchains through HOME (or RUSTUP_HOME); nothing else of the bot's env is needed.
    env = host_env(os.environ.get("HOME", "/"), _rustup_vars())
    try:
        sysroot = subprocess.run(
            [rustc, "--print", "sysroot"], cwd="/", env=env, capture_output=True, text=True, timeout=60, check=True
        ).stdout.strip()
        version = subprocess.run(
            [rustc, "--version"], cwd="/", env=env, capture_output=True, text=True, timeout=60, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    toolchain = RustToolchain(Path(sysroot), version)
    if not (toolchain.sysroot / "bin" / "rustc").is_file() or not toolchain.cargo.is_file():
        return None
    return toolchain


def _rustup_vars() -> dict[str, str]:
    return {k: os.environ[k] for k in ("RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN") if k in os.environ}


def manifest_digest(repo: Path) -> str:
    """Hash of every Cargo.toml and Cargo.lock in the repo (by relative path), for the environment cache key."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(f for f in files if f in MANIFESTS):
            path = Path(root) / name
            digest.update(path.relative_to(repo).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def vendor_config(cargo_output: str, host_dir: Path, inside_dir: str) -> str:
    """The source-replacement config `cargo vendor` printed, with the vendor folder as seen in the sandbox.

    `cargo vendor` prints a section per replaced source (crates.io, git repositories); when nothing needed
    vendoring it prints none, and crates.io is replaced anyway so that a sandboxed build never looks elsewhere.
    """
    start = cargo_output.find("[source.")
    if start < 0:
        return _REPLACE_DEFAULT.format(dir=inside_dir)
    return cargo_output[start:].replace(str(host_dir), inside_dir).strip() + "\n"


def cargo_wrapper(env_mount: str) -> str:
    """A `cargo` placed first on the sandbox's PATH: the toolchain's cargo reading the vendored-sources config."""
    return f'#!/bin/sh\nexec {RUST_MOUNT}/bin/cargo --config {env_mount}/cargo-config.toml "$@"\n'


def sandbox_env(env_mount: str, target_dir: str) -> dict[str, str]:
    """Environment for cargo inside a sandbox: the toolchain on PATH, a writable home in /tmp, offline."""
    return {
        "PATH": f"{env_mount}/bin:{RUST_MOUNT}/bin:/usr/local/bin:/usr/bin:/bin",
        "CARGO_HOME": "/tmp/cargo-home",
        "CARGO_TARGET_DIR": f"{WORKSPACE_MOUNT}/{target_dir}",
        "CARGO_NET_OFFLINE": "true",
        "CARGO_TERM_COLOR": "never",
        "CARGO_INCREMENTAL": "0",
        "HOME": "/tmp",
    }


async def vendor_crates(
    toolchain: RustToolchain, workspace: Path, dest: Path, *, env_mount: str, timeout: float
) -> None:
    """On the host, with network: `cargo vendor` the workspace's dependencies into dest/vendor.

    Writes dest/cargo-config.toml (source replacement pointing at the vendored folder inside the sandbox)
    and dest/bin/cargo (the wrapper). No repo code runs: vendoring reads manifests only, and cargo runs
    from `dest` so a repo's own .cargo/config.toml or toolchain file is not read on the host. A Cargo.lock
    that vendoring had to create is removed again: the workspace is left as it was.
    """
    manifest = workspace / "Cargo.toml"
    if not manifest.is_file():
        raise RustSetupError(f"no Cargo.toml at the root of {workspace}")
    lock = workspace / "Cargo.lock"
    had_lock = lock.exists()
    vendor = dest / "vendor"
    dest.mkdir(parents=True, exist_ok=True)
    argv = [str(toolchain.cargo), "vendor", "--versioned-dirs", "--manifest-path", str(manifest), str(vendor)]
    try:
        # run_host scrubs the environment: cargo gets a scratch HOME (so a fresh CARGO_HOME), no bot secret.
        color = {"CARGO_TERM_COLOR": "never"}
        run = await run_host(argv, timeout=timeout, cwd=dest, extra_env=color, merge_stderr=False)
    finally:
        if not had_lock:
            lock.unlink(missing_ok=True)
    if run.timed_out:
        raise RustSetupError(f"cargo vendor timed out after {timeout:.0f}s")
    if run.code != 0:
        raise RustSetupError(f"cargo vendor failed ({run.code}): {run.stderr.strip()[-800:]}")
    vendor.mkdir(exist_ok=True)
    config = vendor_config(run.stdout, vendor, f"{env_mount}/vendor")
    (dest / "cargo-config.toml").write_text(config)
    (dest / "bin").mkdir(exist_ok=True)
    wrapper = dest / "bin" / "cargo"
    wrapper.write_text(cargo_wrapper(env_mount))
    wrapper.chmod(0o755)
