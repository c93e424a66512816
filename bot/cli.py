"""`reprobot` command line: fix, reproduce, eval, env, sandbox, doctor, serve, worker, app manifest."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.config import Settings, SettingsError

#: Exit codes, documented in the README.
EXIT_OK = 0
EXIT_NOT_FIXED = 1
EXIT_USAGE = 2
EXIT_ABSTAINED = 3
EXIT_BAD_REPO = 4
EXIT_DIRTY = 5
EXIT_BAD_ISSUE = 6
EXIT_ENVIRONMENT = 7
EXIT_ERROR = 8
EXIT_SUGGESTED = 9
EXIT_INTERRUPTED = 130

STATUS_EXIT = {
    "fixed": EXIT_OK,
    "reproduced": EXIT_OK,
    "suggested": EXIT_SUGGESTED,
    "not_fixed": EXIT_NOT_FIXED,
    "abstained": EXIT_ABSTAINED,
    "error": EXIT_ERROR,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = argparse.ArgumentParser(prog="reprobot", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    def job_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--repo", required=True, type=Path, help="a git repository on disk")
        p.add_argument("--issue", required=True, type=Path, help="markdown file: '# title', then the body")
        p.add_argument("--sandbox", choices=["bwrap", "docker", "none"], help="sandbox backend (default bwrap)")
        p.add_argument("--allow-dirty", action="store_true", help="work from HEAD even if the tree is dirty")
        p.add_argument("--out", type=Path, help="folder for pr.md / comment.md / result.json")
        p.add_argument("--json", action="store_true", help="print exactly one JSON document on stdout")
        p.add_argument("--timeout", type=float, help="wall seconds for one test-suite run")

    fix = sub.add_parser("fix", help="fix a bug report: a branch with fix + bug reproduction test")
    job_args(fix)
    fix.add_argument("--trajectories", "-M", type=int, help="parallel searches (default 4)")
    fix.add_argument(
        "--agent",
        choices=["classic", "llm", "auto", "mixed"],
        default="classic",
        help="classic (no model), llm, auto (llm when a model is configured) or mixed (alternate both)",
    )
    fix.add_argument(
        "--strategy",
        choices=["freeform", "tdd", "tld", "fix-only", "brt-only"],
        default="freeform",
        help="cogeneration strategy of llm trajectories (default freeform)",
    )
    fix.add_argument("--llm-reviewers", action="store_true", help="add the spec and BRT-relevance model reviewers")
    fix.add_argument("--llm-abstention", action="store_true", help="combine the model's estimate with the rules")
    fix.add_argument("--selector", default="ranked", help="patch selector (default ranked)")
    fix.add_argument("--no-branch", action="store_true", help="do not create the branch, only write files")

    rep = sub.add_parser("reproduce", help="reproduce a bug report: a failing test and how to run it")
    job_args(rep)

    ev = sub.add_parser("eval", help="run a benchmark directory and score it against its oracles")
    ev.add_argument("--bench", required=True, type=Path)
    ev.add_argument("--agent", default="classic")
    ev.add_argument("--strategy", default="freeform")
    ev.add_argument("--trajectories", "-M", type=int, default=8)
    ev.add_argument("--k", default="1,5,M", help="comma-separated k values; M means the trajectory count")
    ev.add_argument("--out", type=Path, default=Path("eval-out"))
    ev.add_argument("--jobs", type=int, default=1, help="cases run at once")
    ev.add_argument("--cases", default="", help="comma-separated case names to run (default all)")
    ev.add_argument("--sandbox", choices=["bwrap", "docker", "none"])

    sub.add_parser("doctor", help="check the machine: sandbox backends, interpreter, data dir")

    serve = sub.add_parser("serve", help="run the GitHub App web server (webhooks, health)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=0, help="job slots run inside this process (default 0)")
    worker = sub.add_parser("worker", help="run queued jobs (GitHub App)")
    worker.add_argument("--concurrency", type=int, help="jobs at once (default REPROBOT_WORKERS)")
    app = sub.add_parser("app", help="GitHub App helpers")
    app.add_argument("action", choices=["manifest"], help="manifest: print the App manifest (least privilege)")
    from bot.cli_env import add_parsers

    add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `reprobot` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"reprobot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command in ("fix", "reproduce"):
            from bot.cli_job import run_job_command

            return asyncio.run(run_job_command(args, settings))
        if args.command == "eval":
            from bot.evaluate import run_eval_command

            return asyncio.run(run_eval_command(args, settings))
        if args.command == "doctor":
            return doctor(settings)
        if args.command in ("serve", "worker", "app"):
            from bot.cli_app import run_app_command

            return run_app_command(args, settings)
        if args.command == "env":
            from bot.cli_env import run_env_command

            return run_env_command(args, settings)
        if args.command == "sandbox":
            from bot.cli_env import run_sandbox_command

            return run_sandbox_command(args, settings)
    except KeyboardInterrupt:
        print("reprobot: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    parser.error(f"unknown command {args.command}")
    return EXIT_USAGE


def doctor(settings: Settings) -> int:
    """Print what this machine offers the bot."""
    from sandboxes.baseimage import image_tag, rootfs_dir
    from sandboxes.factory import available_backends
    from sandboxes.rust import RUST_MOUNT, find_rust_toolchain

    rootfs = rootfs_dir(settings.cache_dir)
    rust = find_rust_toolchain()
    report: dict[str, Any] = {
        "base_image": image_tag(),
        "base_rootfs": str(rootfs)
        if (rootfs / ".reprobot-ready").exists()
        else "not built (reprobot sandbox build-base)",
        "data_dir": str(settings.data_dir),
        "sandbox_python": str(settings.sandbox_python),
        "sandbox_python_exists": settings.sandbox_python.exists(),
        "backends": {k: ("available" if v is None else v) for k, v in available_backends().items()},
        "llm_configured": settings.llm_configured,
        "rust_toolchain": f"{rust.version} at {rust.sysroot} (mounted read-only at {RUST_MOUNT})"
        if rust
        else "not found (Rust repos cannot be tested)",
    }
    print(json.dumps(report, indent=2))
    return EXIT_OK if report["sandbox_python_exists"] else EXIT_ENVIRONMENT


if __name__ == "__main__":
    sys.exit(main())
