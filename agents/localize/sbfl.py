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
    run = await runner.run(sandbox, [], coverage_rc=f"/workspace/{rc_rel}")
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
