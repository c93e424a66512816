"""The child process that runs one runner job: `python -m bot.selfhosted.execute JOB_JSON OUT_DIR`.

It looks up the job's kind in EXECUTORS, runs it with OUT_DIR for its files (action log, screenshots), and
writes the result to OUT_DIR/result.json. Its stdout and stderr are the job's log. The runner starts it in its
own process group with a scrubbed environment, so cancellation can stop it and everything it started.
"""

from __future__ import annotations

import asyncio
import json
import platform
import shutil
import socket
import sys
import time
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from bot.settings.config import Settings

__all__ = ["CACHE_ENV", "EXECUTORS", "cache_dir", "main"]

Executor = Callable[[dict[str, Any], Path], Coroutine[Any, Any, dict[str, Any]]]

#: The variable a runner hands its job's child the cache folder in (kept across its jobs; unset: no cache).
#: The child reads it through the settings table, like every REPROBOT_* variable (Settings.runner_cache).
CACHE_ENV = "REPROBOT_RUNNER_CACHE"


def cache_dir(name: str) -> Path | None:
    """The runner's cache folder for `name` (e.g. `utg`), or None when this child was started without one."""
    # The child's environment is the runner's scrubbed one: no other REPROBOT_* variable can fail the parse.
    root = Settings.from_env().runner_cache
    return root / name if root else None


async def reproduce_app(job: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """`reproduce.app`: the app reproduction agent on this machine (agents.app.reproduce)."""
    # Imported here: the agent (and Playwright) load only on runners that take app jobs.
    from agents.app import replay_command
    from agents.app import reproduce_app as run_agent

    task = job.get("task") or {}
    if not task.get("issue_text") or not task.get("app_url"):
        raise ValueError("a reproduce.app job needs task.issue_text and task.app_url")
    result = await run_agent(
        str(task["issue_text"]),
        str(task["app_url"]),
        out_dir=out_dir,
        driver=str(task.get("driver") or "web"),
        budget_seconds=float(task.get("budget_seconds") or 300.0),
        # The UI graph explored on one job serves the next job on the same app version on this runner.
        cache_dir=cache_dir("utg"),
    )
    document: dict[str, Any] = result.to_json()
    actions = out_dir / "actions.json"
    if not actions.exists():  # the replayable action log is always an artifact
        actions.write_text(json.dumps(document.get("actions", []), indent=2))
    # Readers replay from the uploaded artifact, not from this runner's folder.
    document["replay"] = replay_command(str(task["app_url"]), Path("actions.json"), str(task.get("driver") or "web"))
    return document


async def reproduce_game(job: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """`reproduce.game`: the game reproduction agent in a real game on this machine (agents.game).

    The task carries the report and the repo (a Minetest mod or game) packed by the bot; it is unpacked beside
    the job's output folder and loaded into a fresh world.
    """
    import base64
    import io
    import tarfile

    from agents.game import replay_command
    from agents.game import reproduce_game as run_agent

    task = job.get("task") or {}
    if not task.get("issue_text") or task.get("game") not in ("minetest", "minecraft"):
        raise ValueError("a reproduce.game job needs task.issue_text and task.game (minetest or minecraft)")
    if task["game"] == "minecraft":  # a maintainer's machine: the game runs there already
        from bot.selfhosted.minecraft import MinecraftDriver, report_signature
        from bot.settings.config import Settings

        driver = MinecraftDriver.from_settings(Settings.from_env())
        driver.check()
        mc = await run_agent(str(task["issue_text"]), driver, out_dir=out_dir, signature_of=report_signature)
        return mc.to_json()
    if not task.get("repo_archive"):
        raise ValueError("a minetest reproduce.game job needs task.repo_archive (the mod or game)")
    from agents.game import MinetestDriver

    name = "".join(c for c in str(task.get("repo_name") or "repo") if c.isalnum() or c in "_-") or "repo"
    repo = out_dir.parent / f"{out_dir.name}-repo" / name
    repo.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(str(task["repo_archive"]))), mode="r:gz") as tar:
        tar.extractall(repo, filter="data")  # "data": no absolute paths, links out or device files
    result = await run_agent(
        str(task["issue_text"]),
        MinetestDriver(repo),
        out_dir=out_dir,
        repo_label=name,
        budget_seconds=float(task.get("budget_seconds") or 300.0),
    )
    document: dict[str, Any] = result.to_json()
    # Readers replay from the uploaded artifact and their own checkout of the repo.
    document["replay"] = replay_command("minetest", name, Path("actions.json"))
    return document


async def probe(job: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """`runner.probe`: a diagnostic job that reports what this runner offers, after an optional wait.

    An operator queues one to check a runner end to end: claim, log, renew over a long job, artifact, finish.
    """
    task = job.get("task") or {}
    seconds = float(task.get("seconds") or 0.0)
    started = time.monotonic()
    print(f"probe: job {job.get('id')} attempt {job.get('attempt')} on {socket.gethostname()}", flush=True)
    tick = 0
    while (left := seconds - (time.monotonic() - started)) > 0:
        await asyncio.sleep(min(left, 0.25))
        tick += 1
        if tick % 4 == 0:
            print(f"probe: {time.monotonic() - started:.1f}s of {seconds:g}s", flush=True)
    offers = {
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "chromium": shutil.which("chromium"),
        "adb": shutil.which("adb"),
    }
    (out_dir / "probe.json").write_text(json.dumps(offers, indent=2))
    print("probe: done", flush=True)
    return {"status": "ok", "seconds": round(time.monotonic() - started, 3), **offers}


#: Job kinds this runner can run in-process, by kind (`reprobot runner --exec KIND=COMMAND` adds others).
EXECUTORS: dict[str, Executor] = {
    "reproduce.app": reproduce_app,
    "reproduce.game": reproduce_game,
    "runner.probe": probe,
}


def main(argv: list[str] | None = None) -> int:
    """Run one job; exit 0 with OUT_DIR/result.json written, 3 for an unknown kind, 1 when the executor failed."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m bot.selfhosted.execute JOB_JSON OUT_DIR", file=sys.stderr)
        return 2
    job = json.loads(Path(args[0]).read_text())
    out_dir = Path(args[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    executor = EXECUTORS.get(str(job.get("kind")))
    if executor is None:
        print(f"this runner has no executor for job kind {job.get('kind')!r}", file=sys.stderr)
        return 3
    try:
        result = asyncio.run(executor(job, out_dir))
    except Exception as exc:  # the job's failure, reported through the exit code and the log
        traceback.print_exc()
        print(f"executor for {job.get('kind')} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    (out_dir / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
