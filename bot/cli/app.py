"""`reprobot serve`, `reprobot worker` and `reprobot app manifest|setup`: the GitHub App's processes."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.settings.config import Settings

log = logging.getLogger(__name__)

#: Where `reprobot app setup` listens by default (Probot's port).
SETUP_PORT = 3000


def add_app_parser(sub: Any) -> None:
    """`reprobot app manifest` and `reprobot app setup`."""
    from bot.cli.types import int_range

    app = sub.add_parser("app", help="GitHub App helpers: print the manifest, or register the App in one click")
    actions = app.add_subparsers(dest="action", required=True)
    actions.add_parser("manifest", help="print the App manifest (JSON, least privilege)")
    setup = actions.add_parser(
        "setup", help="register the GitHub App from its manifest in the browser and write its credentials"
    )
    setup.add_argument("--org", type=_org_name, help="register the App for this organization (default: your user)")
    setup.add_argument(
        "--port", type=int_range(0, 65535), default=SETUP_PORT, help=f"local port (default {SETUP_PORT}; 0: any)"
    )
    setup.add_argument(
        "--env-file",
        type=Path,
        default=Path("reprobot.env"),
        help="where to write the App's credentials (mode 0600; never overwritten; default ./reprobot.env)",
    )
    setup.add_argument(
        "--webhook-url",
        help="where GitHub sends webhooks (default: REPROBOT_PUBLIC_URL/webhooks/github; unset: set it later)",
    )


def _org_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a GitHub organization name")
    return text


def run_app_command(args: argparse.Namespace, settings: Settings) -> int:
    """Run serve, worker or `app manifest|setup`; returns the exit code."""
    logging.getLogger().setLevel(settings.log_level.upper())
    if args.command == "app":
        if args.action == "setup":
            from bot.cli.app_setup import run_setup_command

            return run_setup_command(args, settings)
        from bot.forges.app_manifest import manifest

        print(json.dumps(manifest(), indent=2))
        return 0
    if args.command == "worker":
        from bot.forges.github_client import GitHubConfigError, InstallationTokens
        from bot.worker import run_worker

        try:
            # The App's id and key are checked before anything starts: a key it cannot read stops it here.
            InstallationTokens(settings)
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
