"""The real-app cases (bench/apps): each folder is well-formed, and its server script answers its usage.

No network: the folders are read, and server.py is run only without a port (it stops at its usage line before
installing anything). The releases' venvs are built by `make bench-apps`, which CI does not run; the check that
they hold the pinned releases skips while they are absent.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

APPS = REPO_ROOT / "bench" / "apps"
sys.path.insert(0, str(APPS))
from appenv import venv_dir  # noqa: E402
from cases import ORACLES, load_app_cases, problems  # noqa: E402

CASES = load_app_cases(APPS)


def test_the_set_has_enough_real_cases() -> None:
    assert len(CASES) >= 8
    assert len({c.meta["app"] for c in CASES}) >= 3
    assert {c.meta["style"] for c in CASES} == {"numbered steps", "prose", "steps missing"}
    assert {c.oracle_kind for c in CASES} <= set(ORACLES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_folder_is_well_formed(case: object) -> None:
    assert problems(case) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_server_script_prints_its_usage_without_a_port(case: object, tmp_path: Path) -> None:
    root = case.root  # type: ignore[attr-defined]
    env = {"PATH": "/usr/bin:/bin", "REPROBOT_BENCH_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(root / "server.py")], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "usage: server.py PORT [--fixed]" in done.stderr
    assert not any(tmp_path.iterdir()), "nothing is installed before the arguments are checked"


def test_problems_names_what_is_missing(tmp_path: Path) -> None:
    from cases import AppCase

    (tmp_path / "x").mkdir()
    bad = AppCase("x", tmp_path / "x", {"app": "A", "package": "a", "buggy": "1", "fixed": "1", "oracle": "boom"})
    found = problems(bad)
    assert "case.toml lacks issue" in found and "case.toml lacks style" in found
    assert any("oracle 'boom'" in p for p in found)
    assert "the buggy and fixed releases are the same" in found
    assert {"report.md is missing", "truth.json is missing", "server.py is missing"} <= set(found)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_built_venvs_hold_the_pinned_releases(case: object) -> None:
    meta = case.meta  # type: ignore[attr-defined]
    for version in (meta["buggy"], meta["fixed"]):
        root = venv_dir(meta["package"], version)
        if not (root / ".installed").exists():
            pytest.skip(f"{root} is absent: `make bench-apps` builds the release venvs (CI does not)")
        dists = [p.name.lower() for p in root.glob("lib/python*/site-packages/*.dist-info")]
        assert f"{meta['package']}-{version}.dist-info".lower() in dists
