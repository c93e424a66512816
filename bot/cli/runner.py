"""`reprobot runner`: a self-hosted runner (see bot/selfhosted/ and docs/runners.md)."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.settings.config import Settings


__all__ = ["add_parser", "run_runner_command"]


def _labels(value: str) -> list[str]:
    labels = sorted({v.strip() for v in value.split(",") if v.strip()})
    if not labels:
        raise argparse.ArgumentTypeError("expected a comma-separated list of labels, e.g. web,chromium")
    return labels


def _scope(value: str) -> list[str]:
    from bot.store.tenants import parse_scope  # here, like the runner itself: other commands need no store

    try:
        return parse_scope([v.strip() for v in value.split(",") if v.strip()])
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _executor(value: str) -> tuple[str, list[str]]:
    kind, sep, command = value.partition("=")
    argv = shlex.split(command)
    if not sep or not kind.strip() or not argv:
        raise argparse.ArgumentTypeError("expected KIND=COMMAND, e.g. reproduce.app='./my-agent --flag'")
    return kind.strip(), argv


def _default_state() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "reprobot" / "runner.json"


def add_parser(sub: Any) -> None:
    """Register `reprobot runner` on the top-level subparsers."""
    p = sub.add_parser("runner", help="run a self-hosted runner that takes jobs matching its labels from a bot")
    p.add_argument("--server", required=True, help="the bot's base URL, e.g. https://bot.example.org")
    p.add_argument(
        "--token",
        help="registration token (or REPROBOT_RUNNER_TOKEN): the operator's, or a scoped one from the runner admin; "
        "exchanged once for this runner's own token",
    )
    p.add_argument("--labels", required=True, type=_labels, help="comma-separated labels, e.g. web,chromium")
    p.add_argument(
        "--scope",
        type=_scope,
        default=None,
        help="the tenants whose jobs it takes: github:INSTALLATION_ID and jira:SITE_URL, comma-separated, or "
        "`deployment` for every job (needed with the registration token; a scoped token brings its own)",
    )
    p.add_argument("--name", default=socket.gethostname(), help="name shown in the runner list (default: host)")
    p.add_argument("--ephemeral", action="store_true", help="take one job, then exit (and be removed)")
    p.add_argument("--state", type=Path, default=None, help="file keeping this runner's token between runs")
    p.add_argument("--work-dir", type=Path, default=None, help="folder for job files (default: next to --state)")
    p.add_argument(
        "--exec",
        dest="executors",
        action="append",
        type=_executor,
        default=[],
        metavar="KIND=COMMAND",
        help="run COMMAND for jobs of KIND (it gets the job JSON path and an output folder); repeatable",
    )


def run_runner_command(args: argparse.Namespace, settings: Settings) -> int:
    """Run the runner until SIGTERM or SIGINT (or one job, when ephemeral); returns the exit code."""
    from bot.selfhosted.runner import RunnerAgent, RunnerConfig

    logging.getLogger().setLevel(logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns what matters
    token = settings.runner_token if args.token is None else args.token
    if not token:
        logging.error("reprobot runner: --token (or REPROBOT_RUNNER_TOKEN) is required to register")
        return 2
    state: Path = args.state or _default_state()
    from importlib import metadata  # here: reading the package metadata costs `reprobot --help` 10 ms

    try:
        version = metadata.version("reprobot")
    except metadata.PackageNotFoundError:
        version = "unknown"
    config = RunnerConfig(
        server=args.server.rstrip("/"),
        registration_token=token,
        labels=args.labels,
        name=args.name,
        work_dir=(args.work_dir or state.parent / "runner-work").resolve(),
        state_file=state,
        ephemeral=args.ephemeral,
        version=version,
        commands=dict(args.executors),
        scope=args.scope,
    )

    import asyncio  # here: the parser (and `reprobot --help`) needs no event loop

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        return await RunnerAgent(config).run(stop)

    return asyncio.run(main())
