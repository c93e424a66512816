"""`reprobot crash parse FILE` and `reprobot mojira poll`: crash reports and the Mojira poller from the shell."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.settings.config import Settings


EXIT_OK = 0
EXIT_USAGE = 2
EXIT_BAD_INPUT = 3
EXIT_ERROR = 8


def add_parsers(sub: Any) -> None:
    """Register the `crash` and `mojira` subcommands on the top-level subparsers."""
    crash = sub.add_parser("crash", help="Minecraft crash reports and JVM fatal-error logs")
    crash_sub = crash.add_subparsers(dest="crash_command", required=True)
    parse = crash_sub.add_parser("parse", help="print what a crash report or hs_err log says")
    parse.add_argument("file", type=Path, help="a crash-*.txt, hs_err_pid*.log, or text with one pasted in")
    parse.add_argument("--json", action="store_true", help="print one JSON document (mc-crash-lib field names)")

    group = crash_sub.add_parser("group", help="group files (crash reports, issue texts) by crash signature")
    group.add_argument("files", type=Path, nargs="+", help="files holding crash reports (pasted or whole)")
    group.add_argument("--json", action="store_true", help="print the groups as one JSON document")

    mojira = sub.add_parser("mojira", help="the Mojira (bugs.mojang.com) poller")
    mojira_sub = mojira.add_subparsers(dest="mojira_command", required=True)
    poll = mojira_sub.add_parser("poll", help="fetch what changed since the last poll and hand it to the sink")
    poll.add_argument("--jql", help="JQL of the reports to follow (default REPROBOT_MOJIRA_JQL)")
    poll.add_argument("--once", action="store_true", help="poll once and exit (default: every interval)")
    poll.add_argument("--json", action="store_true", help="with --once: print the poll's result as one JSON document")


def run_crash_command(args: argparse.Namespace) -> int:
    """`reprobot crash parse FILE [--json]` and `reprobot crash group FILE... [--json]`."""
    if args.crash_command == "group":
        return _group(args.files, args.json)
    return _parse(args)


def _group(files: list[Path], as_json: bool) -> int:
    """Every crash in the files, grouped by signature: a group of two or more is likely one bug."""
    from agents.reading import crash_signature, find_crashes

    groups: dict[str, dict[str, Any]] = {}
    unreadable: list[str] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            unreadable.append(f"{path}: {exc.strerror}")
            continue
        for crash in find_crashes(text):
            sig = crash_signature(crash)
            entry = groups.setdefault(sig.key, sig.to_json() | {"files": []})
            if str(path) not in entry["files"]:
                entry["files"].append(str(path))
    for problem in unreadable:
        print(f"reprobot: cannot read {problem}", file=sys.stderr)
    ordered = sorted(groups.values(), key=lambda g: (-len(g["files"]), g["key"]))
    if as_json:
        print(json.dumps({"groups": ordered, "unreadable": unreadable}, indent=2))
    else:
        for g in ordered:
            mark = "likely duplicates" if len(g["files"]) > 1 else "alone"
            print(f"{g['key']} {g['exception_type']} ({mark}): {', '.join(g['files'])}")
            for frame in g["frames"]:
                print(f"    at {frame}")
    return EXIT_BAD_INPUT if unreadable else EXIT_OK


def _parse(args: argparse.Namespace) -> int:
    from agents.reading import crash_signature, find_crashes, parse_crash

    try:
        text = args.file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        print(f"reprobot: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    crash = parse_crash(text)
    if crash is None:
        found = find_crashes(text)
        crash = found[0] if found else None
    if crash is None:
        print(f"reprobot: {args.file}: no Minecraft crash report or JVM fatal-error log found", file=sys.stderr)
        if args.json:
            print(json.dumps({"status": "error", "reasons": ["no crash report found"], "exit_code": EXIT_BAD_INPUT}))
        return EXIT_BAD_INPUT
    data = crash.to_json() | {"signature": crash_signature(crash).to_json()}
    if args.json:
        print(json.dumps(data, indent=2))
        return EXIT_OK
    for key, value in data.items():
        if isinstance(value, str) and "\n" in value:
            print(f"{key}:")
            for line in value.split("\n"):
                print(f"    {line}")
        elif isinstance(value, list | dict):
            print(f"{key}: {json.dumps(value)}")
        else:
            print(f"{key}: {value}")
    return EXIT_OK


def run_mojira_command(args: argparse.Namespace, settings: Settings) -> int:
    """`reprobot mojira poll [--jql ...] [--once]`."""
    from bot.mojira.poller import run_poll_command

    if args.json and not args.once:
        print("reprobot: mojira poll --json needs --once (a running poller prints one line per poll)", file=sys.stderr)
        if args.json:
            print(json.dumps({"status": "error", "reasons": ["--json needs --once"], "exit_code": EXIT_USAGE}))
        return EXIT_USAGE

    import asyncio  # here: the parser (and `reprobot --help`) needs no event loop

    return asyncio.run(run_poll_command(settings, jql=args.jql, once=args.once, as_json=args.json))
