"""`reprobot --help` stays light: it loads no model client, browser driver, Docker client or Jira client.

A behaviour check, not a timing one (bench/startup.py measures the time): the heavy libraries are imported by
the commands that use them, never by the parser every command builds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("openai", "playwright", "docker", "jira", "matplotlib", "jinja2", "aiohttp", "agents", "sandboxes")

# Runs the console script's entry point the way `reprobot ARGS` does, then lists the heavy modules it loaded.
PROBE = """
import json, sys
from bot.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def loaded_by(*argv: str, data_dir: Path | None = None) -> dict[str, object]:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    if data_dir is not None:
        env["REPROBOT_DATA_DIR"] = str(data_dir)
    run = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    report: dict[str, object] = json.loads(run.stderr.strip().splitlines()[-1])
    report["stdout"] = run.stdout
    return report


@pytest.mark.parametrize("argv", [("--help",), ("fix", "--help"), ("reproduce", "--help"), ("--version",)])
def test_help_imports_no_heavy_library(argv: tuple[str, ...]) -> None:
    report = loaded_by(*argv)
    assert report["code"] == 0
    assert report["stdout"]
    assert report["loaded"] == []


def test_the_probe_sees_a_command_that_does_load_them(tmp_path: Path) -> None:
    # `doctor` checks the sandboxes: the same probe sees those imports, so an empty list above is a real one.
    report = loaded_by("doctor", "--json", data_dir=tmp_path)
    assert "sandboxes" in report["loaded"]
