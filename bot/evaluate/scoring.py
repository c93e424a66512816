"""Oracle scoring for `reprobot eval`: is a patch's fix plausible, is its BRT plausible? Reads oracle/ only here."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bot.settings.config import Settings
from patch_selectors.records import make_record
from sandboxes.base import Limits, SandboxSpec, host_cpu_count
from sandboxes.environment import (
    BuiltEnvironment,
    TestRun,
    TestSuite,
    build_environment,
    detect_python_spec,
    with_extra_deps,
)
from sandboxes.factory import make_sandbox
from sandboxes.workspace import GitError, apply_patch, copy_workspace


@dataclass(frozen=True)
class PatchScore:
    """A generated patch judged against the oracle."""

    has_test: bool
    plausible_fix: bool
    plausible_brt: bool
    candidate_brt: bool
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """Fields as a dict."""
        return asdict(self)


class OracleScorer:
    """Applies parts of a patch and the oracle's fix/BRT to fresh copies of the buggy repo and runs tests.

    Every run has its own copy of the repo and its own sandbox, so runs are independent: they go up to
    `parallel` at a time (default: one per core), within a patch and across patches.
    """

    def __init__(
        self,
        repo: Path,
        oracle: Path,
        meta: dict[str, Any],
        settings: Settings,
        sandbox: str,
        workdir: Path,
        *,
        parallel: int | None = None,
    ) -> None:
        self.repo = repo
        self.oracle_fix = (oracle / "fix.diff").read_text()
        self.oracle_brt = (oracle / "test_brt.py").read_text()
        self.brt_path = str(meta.get("brt_path", "tests/test_brt.py"))
        #: The case's own requirements, installed for the oracle's runs as for the job's.
        self.deps = tuple(str(d) for d in meta.get("deps", ()) or ())
        self.settings = settings
        self.sandbox = sandbox
        self.workdir = workdir
        self._env: BuiltEnvironment | None = None
        self._env_lock = asyncio.Lock()
        self._slots = asyncio.Semaphore(max(1, parallel or host_cpu_count()))
        #: One scoring per distinct patch, shared by concurrent callers of the same patch.
        self._memo: dict[str, asyncio.Task[PatchScore]] = {}

    async def _environment(self) -> BuiltEnvironment:
        async with self._env_lock:
            if self._env is None:
                self._env = await build_environment(
                    with_extra_deps(detect_python_spec(self.repo), self.deps),
                    self.settings.cache_dir,
                    python=self.settings.sandbox_python,
                    index_url=self.settings.pip_index_url,
                    sandbox=self.sandbox,
                    rootfs=self.settings.rootfs,
                )
            return self._env

    async def _run(self, patches: list[str], tests: list[str], *, oracle_brt: bool = False) -> TestRun | None:
        env = await self._environment()
        async with self._slots:
            return await self._run_one(env, patches, tests, oracle_brt=oracle_brt)

    async def _run_one(
        self, env: BuiltEnvironment, patches: list[str], tests: list[str], *, oracle_brt: bool
    ) -> TestRun | None:
        ws = await copy_workspace(self.repo, self.workdir / uuid.uuid4().hex[:10])
        try:
            for diff in patches:
                await apply_patch(ws, diff)
        except GitError:
            return None
        if oracle_brt:
            target = ws / self.brt_path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self.oracle_brt)
        spec = SandboxSpec(
            workspace=ws,
            mounts=env.mounts,
            limits=Limits(wall_seconds=300, disk_bytes=self.settings.sandbox_disk_quota),
            # One command per sandbox: starting an exec agent would cost more than it saves.
            session="cold",
        )
        async with make_sandbox(self.sandbox, spec) as sb:
            return await TestSuite(env, timeout=300).run(sb, tests)

    async def score(self, diff: str) -> PatchScore:
        """Score one patch; identical patches are scored once, even when asked for at the same time."""
        key = hashlib.sha256(diff.encode()).hexdigest()
        task = self._memo.get(key)
        if task is None:
            task = self._memo[key] = asyncio.ensure_future(self._score(diff))
        return await asyncio.shield(task)

    async def score_all(self, diffs: list[str]) -> list[PatchScore]:
        """Score several patches at once, in their order."""
        return list(await asyncio.gather(*(self.score(d) for d in diffs)))

    async def _score(self, diff: str) -> PatchScore:
        record = make_record("scored", diff)
        fix, test = record.fix_part.render(), record.test_part.render()
        test_files = [f.path for f in record.test_part.files if f.path.endswith(".py")]
        has_brt = record.has_test and bool(test_files)
        fixed, before, with_oracle, with_own = await asyncio.gather(
            self._run([fix], [], oracle_brt=True),
            self._maybe(has_brt, [test], test_files),
            self._maybe(has_brt, [self.oracle_fix, test], test_files),
            self._maybe(has_brt, [diff], test_files),
        )
        plausible_fix = bool(fixed and fixed.all_passed)
        plausible_brt = candidate_brt = False
        note = ""
        if has_brt:
            fails_before = bool(before and before.collected and not before.all_passed)
            plausible_brt = fails_before and bool(with_oracle and with_oracle.all_passed)
            candidate_brt = fails_before and bool(with_own and with_own.all_passed)
            if not fails_before:
                note = "the patch's test does not fail on the buggy code"
        return PatchScore(record.has_test, plausible_fix, plausible_brt, candidate_brt, note)

    async def _maybe(self, wanted: bool, patches: list[str], tests: list[str]) -> TestRun | None:
        return await self._run(patches, tests) if wanted else None
