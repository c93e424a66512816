"""`reprobot env detect|test` and `reprobot sandbox build-base`: the environment layer from the command line."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.types import absolute_path, float_range

if TYPE_CHECKING:
    from bot.settings.config import Settings

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BAD_REPO = 4
EXIT_ENVIRONMENT = 7
DIRECT_REFERENCES_HELP = (
    "accept URL, path and VCS requirements (policy environment.allow_direct_references): "
    "they are fetched as files and built only in the sandbox"
)


def add_parsers(sub: Any) -> None:
    """Register the `env` and `sandbox` subcommands on the top-level subparsers."""
    env = sub.add_parser("env", help="find how to install and test a repo, and run its tests in a sandbox")
    env_sub = env.add_subparsers(dest="env_command", required=True)
    detect = env_sub.add_parser("detect", help="print the EnvironmentSpec found for a repo")
    detect.add_argument("--repo", required=True, type=absolute_path)
    detect.add_argument("--setup", action="append", help="policy environment.setup step (repeatable)")
    detect.add_argument("--test", help="policy environment.test command")
    detect.add_argument("--json", action="store_true", help="print the spec as one JSON document")
    detect.add_argument(
        "--sandbox",
        choices=["bwrap", "docker", "none"],
        default="bwrap",
        help="where the setup agent runs its commands (only used when a model is configured)",
    )
    test = env_sub.add_parser("test", help="build the environment and run the whole suite in a sandbox")
    test.add_argument("--repo", required=True, type=absolute_path)
    test.add_argument("--sandbox", choices=["bwrap", "docker", "none"], default="bwrap")
    test.add_argument("--setup", action="append", help="policy environment.setup step (repeatable)")
    test.add_argument("--test", help="policy environment.test command")
    test.add_argument(
        "--timeout", type=float_range(1, 86400), default=1800.0, help="wall seconds for the suite (1-86400)"
    )
    test.add_argument(
        "--memory-gb", type=float_range(0.125, 1024), default=4.0, help="memory limit of the sandbox (0.125-1024)"
    )
    test.add_argument("--allow-direct-references", action="store_true", help=DIRECT_REFERENCES_HELP)
    test.add_argument("--json", action="store_true", help="print the result as one JSON document")

    sandbox = sub.add_parser("sandbox", help="sandbox maintenance")
    sb_sub = sandbox.add_subparsers(dest="sandbox_command", required=True)
    base = sb_sub.add_parser("build-base", help="debootstrap the root filesystem and import the Docker base image")
    base.add_argument("--no-image", action="store_true", help="only the root filesystem (bwrap), no Docker")
    base.add_argument("--json", action="store_true")
    prune = sb_sub.add_parser(
        "prune-cache",
        help="remove unused environments and baselines past REPROBOT_CACHE_MAX_DAYS and REPROBOT_CACHE_MAX_SIZE",
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would go, remove nothing")
    prune.add_argument("--json", action="store_true")


def _fail(args: argparse.Namespace, code: int, message: str) -> int:
    """Report a handled error on stderr and, with --json, as the one JSON document on stdout; return `code`."""
    print(f"reprobot: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"status": "error", "reasons": [message], "exit_code": code}))
    return code


def run_env_command(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch `reprobot env ...`."""
    repo: Path = args.repo.resolve()
    if not repo.is_dir():
        return _fail(args, EXIT_BAD_REPO, f"{repo} is not a directory")
    if args.env_command == "detect":
        return _detect(repo, args, settings)
    import asyncio  # here, not at the top: the parser (and `reprobot --help`) needs no event loop

    return asyncio.run(_test(repo, args, settings))


def _detect(repo: Path, args: argparse.Namespace, settings: Settings) -> int:
    from sandboxes.envspec import detect_spec
    from sandboxes.interpreters import available_interpreters

    try:
        spec = detect_spec(
            repo,
            setup=args.setup,
            test=args.test,
            interpreters=available_interpreters(Path("/"), settings.rootfs),
            default_python=settings.sandbox_python,
        )
    except ValueError as exc:
        if not settings.llm_configured:
            return _fail(args, EXIT_ENVIRONMENT, str(exc))
        import asyncio

        found = asyncio.run(_discover(repo, args.sandbox, settings))
        if isinstance(found, str):
            return _fail(args, EXIT_ENVIRONMENT, f"{exc}; the setup agent failed too: {found}")
        spec = found
    if args.json:
        print(json.dumps(spec.to_json(), indent=2))
    else:
        print(f"language:     {spec.language}")
        print(f"sources:      {', '.join(spec.sources)}")
        print(f"test command: {' '.join(spec.test_command)}")
        print(f"report:       {spec.report_format}")
        print(f"deps:         {len(spec.deps)}  install steps: {len(spec.install_steps)}")
        if spec.python_version:
            print(f"python:       {spec.python_version} ({spec.python_reason})")
        for note in spec.notes:
            print(f"note:         {note}")
    return EXIT_OK


async def _discover(repo: Path, backend: str, settings: Settings) -> Any:
    """Run the setup agent on a scratch clone (the checkout is never written to); the spec or why it failed."""
    from bot.llm import LLMError
    from bot.pipeline.setup_model import setup_agent_for
    from sandboxes.envspec import ci_test_commands
    from sandboxes.setup_agent import SetupBudget, SetupFailed
    from sandboxes.workspace import GitError, clone_workspace

    agent = setup_agent_for(settings, backend)
    if agent is None:
        return "no model configured"
    scratch = Path(tempfile.mkdtemp(prefix="reprobot-envdetect-", dir=_tmp_root(settings)))
    try:
        workspace = await clone_workspace(repo, scratch / "ws")
        return await agent.discover(
            workspace, None, budget=SetupBudget(), ci_commands=tuple(ci_test_commands(workspace))
        )
    except (GitError, SetupFailed, LLMError) as exc:
        return str(exc)
    finally:
        await _remove(scratch)


async def _test(repo: Path, args: argparse.Namespace, settings: Settings) -> int:
    from bot.pipeline.setup_model import setup_agent_for
    from sandboxes.base import Limits, SandboxSpec
    from sandboxes.environment import EnvironmentError_, diagnose_baseline, prepare_environment, run_baseline
    from sandboxes.factory import SandboxUnavailable, make_sandbox
    from sandboxes.results import summarize
    from sandboxes.workspace import GitError, clone_workspace

    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="reprobot-envtest-", dir=_tmp_root(settings)))
    try:
        try:
            workspace = await clone_workspace(repo, scratch / "ws")
        except GitError as exc:
            return _fail(args, EXIT_BAD_REPO, f"{repo} is not a usable git repository: {exc}")
        try:
            env = await prepare_environment(
                workspace,
                settings.cache_dir,
                python=settings.sandbox_python,
                index_url=settings.pip_index_url,
                setup=args.setup,
                test=args.test,
                agent=setup_agent_for(settings, args.sandbox),
                sandbox=args.sandbox,
                rootfs=settings.rootfs,
                allow_direct_references=args.allow_direct_references,
            )
        except EnvironmentError_ as exc:
            return _fail(args, EXIT_ENVIRONMENT, f"environment: {exc}")
        limits = Limits(
            wall_seconds=args.timeout,
            memory_bytes=int(args.memory_gb * 1024**3),
            max_processes=1024,
            disk_bytes=settings.sandbox_disk_quota,
        )
        spec = SandboxSpec(workspace=workspace, mounts=env.mounts, limits=limits, rootfs=settings.rootfs)
        try:
            async with make_sandbox(args.sandbox, spec) as sb:
                baseline, run = await run_baseline(sb, env, timeout=args.timeout)
        except SandboxUnavailable as exc:
            return _fail(args, EXIT_ENVIRONMENT, str(exc))
    finally:
        await _remove(scratch)
    counts = summarize(baseline.tests)
    report = {
        "passed": counts["passed"],
        "failed": counts["failed"],
        "skipped": counts["skipped"],
        "errors": counts["error"],
        "seconds": round(time.monotonic() - started, 2),
        "build_seconds": round(env.seconds, 2),
        "cache_hit": env.cache_hit,
        "sandbox": args.sandbox,
        "language": env.spec.language,
        "python": env.spec.python_version or None,
        "timed_out": run.result.timed_out,
        "tests": baseline.tests,
    }
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"{report['passed']} passed, {report['failed']} failed, {report['skipped']} skipped, "
            f"{report['errors']} errors in {report['seconds']}s ({args.sandbox})"
        )
    problem = diagnose_baseline(run, env.spec) if env.spec.report_format == "junit-xml" else None
    if problem is not None or not baseline.tests:
        print(f"reprobot: environment: {problem or 'no test results'}", file=sys.stderr)
        print(f"output tail:\n{run.result.output[-2000:]}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    return EXIT_OK


def _tmp_root(settings: Settings) -> Path:
    root = settings.data_dir / "work"
    root.mkdir(parents=True, exist_ok=True)
    return root


def run_sandbox_command(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch `reprobot sandbox ...`."""
    if args.sandbox_command == "prune-cache":
        return _prune_cache(args, settings)
    from sandboxes.baseimage import BaseImageError, build_base

    started = time.monotonic()
    try:
        built = build_base(settings.cache_dir, with_image=not args.no_image)
    except BaseImageError as exc:
        return _fail(args, EXIT_ENVIRONMENT, str(exc))
    except Exception as exc:  # docker.errors.DockerException without importing docker here
        if type(exc).__module__.startswith("docker"):
            return _fail(args, EXIT_ENVIRONMENT, f"Docker engine: {exc}")
        raise
    report = {
        "rootfs": str(built.rootfs),
        "rootfs_cached": built.rootfs_cached,
        "image": built.image,
        "image_cached": built.image_cached,
        "seconds": round(time.monotonic() - started, 2),
    }
    print(json.dumps(report, indent=None if args.json else 2))
    return EXIT_OK


def _prune_cache(args: argparse.Namespace, settings: Settings) -> int:
    """`reprobot sandbox prune-cache`: what the workers' hourly prune does, now (an entry used today stays)."""
    from sandboxes.cache_prune import prune

    try:
        report = prune(
            settings.cache_dir,
            max_bytes=settings.cache_max_size,
            max_days=settings.cache_max_days,
            dry_run=args.dry_run,
        )
    except OSError as exc:
        return _fail(args, EXIT_ENVIRONMENT, f"cannot prune {settings.cache_dir}: {exc}")
    removed = [{"kind": e.kind, "path": str(e.path), "bytes": e.size} for e in report.removed]
    if args.json:
        doc = {"dry_run": args.dry_run, "removed": removed, "freed_bytes": report.freed_bytes}
        print(json.dumps(doc | {"kept_bytes": report.kept_bytes, "busy": report.skipped_busy}))
        return EXIT_OK
    verb = "would remove" if args.dry_run else "removed"
    for entry in report.removed:
        print(f"{verb} {entry.kind} {entry.path} ({entry.size / 2**20:.1f} MB)")
    print(
        f"{verb} {len(removed)} entries, {report.freed_bytes / 2**20:.1f} MB; "
        f"{report.kept_bytes / 2**20:.1f} MB kept in {settings.cache_dir}"
        + (f"; {report.skipped_busy} in use, left" if report.skipped_busy else "")
    )
    return EXIT_OK


async def _remove(folder: Path) -> None:
    """Remove a scratch folder on a thread (a clone can take seconds to delete)."""
    import asyncio

    await asyncio.to_thread(shutil.rmtree, folder, True)
