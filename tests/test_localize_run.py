"""Fault localization for real: the suite and the BRT under coverage in the bwrap sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.localize import localize_in_sandbox
from sandboxes.base import Limits, SandboxSpec
from sandboxes.environment import TestSuite, prepare_environment
from sandboxes.factory import available_backends, make_sandbox
from tests.test_envspec import write

pytestmark = pytest.mark.timeout(300)

CORE = (
    "def shout(text):\n"
    "    return text.upper() + '!'\n\n\n"
    "def badge(label):\n"
    "    if '&' in label:\n"
    "        label = label.replace('&', '&amp;').replace('&', '&amp;')\n"  # the bug: escaped twice
    "    return '[' + label + ']'\n"
)
CLI_PROJECT = {
    "setup.py": "from setuptools import setup\nsetup(name='tags', version='0.1', packages=['tags'])\n",
    "tags/__init__.py": "",
    "tags/core.py": CORE,
    "tags/__main__.py": "import sys\n\nfrom tags.core import badge\n\nprint(badge(sys.argv[1]))\n",
    "tests/test_core.py": (
        "from tags.core import badge, shout\n\n\ndef test_shout():\n    assert shout('a') == 'A!'\n\n\n"
        "def test_plain_badge():\n    assert badge('a') == '[a]'\n"
    ),
    # The BRT the way a reported command is replayed: the project's command in a child process.
    "tests/test_brt.py": (
        "import subprocess\nimport sys\n\n\ndef test_command_reported_bug(tmp_path):\n"
        "    out = subprocess.run([sys.executable, '-m', 'tags', 'R&D'], capture_output=True, text=True).stdout\n"
        "    assert out.strip() == '[R&amp;D]'\n"
    ),
}


async def test_a_brt_that_runs_the_projects_command_in_a_child_process_localizes_the_fault(
    tmp_path: Path, env_cache: Path
) -> None:
    """The lines the command ran in its own process count for the test that started it.

    Before, coverage saw only the test's process: a BRT that replays a reported `python -m tool ARG` gave no
    suspicious line at all, and the search had nothing to edit.
    """
    if (problem := available_backends()["bwrap"]) is not None:
        pytest.skip(f"bwrap unavailable: {problem}")
    workspace = write(tmp_path / "ws", CLI_PROJECT)
    env = await prepare_environment(workspace, env_cache, python=Path("/usr/bin/python3"))
    spec = SandboxSpec(workspace=workspace, mounts=env.mounts, limits=Limits(wall_seconds=300))
    async with make_sandbox("bwrap", spec) as sb:
        locations = await localize_in_sandbox(
            sb, TestSuite(env, timeout=120), "tests/test_brt.py", list(CLI_PROJECT), []
        )
    ranked = [(loc.file, loc.line) for loc in locations]
    # The faulty line ran for the BRT alone; the command's own call shares its score; lines a passing test also
    # ran, the definitions the child imported, and shout() (a passing test's only) rank lower or not at all.
    assert ("tags/core.py", 7) in ranked[:2], ranked
    assert ranked.index(("tags/core.py", 7)) < ranked.index(("tags/core.py", 6)), ranked
    assert not {("tags/core.py", 1), ("tags/core.py", 5), ("tags/__main__.py", 1)} & set(ranked), ranked
    assert not [f for f in workspace.rglob("-p")]
