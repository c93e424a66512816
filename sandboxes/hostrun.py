"""Run a trusted host-side tool (pip download, cargo vendor, fetch steps) with a wall timeout; never repo code.

Every host tool gets a scrubbed environment built here and nowhere else: an allowlist of the host's
non-secret settings (PATH, locale, certificates, proxies, package-index configuration), a scratch HOME
made for the run, and whatever non-secret extras the caller names. The bot's own environment (its
REPROBOT_* settings, the GitHub App key, tokens, the model key) cannot be passed through.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Host variables a download tool may see. Nothing else of the bot's environment reaches a host tool.
HOST_ENV_ALLOWLIST = frozenset(
    {
        "PATH",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        # Certificates and proxies: how this machine reaches a package index at all.
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        # pip's own, non-secret configuration (an offline deployment points it at a local wheelhouse).
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_FIND_LINKS",
        "PIP_NO_INDEX",
        "PIP_TRUSTED_HOST",
        "PIP_CERT",
        "PIP_CONFIG_FILE",
        "PIP_DEFAULT_TIMEOUT",
        "PIP_RETRIES",
        # Other ecosystems' registry locations.
        "GOPROXY",
        "GOSUMDB",
        "GOFLAGS",
        "NPM_CONFIG_REGISTRY",
        "CARGO_REGISTRIES_CRATES_IO_PROTOCOL",
    }
)
#: Names that are never allowed into a host tool's environment, even as an explicit extra.
_SECRET_NAME = re.compile(
    r"^(REPROBOT_|GITHUB_|GH_|ACTIONS_)|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_KEY$|APIKEY|AUTH"
)


class UnsafeHostEnv(ValueError):
    """A caller tried to hand a secret-looking variable to a host tool."""


@dataclass(frozen=True)
class HostRun:
    """How one host command ended; `stdout` holds stderr too when it was merged."""

    code: int
    stdout: str
    stderr: str = ""
    timed_out: bool = False


def host_env(home: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a host tool: the allowlisted host variables, HOME=`home`, then `extra`.

    Raises UnsafeHostEnv when `extra` names a secret-looking variable (REPROBOT_*, GITHUB_*, *TOKEN*...).
    """
    env = {k: v for k, v in os.environ.items() if k in HOST_ENV_ALLOWLIST}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env["HOME"] = home
    for key, value in (extra or {}).items():
        if _SECRET_NAME.search(key.upper()):
            raise UnsafeHostEnv(f"{key} looks like a secret and is never passed to a host tool")
        env[key] = value
    return env


async def run_host(
    argv: list[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
    merge_stderr: bool = True,
) -> HostRun:
    """Run argv in its own session with a scrubbed environment (see host_env) and a fresh scratch HOME.

    Past `timeout` the whole process group is killed (code -1, timed_out).
    """
    home = tempfile.mkdtemp(prefix="reprobot-hosthome-")
    try:
        env = host_env(home, extra_env)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            # A tool's children (pip's resolver, cargo's fetchers) must not outlive it.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            return HostRun(-1, f"timed out after {timeout:.0f}s", timed_out=True)
    finally:
        await asyncio.to_thread(shutil.rmtree, home, True)
    code = proc.returncode if proc.returncode is not None else -1
    return HostRun(code, out.decode("utf-8", "replace"), (err or b"").decode("utf-8", "replace"))
