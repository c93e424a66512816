"""`reprobot reproduce --game minetest` and `reprobot replay --game minetest`: game reproduction in local mode.

The repository (a Minetest mod, modpack or game, as maintainers keep them) is loaded into a fresh world with
minetest_game; the real server and client run here, together in a bwrap sandbox with loopback only (the client
draws on an Xvfb of the host). The macro log, screenshots, crash report and log land in the output folder.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.apprepro import model_call, print_result, stop
from bot.pipeline.exits import EXIT_ERROR, EXIT_USAGE

if TYPE_CHECKING:
    from agents.game import GameReproResult
    from bot.settings.config import Settings

GAMES = ("minetest", "minecraft")


def add_game_args(rep: argparse.ArgumentParser, replay: argparse.ArgumentParser) -> None:
    """`--game` on `reproduce` and on `replay` (with --repo there too: the mod the macro log ran against)."""
    help_game = "reproduce in a game (minetest: the real server and client; --repo is the mod, modpack or game)"
    rep.add_argument("--game", choices=GAMES, help=help_game)
    rep.add_argument("--iterations", type=int, default=2, help="plan attempts of a game reproduction (2)")
    replay.add_argument("--game", choices=GAMES, help="replay a game macro log (needs --repo)")
    replay.add_argument("--repo", type=Path, help="with --game: the mod, modpack or game the log ran against")


def _driver(game: str, repo: Path | None, settings: Settings) -> Any:
    if game == "minecraft":
        from bot.selfhosted.minecraft import MinecraftDriver

        return MinecraftDriver.from_settings(settings)
    from agents.game import MinetestDriver

    # The game is repo code: it runs in bwrap, like all repo code; without isolation only when asked for by name.
    sandbox = "none" if settings.sandbox == "none" else "bwrap"
    return MinetestDriver(repo, display=settings.game_display, sandbox=sandbox)


def _print(args: argparse.Namespace, result: GameReproResult, out: Path) -> int:
    headline = f"status: {result.status} ({result.iterations} iteration(s), {result.seconds:.1f}s)"
    steps = [f"{step['action']} {step['target'] or step['input']!r}" for step in result.steps]
    return print_result(args, result, out, headline, steps)


async def run_game_command(args: argparse.Namespace, settings: Settings) -> int:
    """`reproduce --game` or `replay --game`."""
    # Imported here, not with the parser: `reprobot --help` loads no agent.
    from agents.game import GameDriverError, replay_game, reproduce_game
    from bot.forges.local import ForgeError, read_issue_file

    out: Path = getattr(args, "out", None) or settings.data_dir / "game-runs" / (
        f"{args.command}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    repo = Path(args.repo).resolve() if args.repo else None
    if args.game == "minetest" and (repo is None or not repo.is_dir()):
        usage = f"reprobot {args.command}: error: --game minetest needs --repo, a mod, modpack or game folder"
        return stop(args, usage, EXIT_USAGE)
    driver = _driver(args.game, repo, settings)
    try:
        if hasattr(driver, "check"):
            driver.check()
    except GameDriverError as exc:
        return stop(args, str(exc), EXIT_ERROR, shown=f"reprobot: {exc}")
    label = str(repo or ".")
    if args.command == "replay":
        result = await replay_game(args.actions, driver, out_dir=out, repo_label=label)
        return _print(args, result, out)
    try:
        issue = read_issue_file(args.issue)
    except ForgeError as exc:
        return stop(args, str(exc), exc.code, shown=f"reprobot: {exc}")
    signature = None
    if args.game == "minecraft":
        from bot.selfhosted.minecraft import report_signature

        signature = report_signature
    result = await reproduce_game(
        issue.text,
        driver,
        out_dir=out,
        repo_label=label,
        max_iterations=args.iterations,
        budget_seconds=args.budget,
        signature_of=signature,
        model=model_call(settings, purpose="s2r", fallback="the rules extract the steps"),
        action_model=model_call(
            settings, purpose="game_actions", fallback="the loop goes on without its actions", whole_reply=True
        ),
        model_turns=settings.game_model_turns,
        context_turns=settings.game_context_turns,
        model_images=settings.game_model_images,
    )
    return _print(args, result, out)
