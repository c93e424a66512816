"""Run the tests under coverage inside the sandbox and rank suspicious statements (Ochiai + frames)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from sandboxes.agents.localize import (
    Frame,
    Location,
    all_contexts,
    coverage_from_json,
    ochiai,
    rank_statements,
    split_outcomes,
)
from sandboxes.base import Sandbox
from sandboxes.environment import TestRunner
from sandboxes.workspace import SCRATCH_DIR

log = logging.getLogger(__name__)

_RC = """\
[run]
dynamic_context = test_function
data_file = /workspace/{scratch}/.coverage
branch = False
[json]
show_contexts = True
"""


def _is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (
        path.startswith(("tests/", "test/"))
        or "/tests/" in path
        or name.startswith("test_")
        or (name.endswith("_test.py") or name == "conftest.py")
    )


async def localize_in_sandbox(
    sandbox: Sandbox,
    runner: TestRunner,
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
    json_rel = f"{SCRATCH_DIR}/coverage.json"
    conv = await sandbox.run(
        [
            runner.env.python,
            "-m",
            "coverage",
            "json",
            f"--rcfile=/workspace/{rc_rel}",
            "-o",
            f"/workspace/{json_rel}",
        ],
        timeout=120,
    )
    coverage: dict[str, dict[int, set[str]]] = {}
    if conv.exit_code == 0:
        try:
            data = json.loads(sandbox.read_file(json_rel))
            coverage = coverage_from_json(data, "/workspace")
        except (OSError, ValueError) as exc:
            log.warning("coverage report unreadable: %s", exc)
    else:
        log.info("coverage json failed: %s", conv.output[-300:])
    # Coverage names a test by its function's dotted name, pytest by node id: map one onto the other.
    failing, passing = split_outcomes(all_contexts(coverage), run.failed_ids, run.passed_ids)
    python_files = {f for f in repo_files if f.endswith(".py")}
    test_files = {f for f in python_files if _is_test_file(f)} | {brt_path}
    scores = ochiai(coverage, failing, passing) if coverage and failing else {}
    return rank_statements(scores, frames, python_files, test_files, top=top, mentioned=mentioned)
