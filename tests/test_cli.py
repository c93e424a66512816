"""`reprobot fix|reproduce` end to end as a user runs it: a real subprocess, real git, the bwrap sandbox."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_git_repo

REPROBOT = str(Path(sys.executable).with_name("reprobot"))

CALC = '''"""A tiny calculator."""


def clamp(value, low, high):
    """Limit value to the closed range [low, high]."""
    if value < low:
        return low
    if value > high:
        return low
    return value


def average(values):
    """Arithmetic mean of a non-empty list."""
    return sum(values) / len(values)
'''

CALC_TESTS = """from calc import average, clamp


def test_inside_range():
    assert clamp(5, 0, 10) == 5


def test_below_range():
    assert clamp(-3, 0, 10) == 0


def test_average():
    assert average([1, 2, 3]) == 2
"""

PYPROJECT = '[project]\nname = "calc"\nversion = "0"\n[tool.pytest.ini_options]\npythonpath = ["."]\n'

ISSUE = """# clamp returns the lower bound for values above the range

```python
from calc import clamp
print(clamp(15, 0, 10))
```

Expected: `10`
Actual: `0`
"""


def calc_repo(path: Path, **extra: str) -> Path:
    """A small buggy project with passing regression tests, as one git commit."""
    files = {"calc.py": CALC, "tests/test_calc.py": CALC_TESTS, "pyproject.toml": PYPROJECT, **extra}
    return make_git_repo(path, files)


def run_cli(*args: str | Path, data: Path, timeout: float = 600) -> tuple[int, dict[str, Any], str]:
    """Run the console script with --json; return (exit code, the JSON document, stderr)."""
    env = {**os.environ, "REPROBOT_DATA_DIR": str(data)}
    proc = subprocess.run(
        [REPROBOT, *map(str, args), "--json"], capture_output=True, text=True, timeout=timeout, env=env
    )
    assert proc.stdout.count("\n") <= 1, f"stdout must hold exactly one JSON document: {proc.stdout[:500]}"
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def branches(repo: Path) -> list[str]:
    """Every local branch of `repo`."""
    out = subprocess.run(["git", "branch", "--format=%(refname:short)"], cwd=repo, capture_output=True, text=True)
    return out.stdout.split()


def tree_state(repo: Path) -> tuple[str, str, str]:
    """HEAD, the checked-out branch and the porcelain status: what must not change for the user."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True).stdout

    return git("rev-parse", "HEAD"), git("branch", "--show-current"), git("status", "--porcelain")


@pytest.fixture
def data_dir(tmp_path: Path, env_cache: Path) -> Path:
    """A private data dir that shares the session's environment cache."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(env_cache)
    return data


def test_fix_creates_one_branch_with_fix_and_brt(tmp_path: Path, data_dir: Path) -> None:
    repo = calc_repo(tmp_path / "calc")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    before = tree_state(repo)
    code, doc, _ = run_cli("fix", "--repo", repo, "--issue", issue, "-M", "2", "--out", tmp_path / "out", data=data_dir)
    assert code == 0, doc
    assert doc["status"] == "fixed"
    assert doc["fix_files"] == ["calc.py"] and doc["test_files"]
    assert doc["brt"]["fails_before"] and doc["brt"]["passes_after"]
    assert tree_state(repo) == before, "the user's branch and work tree are untouched"
    branch = doc["branch"]
    assert branch in branches(repo)
    log = subprocess.run(["git", "log", "--format=%s", f"main..{branch}"], cwd=repo, capture_output=True, text=True)
    assert len(log.stdout.splitlines()) == 1, "one commit holds fix + BRT"
    shown = subprocess.run(["git", "show", f"{branch}:calc.py"], cwd=repo, capture_output=True, text=True).stdout
    assert "return high" in shown
    pr = (tmp_path / "out" / "pr.md").read_text()
    assert doc["brt"]["path"] in pr and "Fixes" in pr
    assert json.loads((tmp_path / "out" / "result.json").read_text())["status"] == "fixed"
    # The job went through the durable queue and its outcome is on record.
    import sqlite3

    with sqlite3.connect(data_dir / "reprobot.db") as db:
        rows = db.execute("SELECT status, result FROM jobs").fetchall()
    assert [r[0] for r in rows] == ["done"] and json.loads(rows[0][1])["status"] == "fixed"


def test_reproduce_writes_the_comment_and_creates_no_branch(tmp_path: Path, data_dir: Path) -> None:
    repo = calc_repo(tmp_path / "calc")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    code, doc, _ = run_cli("reproduce", "--repo", repo, "--issue", issue, data=data_dir)
    assert code == 0 and doc["status"] == "reproduced"
    assert doc["brt"]["fails_before"] and "clamp(15, 0, 10)" in doc["brt"]["source"]
    # Without --out, the run gets its own folder runs/<slug>/<job id>, and `latest` points at it.
    out = Path(doc["out_dir"])
    assert out.parent.parent == data_dir / "runs" and out.name == str(doc["job_id"])
    assert (out.parent / "latest").resolve() == out.resolve()
    comment = (out / "comment.md").read_text()
    assert "python -m pytest" in comment and doc["brt"]["path"] in comment
    assert branches(repo) == ["main"]


@pytest.mark.parametrize(
    ("make", "code", "message"),
    [
        (lambda p: p / "missing", 4, "does not exist"),
        (lambda p: (p / "plain").mkdir() or p / "plain", 4, "not a git repository"),
    ],
)
def test_bad_repo_paths(tmp_path: Path, data_dir: Path, make: Any, code: int, message: str) -> None:
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    got, doc, err = run_cli("fix", "--repo", make(tmp_path), "--issue", issue, data=data_dir)
    assert got == code and doc["status"] == "error" and message in doc["reasons"][0] and message in err


def test_dirty_tree_is_refused_and_left_alone(tmp_path: Path, data_dir: Path) -> None:
    repo = calc_repo(tmp_path / "calc")
    (repo / "calc.py").write_text(CALC + "\n# local edit\n")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    before = tree_state(repo)
    code, doc, _ = run_cli("fix", "--repo", repo, "--issue", issue, data=data_dir)
    assert code == 5 and "--allow-dirty" in doc["reasons"][0]
    assert tree_state(repo) == before and (repo / "calc.py").read_text().endswith("# local edit\n")


@pytest.mark.parametrize(
    ("content", "message"), [(b"", "is empty"), (b"  \n\n", "is empty"), (b"\x00\x01PNG", "binary")]
)
def test_bad_issue_files(tmp_path: Path, data_dir: Path, content: bytes, message: str) -> None:
    repo = calc_repo(tmp_path / "calc")
    issue = tmp_path / "issue.md"
    issue.write_bytes(content)
    code, doc, _ = run_cli("fix", "--repo", repo, "--issue", issue, data=data_dir)
    assert code == 6 and message in doc["reasons"][0]


def test_nothing_reproducible_abstains_with_reasons(tmp_path: Path, data_dir: Path) -> None:
    repo = calc_repo(tmp_path / "calc")
    issue = tmp_path / "issue.md"
    issue.write_text("# it doesn't work\n\nI updated and now it doesn't work anymore. Please help.\n")
    code, doc, _ = run_cli("fix", "--repo", repo, "--issue", issue, data=data_dir)
    assert code == 3 and doc["status"] == "abstained"
    assert doc["reasons"] and doc["abstention"]["score"] < doc["abstention"]["threshold"]
    assert branches(repo) == ["main"]


def test_hanging_suite_is_stopped_by_the_timeout(tmp_path: Path, data_dir: Path) -> None:
    # The conftest hangs at import, before pytest-timeout can arm: only the sandbox's wall timeout stops it.
    repo = calc_repo(tmp_path / "calc", **{"tests/conftest.py": "import time\ntime.sleep(3600)\n"})
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    started = time.monotonic()
    code, doc, _ = run_cli("fix", "--repo", repo, "--issue", issue, "--timeout", "5", data=data_dir, timeout=300)
    assert time.monotonic() - started < 250
    assert code == 7 and doc["status"] == "error"
    assert "did not finish within 5 s" in doc["reasons"][0] and "timed out" in doc["reasons"][0]
    assert branches(repo) == ["main"]


def test_test_printing_a_flood_is_capped(tmp_path: Path, data_dir: Path) -> None:
    flood = "import sys\n\ndef test_flood():\n    sys.stdout.write('x' * (1 << 30))\n"
    repo = calc_repo(tmp_path / "calc", **{"tests/test_flood.py": flood})
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    code, doc, _ = run_cli("reproduce", "--repo", repo, "--issue", issue, data=data_dir)
    assert code == 0 and doc["status"] == "reproduced"
    assert len(json.dumps(doc)) < 4 * 1024 * 1024, "captured output is capped, not 1 GB"


def test_ctrl_c_leaves_no_branch_and_no_process(tmp_path: Path, data_dir: Path) -> None:
    # A regression test that sleeps keeps the run busy long enough to interrupt it mid-job.
    slow = "import time\n\ndef test_slow():\n    time.sleep(60)\n"
    repo = calc_repo(tmp_path / "calc", **{"tests/test_slow.py": slow})
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    env = {**os.environ, "REPROBOT_DATA_DIR": str(data_dir)}
    # A suite started in the background of a non-interactive shell (`make test &`) inherits SIGINT ignored, and so
    # would the command. It gets what a terminal gives it: SIGINT's default disposition, then exec (same pid).
    terminal = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    )
    command = [REPROBOT, "-v", "fix", "--repo", str(repo), "--issue", str(issue), "--json", "--timeout", "120"]
    proc = subprocess.Popen(
        [sys.executable, "-c", terminal, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 240
    for line in proc.stderr:
        if "environment" in line or time.monotonic() > deadline:
            break
    time.sleep(3)  # now inside the baseline run: sandboxed pytest is sleeping
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert json.loads(out)["status"] == "error"
    assert branches(repo) == ["main"]
    time.sleep(1)
    # Every sandboxed process names its workspace, which lies under this test's private data dir.
    leftovers = subprocess.run(["pgrep", "-af", str(data_dir)], capture_output=True, text=True).stdout
    assert not leftovers.strip(), f"processes left behind: {leftovers}"


def test_trajectories_that_cannot_change_a_settled_vote_do_not_run(tmp_path: Path, data_dir: Path) -> None:
    repo = calc_repo(tmp_path / "calc")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    # One at a time, four trajectories: once three agree on the fix, the fourth could only make it 3 to 1.
    env = {**os.environ, "REPROBOT_DATA_DIR": str(data_dir), "REPROBOT_MAX_PARALLEL": "1", "REPROBOT_EARLY_STOP": "1"}
    proc = subprocess.run(
        [REPROBOT, "fix", "--repo", str(repo), "--issue", str(issue), "-M", "4", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["status"] == "fixed", proc.stderr[-2000:]
    statuses = [t["status"] for t in doc["trajectories"]]
    assert statuses.count("fixed") == 3 and statuses.count("not_fixed") == 1, doc["trajectories"]
    import sqlite3

    with sqlite3.connect(data_dir / "reprobot.db") as db:
        reasons = [json.loads(c)["reason"] for (c,) in db.execute("SELECT content FROM steps WHERE kind = 'stop'")]
    assert reasons == [
        "stopped early: 3 of 3 finished trajectories agree on one fix, and the 1 still running or waiting "
        "cannot change the vote"
    ]
