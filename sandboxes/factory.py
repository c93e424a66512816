"""Pick a sandbox backend by name, and tell which backends this machine can run and why not."""

from __future__ import annotations

import functools
import logging
import os
import subprocess

from sandboxes.base import Sandbox, SandboxError, SandboxSpec
from sandboxes.bwrap import SETPRIV, BwrapSandbox, bwrap_path, namespace_args, seccomp_program, user_command
from sandboxes.none import NoneSandbox

log = logging.getLogger(__name__)

#: Every backend name the bot knows, available or not.
KINDS = ("bwrap", "docker", "none")


class SandboxUnavailable(SandboxError):
    """The requested backend is unknown or cannot run on this machine."""


@functools.lru_cache(maxsize=1)
def _bwrap_problem() -> str | None:
    """Why bwrap cannot be used here, found by actually starting a trivial sandbox once."""
    binary = bwrap_path()
    if binary is None:
        return "bwrap not installed"
    privileged = os.geteuid() == 0
    if privileged and not os.access(SETPRIV, os.X_OK):
        return f"{SETPRIV} not installed (needed to drop to the sandbox uid when running as root)"
    try:
        seccomp_program(privileged)
    except SandboxError as exc:
        return str(exc)
    # The same namespaces and uid switch as real runs, on a bare /usr.
    args = [binary, *namespace_args(privileged), "--ro-bind", "/usr", "/usr", "--proc", "/proc"]
    for name in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{name}"):
            args += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
    argv = [*args, "--", *user_command(["/usr/bin/true"], privileged)]
    try:
        probe = subprocess.run(argv, capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot start: {exc}"
    if probe.returncode != 0:
        err = probe.stderr.decode(errors="replace").strip()
        return f"bwrap cannot create namespaces here: {err or probe.returncode}"
    return None


def _docker_problem() -> str | None:
    from sandboxes.docker import docker_problem

    return docker_problem()


def available_backends() -> dict[str, str | None]:
    """Backend name -> None when usable here, else the reason it is not."""
    return {
        "bwrap": _bwrap_problem(),
        "docker": _docker_problem(),
        # Always possible, never chosen implicitly: make_sandbox("none", ...) must be asked for by name.
        "none": None,
    }


def make_sandbox(kind: str, spec: SandboxSpec) -> Sandbox:
    """A sandbox of exactly the requested kind; SandboxUnavailable if unknown or unusable here.

    There is no fallback: in particular "none" (no isolation) is only ever returned when asked for.
    """
    if kind not in KINDS:
        raise SandboxUnavailable(f"unknown sandbox backend {kind!r}; known: {', '.join(KINDS)}")
    problem = available_backends()[kind]
    if problem is not None:
        raise SandboxUnavailable(f"sandbox backend {kind!r} is not available: {problem}")
    if kind == "bwrap":
        return BwrapSandbox(spec)
    if kind == "docker":
        from sandboxes.docker import DockerSandbox

        return DockerSandbox(spec)
    log.warning("running untrusted code WITHOUT isolation (sandbox backend 'none', explicitly requested)")
    return NoneSandbox(spec)
