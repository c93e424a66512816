"""`reprobot serve`, `reprobot worker` and `reprobot app manifest`: the GitHub App's processes."""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
from pathlib import Path

from bot.settings.config import Settings

log = logging.getLogger(__name__)

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "app-manifest.yml"


class ManifestMissing(RuntimeError):
    """deploy/app-manifest.yml is not beside this installation (a wheel install without the checkout)."""


def manifest_text() -> str:
    """The App manifest from the checkout's deploy/app-manifest.yml."""
    if not MANIFEST.is_file():
        raise ManifestMissing(f"{MANIFEST} not found: run `reprobot app manifest` from a reprobot checkout")
    return MANIFEST.read_text()


def run_app_command(args: argparse.Namespace, settings: Settings) -> int:
    """Run serve, worker or `app manifest`; returns the exit code."""
    logging.getLogger().setLevel(settings.log_level.upper())
    if args.command == "app":
        try:
            print(manifest_text(), end="")
        except ManifestMissing as exc:
            log.error("%s", exc)
            return 8
        return 0
    if args.command == "worker":
        from bot.forges.github_client import GitHubConfigError
        from bot.worker import run_worker

        try:
            asyncio.run(run_worker(settings, args.concurrency))
        except GitHubConfigError as exc:
            log.error("reprobot worker: %s", exc)
            return 2
        except KeyboardInterrupt:
            return 0
        return 0
    from aiohttp import web

    from bot.intake.server import make_app

    if not settings.github_webhook_secret:
        log.warning("REPROBOT_GITHUB_WEBHOOK_SECRET is not set: every delivery will be refused (401)")
    from bot.forges.github_client import GitHubConfigError
    from bot.settings.jira_mapping import MappingError

    try:
        app = make_app(settings, workers=args.workers, host=args.host)
    except (GitHubConfigError, MappingError) as exc:  # a bad Jira mapping names its key (issue 15)
        log.error("reprobot serve: %s", exc)
        return 2
    web.run_app(app, host=args.host, port=args.port, print=_start_line)
    return 0


def _start_line(message: str) -> None:
    """One line when serving starts, with the address(es) aiohttp bound (its own banner says them in prose)."""
    urls = re.findall(r"https?://\S+", message) or [message.strip()]
    print(f"reprobot serve: listening on {', '.join(urls)}", flush=True)
