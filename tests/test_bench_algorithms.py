"""The made-up algorithm programs (bench/data/algorithms.py): each bug is real and each input decides."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import load_script

algorithms = load_script("bench/data/algorithms.py")


def _run(code: str, name: str, args: list[Any]) -> object:
    namespace: dict[str, Any] = {}
    exec(compile(code, f"{name}.py", "exec"), namespace)
    try:
        return namespace[name](*json.loads(json.dumps(args)))
    except Exception as exc:  # a buggy program may raise anything; the exception is its result
        return exc


@pytest.mark.parametrize("key", sorted(algorithms.PROGRAMS))
def test_every_program_has_a_bug_that_some_input_shows(key: str) -> None:
    programs = algorithms.PROGRAMS[key]
    assert len(programs) >= 20
    for name, _doc, code, (old, new), tests in programs:
        assert code.count(old) == 1 and old != new, name
        buggy = code.replace(old, new)
        # Programs that loop forever on some input (set a's Collatz bug) are left to the sandboxed builder.
        if "while n != 1" in code:
            continue
        outcomes = [(_run(code, name, args), _run(buggy, name, args), expected) for args, expected in tests]
        assert all(right == expected for right, _wrong, expected in outcomes), name
        assert any(wrong != expected for _right, wrong, expected in outcomes), name


def test_write_repo_lays_out_quixbugs(tmp_path: Path) -> None:
    assert algorithms.main(["--set", "c", str(tmp_path / "repo")]) == 0
    repo = tmp_path / "repo"
    names = sorted(p.stem for p in (repo / "python_programs").glob("*.py"))
    assert names == sorted(p[0] for p in algorithms.PROGRAMS["c"])
    right, wrong = (repo / "correct_python_programs" / "tail.py"), (repo / "python_programs" / "tail.py")
    assert right.read_text() != wrong.read_text()
    log = subprocess.run(["git", "-C", str(repo), "log", "--oneline"], capture_output=True, text=True, check=True)
    assert log.stdout.count("\n") == 1
    assert algorithms.main(["--set", "c", str(repo)]) == 2  # not empty
