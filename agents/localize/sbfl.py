"""Run the tests under coverage inside the sandbox and rank suspicious statements (Ochiai + frames)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence

from agents.localize.impact import export_contexts
from agents.localize.ranking import (
    Frame,
    Location,
    all_contexts,
    import_time_lines,
    ochiai,
    rank_statements,
    repo_file_for,
    split_outcomes,
)
from sandboxes.base import Sandbox
from sandboxes.environment import TestSuite
from sandboxes.workspace import SCRATCH_DIR

log = logging.getLogger(__name__)

#: Source files read back for ranking: the suspicious ones only (a big repo has thousands).
_MAX_SOURCES = 50
#: Files scanned for the definition of a function the report names.
_MAX_SCANNED = 2000

_RC = """\
[run]
dynamic_context = test_function
data_file = /workspace/{scratch}/.coverage
branch = False
[json]
show_contexts = True
"""


#: Subprocesses a test starts (`python -m tool ...`, the way a report's command is replayed) are measured too:
#: coverage.py starts in them from this sitecustomize, and names their lines after the test that spawned them,
#: which a pytest plugin in the parent tells them through the environment. Only children see
#: COVERAGE_PROCESS_START: the plugin sets it once pytest runs.
_SUB_DIR = f"{SCRATCH_DIR}/subcov"
_SUB_RC = """\
[run]
parallel = True
data_file = /workspace/{scratch}/.coverage
branch = False
"""
_SITECUSTOMIZE = """\
import os

if os.environ.get("COVERAGE_PROCESS_START"):
    try:
        import coverage

        # Newer coverage.py starts itself from a .pth file before this runs: take the instance it started.
        _cov = coverage.process_startup() or getattr(coverage.process_startup, "coverage", None)
        if _cov is not None and os.environ.get("REPROBOT_COVERAGE_CONTEXT"):
            _cov.switch_context(os.environ["REPROBOT_COVERAGE_CONTEXT"])
    except Exception:  # measuring is a bonus: the test's own process must run as it would
        pass
"""
_CONTEXT_PLUGIN = """\
import os


def pytest_configure(config):
    # Set here, not for the whole command: the process coverage.py already measures must not start it twice.
    os.environ["COVERAGE_PROCESS_START"] = os.environ.get("REPROBOT_SUBCOV_RC", "")


def pytest_runtest_setup(item):
    func = getattr(item, "function", None)
    if func is not None:
        cls = getattr(item, "cls", None)
        owner = f"{func.__module__}.{cls.__name__}" if cls is not None else func.__module__
        os.environ["REPROBOT_COVERAGE_CONTEXT"] = f"{owner}.{func.__name__}"
"""


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (
        path.startswith(("tests/", "test/"))
        or "/tests/" in path
        or name.startswith("test_")
        or (name.endswith("_test.py") or name == "conftest.py")
    )


async def localize_in_sandbox(
    sandbox: Sandbox,
    runner: TestSuite,
    brt_path: str,
    repo_files: Sequence[str],
    frames: list[Frame],
    *,
    top: int = 20,
    mentioned: Sequence[str] = (),
) -> list[Location]:
    """Spectrum-based fault localization over the whole suite plus the BRT, merged with traceback frames."""
    rc_rel = f"{SCRATCH_DIR}/coveragerc"
    sandbox.write_file(rc_rel, _RC.format(scratch=SCRATCH_DIR))
    sandbox.write_file(f"{_SUB_DIR}/coveragerc", _SUB_RC.format(scratch=SCRATCH_DIR))
    sandbox.write_file(f"{_SUB_DIR}/sitecustomize.py", _SITECUSTOMIZE)
    sandbox.write_file(f"{_SUB_DIR}/reprobot_subcov.py", _CONTEXT_PLUGIN)
    paths = [p for p in (runner.env_vars().get("PYTHONPATH", ""), f"/workspace/{_SUB_DIR}") if p]
    measured = {"PYTHONPATH": ":".join(paths), "REPROBOT_SUBCOV_RC": f"/workspace/{_SUB_DIR}/coveragerc"}
    run = await runner.run(
        sandbox, [], coverage_rc=f"/workspace/{rc_rel}", extra_args=["-p", "reprobot_subcov"], env=measured
    )
    # The subprocesses' data files join the run's own (nothing to join is no error).
    await sandbox.run(
        [runner.env.python, "-m", "coverage", "combine", "--append", f"--rcfile=/workspace/{rc_rel}"], timeout=120
    )
    # The compact export: `coverage json --show-contexts` of a large suite passes the read cap (impact.py).
    coverage = await export_contexts(
        sandbox, runner.env.python, f"/workspace/{SCRATCH_DIR}/.coverage", f"{SCRATCH_DIR}/coverage.json"
    )
    # Coverage names a test by its function's dotted name, pytest by node id: map one onto the other.
    failing, passing = split_outcomes(all_contexts(coverage), run.failed_ids, run.passed_ids)
    python_files = {f for f in repo_files if f.endswith(".py")}
    test_files = {f for f in python_files if is_test_file(f)} | {brt_path}
    scores = ochiai(coverage, failing, passing) if coverage and failing else {}
    # Reading files back and parsing them is host work: off the event loop.
    sources = await asyncio.to_thread(
        _read_sources, sandbox, {f for f, _ in scores}, python_files - test_files, frames, mentioned
    )
    # A child process (a replayed command) imports the project inside the test: its `def`, `class` and
    # `import` lines ran for that test only, yet say nothing about the fault. The test's own process did the
    # same imports while pytest collected, outside any test.
    scores = {
        (f, line): v
        for (f, line), v in scores.items()
        if line > 0 and line not in import_time_lines(sources.get(f, ""))
    }
    # Only files no failing test reached are given to the ranking: their named functions become candidates,
    # while the order of covered lines stays Ochiai's and the frames' alone. Boosting covered lines of named
    # functions reshuffled the search enough, on a QuixBugs program, for a wrong rename to pass the correctness
    # assessment and be published.
    suspected = {f for (f, _), score in scores.items() if score > 0}
    uncovered = {f: text for f, text in sources.items() if f not in suspected}
    # Covered files' named functions are only noted: the search tries them after its top locations.
    covered = {f: text for f, text in sources.items() if f in suspected}
    rank = functools.partial(
        rank_statements, top=top, mentioned=mentioned, sources=uncovered, fold=False, noted=covered
    )
    return await asyncio.to_thread(rank, scores, frames, python_files, test_files)


def _read_sources(
    sandbox: Sandbox, covered: set[str], candidates: set[str], frames: list[Frame], mentioned: Sequence[str]
) -> dict[str, str]:
    """The text of the files a suspect can be in: covered ones, frames' files, files defining a named function.

    A function the report names may sit in a file no failing test reached, so files whose text defines one
    (a cheap `def name` scan over the repo's non-test files) are read too, up to _MAX_SOURCES in all.
    """
    names = {m.rsplit(".", 1)[-1] for m in mentioned if m.replace(".", "").isidentifier()}
    frame_files = {repo_file_for(f.file, candidates) for f in frames} - {None}
    wanted = sorted(
        (f for f in candidates if f in covered or f in frame_files), key=lambda f: (f not in frame_files, f)
    )
    sources: dict[str, str] = {}
    for rel in wanted[:_MAX_SOURCES]:
        text = _read(sandbox, rel)
        if text is not None:
            sources[rel] = text
    for rel in sorted(candidates - set(sources))[:_MAX_SCANNED]:
        if len(sources) >= _MAX_SOURCES or not names:
            break
        text = _read(sandbox, rel)
        if text is not None and any(f"def {name}(" in text for name in names):
            sources[rel] = text
    return sources


def _read(sandbox: Sandbox, rel: str) -> str | None:
    try:
        return sandbox.read_file(rel)
    except (OSError, ValueError) as exc:
        log.info("cannot read %s for localization: %s", rel, exc)
        return None
