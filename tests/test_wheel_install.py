"""reprobot as a wheel: built from the checkout, installed into a fresh virtualenv, run from outside the checkout.

No package index is reached: the dependencies come from the wheels `make image-wheels` built
(.reprobot/image-wheels), and the build backend (setuptools) from there too. The source is a copy of the
checkout's files (tracked and new, not ignored), so the build writes nothing into the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / ".reprobot" / "image-wheels"
PACKAGES = ("bot", "handlers", "agents", "sandboxes", "patch_selectors")


def checkout_files() -> list[str]:
    """The checkout's files as git sees them: tracked, plus new ones not ignored."""
    run = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [f for f in run.stdout.split("\0") if f and (ROOT / f).is_file()]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH pointing at the checkout, no virtualenv active."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PIP_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop) and not k.startswith("REPROBOT_")} | extra


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv outside the checkout with the wheel built from it; returns the venv's folder."""
    if not (WHEELS / ".stamp").exists():
        pytest.skip(f"no dependency wheels in {WHEELS}: run `make image-wheels` (make test does it first)")
    base = tmp_path_factory.mktemp("wheel")
    source, dist, venv = base / "src", base / "dist", base / "venv"
    for rel in checkout_files():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, source / rel)
    env = clean_env()
    offline = ["--no-index", "--find-links", str(WHEELS), "--disable-pip-version-check", "-q"]
    build = run([sys.executable, "-m", "pip", "wheel", "--no-deps", *offline, "-w", str(dist), str(source)], base, env)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    (wheel,) = dist.glob("reprobot-*.whl")
    made = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], base, env)
    assert made.returncode == 0, made.stderr
    install = run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", *offline, str(wheel)],
        base,
        env,
    )
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    return venv


def test_every_file_of_the_packages_is_installed(installed: Path, tmp_path: Path) -> None:
    # Templates, prompts, data, mods, helper scripts the sandboxes copy in: whatever the packages hold.
    where = run(
        [str(installed / "bin" / "python"), "-c", "import bot, os; print(os.path.dirname(bot.__path__[0]))"],
        tmp_path,
        clean_env(),
    )
    assert where.returncode == 0, where.stderr
    site = Path(where.stdout.strip())
    assert site.is_relative_to(installed), f"bot imported from {site}, not from the virtualenv"
    wanted = [f for f in checkout_files() if f.split("/", 1)[0] in PACKAGES]
    missing = [f for f in wanted if not (site / f).is_file()]
    assert wanted and missing == [], "make these package data in pyproject.toml"


def test_doctor_runs_from_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    doctor = run(
        [str(installed / "bin" / "reprobot"), "doctor", "--json"], tmp_path, clean_env(REPROBOT_DATA_DIR=str(data))
    )
    assert doctor.returncode in (0, 7), doctor.stderr  # 7: this machine lacks something the checks name
    assert "Traceback" not in doctor.stderr
    report = json.loads(doctor.stdout)
    assert report["data_dir"] == str(data)
    assert report["checks"] and report["backends"]


def test_app_manifest_runs_from_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    manifest = run([str(installed / "bin" / "reprobot"), "app", "manifest"], tmp_path, clean_env())
    assert manifest.returncode == 0, manifest.stderr
    assert "default_permissions" in manifest.stdout
