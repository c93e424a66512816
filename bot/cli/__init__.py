"""`reprobot` command line: fix, reproduce, eval, env, sandbox, doctor, serve, worker, app manifest, crash, mojira."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import shutil
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from bot.cli.types import MAX_TRAJECTORIES, absolute_path, float_range, int_range, k_list, output_dir

# Exit codes, documented in docs/command-line.md, in a module of their own: --help loads no pipeline.
from bot.pipeline.exits import (
    EXIT_ABSTAINED,
    EXIT_BAD_ISSUE,
    EXIT_BAD_REPO,
    EXIT_DIRTY,
    EXIT_ENVIRONMENT,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_FIXED,
    EXIT_OK,
    EXIT_SUGGESTED,
    EXIT_USAGE,
    STATUS_EXIT,
)

if TYPE_CHECKING:
    from bot.settings.config import Settings

__all__ = [
    "EXIT_ABSTAINED",
    "EXIT_BAD_ISSUE",
    "EXIT_BAD_REPO",
    "EXIT_DIRTY",
    "EXIT_ENVIRONMENT",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FIXED",
    "EXIT_OK",
    "EXIT_SUGGESTED",
    "EXIT_USAGE",
    "STATUS_EXIT",
    "UsageError",
    "build_parser",
    "main",
]


class UsageError(Exception):
    """Bad command-line arguments; the message says which and how (argparse's own wording)."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of exiting, so `main` can still answer in JSON."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: error: {message}", self.format_usage())


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = _Parser(prog="reprobot", description=__doc__)
    parser.add_argument("--version", action=_VersionAction, help="show the installed version and exit")
    _add_verbosity(parser, False)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_fix_parser(sub)
    rep = _add_reproduce_parser(sub)
    _add_eval_parser(sub)
    _add_service_parsers(sub)
    from bot.cli.env import add_parsers

    add_parsers(sub)
    from bot.cli.mojira import add_parsers as add_mojira_parsers  # crash reports and the Mojira poller

    add_mojira_parsers(sub)
    from bot.cli import runner as runner_cli

    runner_cli.add_parser(sub)
    # App reproduction (issue 16): `reproduce --app-url` and `replay`.
    from bot.cli.apprepro import add_parser_args, add_replay_parser

    add_parser_args(rep)
    replay = add_replay_parser(sub)
    # Game reproduction (issue 19): `reproduce --game` and `replay --game`.
    from bot.cli.gamerepro import add_game_args

    add_game_args(rep, replay)
    _verbosity_everywhere(sub)
    return parser


class _VersionAction(argparse.Action):
    """`--version`, with the version looked up when asked for: the package metadata is not read for other commands."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        print(f"reprobot {_version()}")
        parser.exit()


def _version() -> str:
    """The installed distribution's version (a checkout run without installing says so)."""
    from importlib import metadata

    try:
        return metadata.version("reprobot")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _add_verbosity(p: argparse.ArgumentParser, default: Any) -> None:
    """-v/-q: the top level sets the defaults; a subcommand's own flags (default SUPPRESS) only override them."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="store_true", default=default, help="log progress details to stderr")
    group.add_argument("-q", "--quiet", action="store_true", default=default, help="log errors only")


def _verbosity_everywhere(sub: Any) -> None:
    """Every subcommand, nested ones too, takes -v/-q after its name, as `reprobot fix -v` users type it."""
    for child in sub.choices.values():
        _add_verbosity(child, argparse.SUPPRESS)
        for action in child._actions:
            if isinstance(action, argparse._SubParsersAction):
                _verbosity_everywhere(action)


def _job_args(p: argparse.ArgumentParser, repo_required: bool = True) -> None:
    """The options of a job on a local repository (`fix`, `reproduce`)."""
    from bot.cli.env import DIRECT_REFERENCES_HELP

    p.add_argument("--repo", required=repo_required, type=absolute_path, help="a git repository on disk")
    p.add_argument("--issue", required=True, type=absolute_path, help="markdown file: '# title', then the body")
    p.add_argument("--sandbox", choices=["bwrap", "docker", "none"], help="sandbox backend (default bwrap)")
    p.add_argument("--allow-dirty", action="store_true", help="work from HEAD even if the tree is dirty")
    p.add_argument("--out", type=output_dir, help="folder for pr.md / comment.md / result.json")
    p.add_argument("--json", action="store_true", help="print exactly one JSON document on stdout")
    p.add_argument("--timeout", type=float_range(1, 7200), help="wall seconds for one test-suite run (1-7200)")
    p.add_argument("--allow-direct-references", action="store_true", help=DIRECT_REFERENCES_HELP)


def _add_fix_parser(sub: Any) -> None:
    fix = sub.add_parser("fix", help="fix a bug report: a branch with fix + bug reproduction test")
    _job_args(fix)
    fix.add_argument(
        "--trajectories", "-M", type=int_range(1, MAX_TRAJECTORIES), help="parallel searches (1-32, default 4)"
    )
    fix.add_argument(
        "--agent",
        choices=["classic", "llm", "auto", "mixed"],
        help="classic (no model; the default), llm, auto (llm when a model is configured) or mixed (alternate both)",
    )
    fix.add_argument(
        "--strategy",
        choices=["freeform", "tdd", "tld", "fix-only", "brt-only"],
        help="cogeneration strategy of llm trajectories (default freeform)",
    )
    fix.add_argument("--llm-reviewers", action="store_true", help="add the spec and BRT-relevance model reviewers")
    fix.add_argument("--llm-abstention", action="store_true", help="combine the model's estimate with the rules")
    fix.add_argument("--selector", help="patch selector (default ranked)")
    fix.add_argument("--no-branch", action="store_true", help="do not create the branch, only write files")


def _add_reproduce_parser(sub: Any) -> argparse.ArgumentParser:
    rep = sub.add_parser("reproduce", help="reproduce a bug report: a failing test and how to run it")
    _job_args(rep, repo_required=False)  # --repo, or --app-url for the app reproduction agent
    rep.add_argument(
        "--agent",
        choices=["classic", "llm", "auto"],
        help="classic (a synthesized test; default), llm (the model writes it: brt-only) or auto (llm with a model)",
    )
    return rep


def _add_eval_parser(sub: Any) -> None:
    ev = sub.add_parser("eval", help="run a benchmark directory and score it against its oracles")
    ev.add_argument("--bench", required=True, type=absolute_path)
    ev.add_argument("--agent", default="classic")
    ev.add_argument("--strategy", default="freeform")
    ev.add_argument("--trajectories", "-M", type=int_range(1, MAX_TRAJECTORIES), default=8, help="1-32 (default 8)")
    ev.add_argument("--k", type=k_list, default="1,5,M", help="comma-separated k values; M means the trajectory count")
    ev.add_argument("--out", type=output_dir, default="eval-out", help="folder for the results (eval-out)")
    ev.add_argument("--jobs", type=int_range(1, 64), default=1, help="cases run at once (1-64)")
    ev.add_argument("--cases", default="", help="comma-separated case names to run (default all)")
    ev.add_argument(
        "--mode",
        choices=["fix", "reproduce"],
        default="fix",
        help="the job each case runs: fix (default), or reproduce (the BRT alone: plausible BRT, much faster)",
    )
    ev.add_argument("--sandbox", choices=["bwrap", "docker", "none"])
    held = ev.add_mutually_exclusive_group()
    held.add_argument(
        "--leave-out",
        metavar="PROJECT",
        help="the held-out check: run only PROJECT's cases (a project is a case's `project`, or its folder's "
        "<project>-<commit>, or its upstream repo)",
    )
    held.add_argument("--all-but", metavar="PROJECT", help="run every project's cases but PROJECT's")


def _add_service_parsers(sub: Any) -> None:
    """doctor, and the GitHub App's serve, worker and app helpers."""
    doc = sub.add_parser("doctor", help="check the machine: store, sandboxes, chromium, disk, model endpoint")
    doc.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    serve = sub.add_parser("serve", help="run the GitHub App web server (webhooks, health)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int_range(1, 65535), default=8000, help="1-65535 (default 8000)")
    serve.add_argument(
        "--workers", type=int_range(0, 64), default=0, help="job slots run inside this process (0-64, default 0)"
    )
    worker = sub.add_parser("worker", help="run queued jobs (GitHub App)")
    worker.add_argument("--concurrency", type=int_range(1, 64), help="jobs at once (1-64, default REPROBOT_WORKERS)")
    from bot.cli.app import add_app_parser

    add_app_parser(sub)


def _json_error(reason: str, code: int) -> str:
    return json.dumps({"status": "error", "reasons": [reason], "exit_code": code})


@contextlib.contextmanager
def _json_stdout() -> Iterator[io.StringIO]:
    """Hold back what the command prints, so stdout can carry exactly one JSON document whatever happens.

    Python-level prints are collected; anything written straight to file descriptor 1 (a child process, a
    library) goes to stderr instead. The real stdout is restored on the way out.
    """
    sys.stdout.flush()
    real_stdout = os.dup(1)
    os.dup2(2, 1)
    held, saved = io.StringIO(), sys.stdout
    sys.stdout = held
    try:
        yield held
    finally:
        sys.stdout = saved
        os.dup2(real_stdout, 1)
        os.close(real_stdout)


def _run_json(command: Callable[[], int]) -> int:
    """Run `command` in --json mode: its one JSON document, or an error document, is all stdout gets."""
    try:
        with _json_stdout() as held:
            code = command()
    except KeyboardInterrupt:
        print(_json_error("interrupted", EXIT_INTERRUPTED))
        print("reprobot: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # broad on purpose: the promise is one JSON document even when a bug escapes
        traceback.print_exc(file=sys.stderr)
        print(_json_error(f"internal error: {type(exc).__name__}: {exc}", EXIT_ERROR))
        return EXIT_ERROR
    text = held.getvalue()
    if not text and code != EXIT_OK:
        # A handled error the command reported on stderr only (`env` does so): its exit code says which.
        return code
    try:
        json.loads(text)
    except json.JSONDecodeError:
        if text.strip():
            sys.stderr.write(text)
        print(_json_error(f"internal error: the command did not print one JSON document (exit {code})", EXIT_ERROR))
        return EXIT_ERROR
    sys.stdout.write(text)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `reprobot` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        sys.stderr.write(exc.usage)
        print(exc, file=sys.stderr)
        if "--json" in argv:
            print(_json_error(str(exc), EXIT_USAGE))
        return EXIT_USAGE
    # Read only once a command runs: `reprobot --help` need not load the settings table's parsers.
    from bot.settings.config import Settings, SettingsError

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR if args.quiet else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"reprobot: {exc}", file=sys.stderr)
        if getattr(args, "json", False):
            print(_json_error(str(exc), EXIT_USAGE))
        return EXIT_USAGE
    if getattr(args, "json", False):
        return _run_json(lambda: _dispatch(args, settings))
    try:
        return _dispatch(args, settings)
    except KeyboardInterrupt:
        print("reprobot: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # broad on purpose: an escaped bug is exit 8 (documented), not Python's exit 1
        traceback.print_exc(file=sys.stderr)
        print(f"reprobot: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
    """Run one parsed command."""
    import asyncio  # here, not at the top: `reprobot --help` starts no event loop

    if args.command in ("reproduce", "replay") and getattr(args, "game", None):
        from bot.cli.gamerepro import run_game_command

        return asyncio.run(run_game_command(args, settings))
    if args.command == "replay" or (args.command == "reproduce" and (args.app_url or args.repo is None)):
        from bot.cli.apprepro import run_apprepro_command

        return asyncio.run(run_apprepro_command(args, settings))
    if args.command in ("fix", "reproduce"):
        from bot.cli.job import run_job_command

        return asyncio.run(run_job_command(args, settings))
    if args.command == "eval":
        from bot.evaluate.run import run_eval_command

        return asyncio.run(run_eval_command(args, settings))
    if args.command == "doctor":
        return doctor(settings, as_json=args.json)
    if args.command in ("serve", "worker", "app"):
        from bot.cli.app import run_app_command

        return run_app_command(args, settings)
    if args.command == "env":
        from bot.cli.env import run_env_command

        return run_env_command(args, settings)
    if args.command == "runner":
        from bot.cli.runner import run_runner_command

        return run_runner_command(args, settings)
    if args.command == "sandbox":
        from bot.cli.env import run_sandbox_command

        return run_sandbox_command(args, settings)
    if args.command in ("crash", "mojira"):  # crash reports and the Mojira poller
        from bot.cli.mojira import run_crash_command, run_mojira_command

        return run_crash_command(args) if args.command == "crash" else run_mojira_command(args, settings)
    print(f"reprobot: unknown command {args.command}", file=sys.stderr)
    return EXIT_USAGE


def doctor(settings: Settings, as_json: bool = True) -> int:
    """Print what this machine offers the bot: the checks as a table, or everything as JSON."""
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
    import asyncio

    from bot.cli.checks import checks_json, exposure_warnings, render_table, run_checks, runner_facts, runner_warnings
    from bot.settings.config import unknown_variables, variables_in_use

    checks = asyncio.run(run_checks(settings))
    from bot.cli.app_checks import github_app_checks  # the App's key, webhook secret and id (offline without one)

    checks += asyncio.run(github_app_checks(settings))
    report["checks"] = checks_json(checks)
    # What this deployment set, as the settings table parsed it (secrets only as "(set)").
    report["settings"] = variables_in_use(settings)
    # A misspelt variable is otherwise ignored without a word: name each one the settings table does not know.
    unknown = [f"{name} is not a reprobot setting (see docs/configuration.md)" for name in unknown_variables()]
    report["runners"] = runner_facts(settings)
    report["warnings"] = unknown + doctor_warnings(settings) + exposure_warnings(settings) + runner_warnings(settings)
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        from rich.console import Console

        render_table(checks, report, Console(width=max(100, shutil.get_terminal_size().columns)))
    for warning in report["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    ok = report["sandbox_python_exists"] and all(c.status != "fail" for c in checks)
    return EXIT_OK if ok else EXIT_ENVIRONMENT


def doctor_warnings(settings: Settings) -> list[str]:
    """Settings that work but weaken the deployment, each with what to do about it."""
    warnings: list[str] = []
    # -- Jira (issue 15)
    from bot.settings.jira_mapping import JiraMapping, MappingError, load_mapping

    mapping = JiraMapping()
    if settings.jira_mapping is not None:
        try:
            mapping = load_mapping(settings.jira_mapping)
        except MappingError as exc:
            warnings.append(f"REPROBOT_JIRA_MAPPING: {exc}")
    if settings.jira_allow_unsigned:
        warnings.insert(0, _unsigned_warning(settings, [entry.site for entry in mapping.projects]))
    return warnings


def _unsigned_warning(settings: Settings, mapped: list[str]) -> str:
    """The doctor's warning for REPROBOT_JIRA_ALLOW_UNSIGNED=1, naming the sites unsigned deliveries speak for."""
    from handlers.jira_payload import sites_with_secrets, unsigned_sites

    open_sites = unsigned_sites(settings.jira_webhook_secrets, True, mapped)
    signing = sorted(sites_with_secrets(settings.jira_webhook_secrets))
    named = ", ".join(open_sites) if open_sites else "no mapped site"
    text = (
        f"REPROBOT_JIRA_ALLOW_UNSIGNED=1: sites that accept unsigned deliveries: {named} (and any unmapped site "
        "without a secret of its own, for which nothing is planned); anyone who can reach /webhooks/jira can "
        "speak for them"
    )
    if signing:
        text += f"; always checked (a secret of their own): {', '.join(signing)}"
    return text + "; create each site's webhook with a secret and list it in REPROBOT_JIRA_WEBHOOK_SECRET instead"
