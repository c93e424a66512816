"""A checkout with its environment and baseline, in real sandboxes: what reviewers and the assessment run in."""

from __future__ import annotations

from pathlib import Path

from bot.settings.config import Settings
from patch_selectors.reviewers import ReviewEnv
from sandboxes.base import Limits, SandboxSpec
from sandboxes.environment import Baseline, TestRun, TestSuite, build_environment, detect_python_spec
from sandboxes.factory import make_sandbox
from tests.conftest import make_git_repo


def case_checkout(case: Path, dest: Path) -> Path:
    """A bench case's `repo/` as a fresh git checkout at `dest`."""
    files = {str(p.relative_to(case / "repo")): p.read_text() for p in (case / "repo").rglob("*") if p.is_file()}
    return make_git_repo(dest, files)


async def sandboxed_review_env(base: Path, scratch: Path, settings: Settings) -> tuple[ReviewEnv, TestRun]:
    """The environment of `base`, a baseline run of its suite, and the ReviewEnv built on them."""
    env = await build_environment(detect_python_spec(base), settings.cache_dir, python=settings.sandbox_python)
    runner = TestSuite(env, timeout=120)

    def open_sandbox(workspace: Path):  # type: ignore[no-untyped-def]
        spec = SandboxSpec(workspace=workspace, mounts=(env.mount,), limits=Limits(wall_seconds=120))
        return make_sandbox(settings.sandbox, spec)

    async with open_sandbox(base) as sb:
        run = await runner.run(sb, [])
    return ReviewEnv(base, scratch, runner, Baseline(tests=run.tests), open_sandbox), run
