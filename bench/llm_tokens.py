"""Benchmark: prompt tokens sent at each step of a 25-step scripted repair trajectory (windowed vs full history).

Tokens are counted with a documented approximation, not a real tokenizer: ceil(len(request JSON) / 4), OpenAI's
rule of thumb for English text and code (tiktoken installs from PyPI but downloads its encodings at first use, which
this offline machine cannot do). Both histories are measured side by side in one run on the same observations, which
come from a real bwrap sandbox running the bench case's tests.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.reading import parse_issue
from agents.repair.llm import AgentConfig, RepairAgent, Toolbox
from agents.trajectory import LimitsExceeded, Submitted, Trajectory
from bot.evaluate.run import _git_repo_from
from bot.llm import Ledger, client_from_settings
from bot.pipeline.types import sandbox_spec
from bot.settings.config import Settings
from sandboxes.environment import TestSuite, build_environment, detect_python_spec
from sandboxes.factory import available_backends, make_sandbox
from tests.fakes.llm_server import ScriptedLLM, load_script

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT.parent / "shared" / "bench" / "quixbugs" / "levenshtein"
SCRIPT = "long_levenshtein"
STEPS = 25
TARGET = 20_000


async def _trajectory(tmp: Path, settings: Settings, keep_full: int) -> list[int]:
    """Run the script once; prompt tokens of each request, as the server's usage reports them."""
    repo = _git_repo_from(CASE / "repo", tmp / f"repo-{keep_full}")
    env = await build_environment(detect_python_spec(repo), settings.cache_dir, python=settings.sandbox_python)
    backend = "bwrap" if available_backends().get("bwrap") is None else "none"
    issue = (CASE / "issue.md").read_text()
    async with ScriptedLLM(load_script(SCRIPT)) as srv:
        s = Settings(data_dir=settings.data_dir, llm_base_url=srv.base_url, llm_model="scripted", llm_api_key="x")
        ledger = Ledger()
        model = client_from_settings(s, ledger)
        traj = Trajectory(id=f"bench-{keep_full}", agent="llm", seed=0)
        ended = "no end"
        async with make_sandbox(backend, sandbox_spec(repo, env, s, 120.0)) as sb:
            tools = Toolbox(sb, TestSuite(env, timeout=120.0), traj, parse_issue(issue))
            agent = RepairAgent(model, tools, traj, issue, AgentConfig(max_steps=STEPS, keep_full=keep_full))
            try:
                await agent.run()
            except Submitted:
                ended = "finished"
            except LimitsExceeded as exc:
                ended = f"stopped: {exc}"
    print(f"llm_tokens: keep_full={keep_full}: {len(ledger.calls)} steps, {ended}, sandbox {backend}")
    return [c.prompt_tokens for c in ledger.calls]


def _growth_ratio(tokens: list[int]) -> float:
    """(t[end] - t[mid]) / (t[mid] - t[0]) over equal step spans: ~1 for linear growth, ~3 for quadratic."""
    mid = len(tokens) // 2
    first, second = tokens[mid] - tokens[0], tokens[2 * mid] - tokens[mid]
    return second / first if first else float("inf")


def main() -> None:
    """Print prompt tokens per step, windowed history (what the agent sends) beside full history."""
    if not CASE.exists():
        print(f"llm_tokens: skipped, {CASE} is absent")
        return
    base = Settings.from_env()
    with tempfile.TemporaryDirectory(prefix="reprobot-llm-tokens-") as tmp:
        settings = Settings(data_dir=Path(tmp), sandbox_python=base.sandbox_python)
        (Path(tmp) / "cache").symlink_to(base.cache_dir.resolve(), target_is_directory=True)
        base.cache_dir.mkdir(parents=True, exist_ok=True)
        windowed = asyncio.run(_trajectory(Path(tmp), settings, keep_full=4))
        full = asyncio.run(_trajectory(Path(tmp), settings, keep_full=10**6))
    print("llm_tokens: prompt tokens per step, 25-step scripted trajectory (approx. 4 chars/token)")
    print(f"{'step':>4} {'windowed':>9} {'full':>7}")
    for i, (w, f) in enumerate(zip(windowed, full, strict=False), 1):
        print(f"{i:4d} {w:9,d} {f:7,d}")
    last = windowed[-1]
    verdict = "OK" if last <= TARGET and len(windowed) == STEPS else "OVER TARGET"
    print(f"llm_tokens: step {len(windowed)} prompt = {last:,} tokens (target <= {TARGET:,}): {verdict}")
    print(
        f"llm_tokens: growth ratio second half / first half = {_growth_ratio(windowed):.2f} windowed, "
        f"{_growth_ratio(full):.2f} full history (1.0 = linear, 3.0 = quadratic)"
    )
    print(f"llm_tokens: full-history / windowed prompt at the last step = {full[-1] / last:.2f}x")
    print(f"llm_tokens: total prompt tokens over the trajectory = {sum(windowed):,} windowed, {sum(full):,} full")


if __name__ == "__main__":
    main()
