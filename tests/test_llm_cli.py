"""`reprobot fix --agent llm` fails fast, in one line, with status "error" when no model can be used."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import make_git_repo

ENTRY = "from bot.cli import main; raise SystemExit(main())"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(tmp_path: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    repo = make_git_repo(tmp_path / "repo", {"m.py": "def f():\n    return 1\n"})
    issue = tmp_path / "issue.md"
    issue.write_text("# f() returns 1\n\n```python\nfrom m import f\nprint(f())\n```\nExpected: `2`\nActual: `1`\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPROBOT_")}
    env.update({"REPROBOT_DATA_DIR": str(tmp_path / "data"), **extra_env})
    argv = [sys.executable, "-c", ENTRY, "fix", "--repo", str(repo), "--issue", str(issue), "--agent", "llm", "--json"]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "needs REPROBOT_LLM_BASE_URL and REPROBOT_LLM_MODEL"),
        ({"REPROBOT_LLM_MODEL": "m", "REPROBOT_LLM_BASE_URL": "http://127.0.0.1:{port}/v1"}, "cannot be reached"),
    ],
)
def test_agent_llm_fails_fast(tmp_path: Path, env: dict[str, str], message: str) -> None:
    env = {k: v.format(port=_free_port()) for k, v in env.items()}
    proc = _run(tmp_path, {**env, "REPROBOT_LLM_API_KEY": "sk-never-printed"})
    doc = json.loads(proc.stdout)
    assert doc["status"] == "error" and message in doc["reasons"][0]
    assert proc.returncode != 0
    assert proc.stderr.count("\n") == 1 and message in proc.stderr and "Traceback" not in proc.stderr
    assert "sk-never-printed" not in proc.stdout + proc.stderr
