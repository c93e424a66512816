"""`reprobot reproduce --app-url` and `reprobot replay`: the app reproduction agent in local mode.

No server and no runner: the agent drives the app at the URL on this machine's chromium (or an attached Android
device) and prints the result; the action log, screenshots and log land in the output folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.types import float_range
from bot.pipeline.exits import EXIT_ABSTAINED, EXIT_ERROR, EXIT_NOT_FIXED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from agents.app import AppReproResult
    from bot.settings.config import Settings

# The agent, the model client and the forge are imported where a command runs them: the parser, which every
# command (and `reprobot --help`) builds, needs none of them, and they cost a second to import.

#: reproduced -> 0, not_reproduced -> 1, abstained -> 3, error -> 8 (docs/command-line.md's exit codes).
#: Shared by `reproduce --game`.
EXIT_BY_STATUS = {
    "reproduced": EXIT_OK,
    "not_reproduced": EXIT_NOT_FIXED,
    "abstained": EXIT_ABSTAINED,
    "error": EXIT_ERROR,
}


def add_parser_args(rep: argparse.ArgumentParser) -> None:
    """The app flags of `reprobot reproduce`."""
    rep.add_argument("--app-url", help="reproduce on a running app instead of a repo (http://…, android://package)")
    rep.add_argument("--driver", choices=["web", "android"], default="web", help="UI driver for --app-url (web)")
    rep.add_argument(
        "--budget", type=float_range(1, 7200), default=300.0, help="wall seconds for an app reproduction (1-7200, 300)"
    )


def add_replay_parser(sub: Any) -> argparse.ArgumentParser:
    """`reprobot replay --app-url URL --actions FILE [--json]` (or `--game`, see bot.cli.gamerepro)."""
    p = sub.add_parser("replay", help="re-run a JSON action log of an app or game reproduction")
    p.add_argument("--app-url")
    p.add_argument("--actions", required=True, type=Path, help="actions.json written by reproduce --app-url")
    p.add_argument("--driver", choices=["web", "android"], default="web")
    p.add_argument("--out", type=Path, help="folder for screenshots and the log")
    p.add_argument("--json", action="store_true", help="print exactly one JSON document on stdout")
    return p


def model_call(settings: Settings, *, purpose: str, fallback: str, whole_reply: bool = False) -> Any:
    """A model's complete(messages) callable when one is configured, else None (the rules work alone).

    A failed call prints `fallback` (what happens instead) and answers "", so a reproduction goes on offline.
    `whole_reply` keeps the reply with its token counts and cost; otherwise the call answers its text.
    """
    if not settings.llm_configured:
        return None
    from bot.llm import LLMError, client_from_settings, ledger_from_settings

    client = client_from_settings(settings, ledger_from_settings(settings))

    async def complete(messages: list[dict[str, Any]]) -> Any:
        try:
            reply = await client.complete(list(messages), purpose=purpose)
        except LLMError as exc:
            print(f"reprobot: the model failed ({exc}); {fallback}", file=sys.stderr)
            return ""
        return reply if whole_reply else reply.content

    return complete


def _print(args: argparse.Namespace, result: AppReproResult, out: Path) -> int:
    steps = [f"{step['action']} {step['target']!r} {step['input']!r}" for step in result.steps]
    return print_result(args, result, out, f"status: {result.status}", steps)


def print_result(args: argparse.Namespace, result: Any, out: Path, headline: str, steps: list[str]) -> int:
    """An app or game reproduction's result: its JSON with --json, else the headline, steps and outcome."""
    if args.json:
        print(json.dumps(result.to_json() | {"out_dir": str(out)}))
    else:
        print(headline)
        for i, step in enumerate(steps, 1):
            print(f"  step {i}: {step}".rstrip())
        print_outcome(result, out)
    return EXIT_BY_STATUS.get(result.status, EXIT_ERROR)


def stop(args: argparse.Namespace, reason: str, code: int, *, shown: str | None = None) -> int:
    """Why a reproduction command stops: an error document with --json, `shown` (or the reason) on stderr."""
    if args.json:
        print(json.dumps({"status": "error", "reasons": [reason], "exit_code": code}))
    print(shown or reason, file=sys.stderr)
    return code


def print_outcome(result: Any, out: Path) -> None:
    """The text tail of an app or game reproduction: what the oracle saw, the reasons, how to replay, where."""
    if result.oracle:
        print(f"oracle: {result.oracle['fired']}: {result.oracle['message']}")
    for reason in result.reasons:
        print(f"  - {reason}")
    for url in getattr(result, "blocked", None) or []:  # the web driver's confinement (app results only)
        print(f"blocked (another host): {url}")
    print(f"replay: {result.replay}")
    print(f"output: {out}")


def _out_dir(args: argparse.Namespace, settings: Settings, kind: str) -> Path:
    out: Path | None = getattr(args, "out", None)
    return out or settings.data_dir / "app-runs" / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


async def run_apprepro_command(args: argparse.Namespace, settings: Settings) -> int:
    """`reproduce --app-url` or `replay`."""
    from agents.app import replay_actions, reproduce_app
    from bot.forges.local import ForgeError, read_issue_file

    if args.command == "replay":
        if not args.app_url:
            return stop(args, "reprobot replay: error: one of --app-url or --game is required", EXIT_USAGE)
        out = _out_dir(args, settings, "replay")
        result = await replay_actions(args.actions, args.app_url, out_dir=out, driver=args.driver)
        return _print(args, result, out)
    if not args.app_url:
        return stop(args, "reprobot reproduce: error: one of --repo or --app-url is required", EXIT_USAGE)
    try:
        issue = read_issue_file(args.issue)
    except ForgeError as exc:
        return stop(args, str(exc), exc.code, shown=f"reprobot: {exc}")
    out = _out_dir(args, settings, "reproduce")
    result = await reproduce_app(
        issue.text,
        args.app_url,
        out_dir=out,
        driver=args.driver,
        model=model_call(settings, purpose="s2r", fallback="the rules extract the steps"),
        budget_seconds=args.budget,
        cache_dir=settings.cache_dir / "utg",
    )
    return _print(args, result, out)
