"""Acceptance on real projects: `reprobot env detect/test` (no hints) vs the project's own tests on the host.

Downloads pinned sdists with pip, unpacks each as a one-commit git repo, runs `reprobot env test --json` and,
as ground truth, a host virtualenv installed the way the project's own tox/Makefile says, running pytest
directly. When cargo is on the host, pinned crates from crates.io are compared the same way against a plain
`cargo test` on the host. Prints a table of passed/failed/skipped per side and the relative difference.
Offline: skips.

Usage: python bench/external_projects.py [--sandbox bwrap,docker] [--keep DIR] [--only python|rust]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
HOST_PYTHON = "/usr/bin/python3"  # the interpreter the sandbox environments are built with
#: name==version, and the ground-truth install: the project's own test instructions (tox deps, extras).
PROJECTS = {
    "attrs==24.2.0": ["-e", ".[tests]"],
    "more-itertools==10.5.0": ["-e", ".", "pytest"],
    "python-dateutil==2.9.0.post0": ["-e", ".", "-r", "requirements-dev.txt"],
}
#: name==version of crates whose packaged .crate ships its tests (semver: none needed; either: dev-deps vendored).
CRATES = ("semver==1.0.23", "either==1.13.0")
#: Both sides run the whole suite even when one module fails to import (reprobot's baseline does).
PYTEST_ARGS = ["-p", "no:cacheprovider", "--continue-on-collection-errors", "-q"]
TOLERANCE = 0.10
#: project, backend, detected language, reprobot's JSON, host counts, relative difference, within tolerance.
Row = tuple[str, str, object, dict[str, object], dict[str, float], float, bool]


def _run(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 1800) -> str:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0 and "pytest" not in " ".join(argv) and "env" not in argv:
        raise RuntimeError(f"{' '.join(argv[:4])}... failed: {(proc.stdout + proc.stderr)[-1500:]}")
    return proc.stdout


def fetch(spec: str, dest: Path) -> Path:
    """pip download the sdist and unpack it as a one-commit git repository."""
    dl = dest / "sdists"
    dl.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", spec, "-d", str(dl)])
    name, version = spec.split("==")
    archive = next(p for p in dl.iterdir() if p.name.lower().replace("_", "-").startswith(f"{name}-{version}"))
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    repo = dest / archive.name.removesuffix(".tar.gz")
    # Tagged like the release it is, so setuptools-scm / hatch-vcs report the real version.
    _git_commit(repo, version)
    return repo


def _git_commit(repo: Path, tag: str) -> None:
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "release"], ["tag", tag]):
        _run([*git, *args], cwd=repo)


def fetch_crate(spec: str, dest: Path) -> Path:
    """Download a pinned crate from crates.io with cargo (a scratch package depending on it) as a git repo."""
    name, version = spec.split("==")
    scratch = dest / f"fetch-{name}"
    (scratch / "src").mkdir(parents=True, exist_ok=True)
    (scratch / "src" / "lib.rs").write_text("")
    manifest = scratch / "Cargo.toml"
    manifest.write_text(
        f'[package]\nname = "fetch-{name}"\nversion = "0.0.0"\nedition = "2021"\n\n'
        f'[dependencies]\n{name} = "={version}"\n'
    )
    meta = json.loads(_run(["cargo", "metadata", "--format-version", "1", "--manifest-path", str(manifest)]))
    package = next(p for p in meta["packages"] if p["name"] == name and p["version"] == version)
    repo = dest / f"{name}-{version}"
    shutil.copytree(Path(package["manifest_path"]).parent, repo)
    _git_commit(repo, version)
    return repo


def cargo_ground_truth(repo: Path, work: Path) -> dict[str, float]:
    """Counts from a plain `cargo test --no-fail-fast` on the host (network allowed), in a checkout copy."""
    from sandboxes.results import cargo_summary_counts

    copy = work / f"truth-{repo.name}"
    shutil.copytree(repo, copy, symlinks=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPROBOT_", "CARGO_TARGET"))}
    env["CARGO_TARGET_DIR"] = str(work / f"target-{repo.name}")
    started = time.monotonic()
    proc = subprocess.run(
        ["cargo", "test", "--no-fail-fast"], cwd=copy, env=env, capture_output=True, text=True, timeout=1800
    )
    seconds = time.monotonic() - started
    return {**cargo_summary_counts(proc.stdout), "errors": 0, "seconds": round(seconds, 1)}


def ground_truth(repo: Path, install: list[str], work: Path) -> dict[str, float]:
    """Counts from the project's own pytest run directly on the host, in a fresh venv and checkout copy."""
    copy = work / f"truth-{repo.name}"
    shutil.copytree(repo, copy, symlinks=True)
    venv = work / f"venv-{repo.name}"
    _run([HOST_PYTHON, "-m", "venv", str(venv)])
    py = str(venv / "bin" / "python")
    _run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--prefer-binary", *install], cwd=copy)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPROBOT_", "PYTHON"))}
    # As a developer runs it: the virtualenv activated (plugins look for tools such as mypy on PATH).
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}")
    started = time.monotonic()
    out = _run([py, "-m", "pytest", *PYTEST_ARGS], cwd=copy, env=env)
    seconds = time.monotonic() - started
    return {**summary_counts(out), "seconds": round(seconds, 1)}


def summary_counts(output: str) -> dict[str, int]:
    """Counts from pytest's final summary line, as a person reads them (subtests are not tests).

    xfailed counts as skipped and xpassed as passed, the way JUnit XML reports them.
    """
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|error|skipped)", line)]
    if not lines:
        return counts
    for number, word in re.findall(r"(\d+) (subtests? \w+|\w+)", lines[-1]):
        key = {"xfailed": "skipped", "xpassed": "passed", "error": "errors"}.get(word, word)
        if key in counts:
            counts[key] += int(number)
    return counts


def reprobot(args: list[str], data_dir: Path) -> dict[str, object]:
    """Run the reprobot CLI as an outside script would and parse its JSON."""
    env = {**os.environ, "REPROBOT_DATA_DIR": str(data_dir)}
    out = _run([str(Path(sys.executable).parent / "reprobot"), *args, "--json"], cwd=REPO_ROOT, env=env)
    return json.loads(out) if out.strip() else {}


def within(ours: dict[str, object], truth: dict[str, float]) -> tuple[float, bool]:
    """Relative difference: sum of |ours - truth| over passed/failed/skipped/errors, over truth's total."""
    keys = ("passed", "failed", "skipped", "errors")
    diff = sum(abs(int(ours.get(k, 0)) - int(truth[k])) for k in keys)  # type: ignore[call-overload]
    total = max(sum(int(truth[k]) for k in keys), 1)
    return diff / total, diff / total <= TOLERANCE


def main(argv: list[str] | None = None) -> int:
    """Print the comparison table; returns 0 also when skipped offline."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sandbox", default="bwrap", help="comma-separated backends to run reprobot with")
    parser.add_argument("--keep", type=Path, help="work folder to keep (default: a temp folder, removed)")
    parser.add_argument("--only", choices=["python", "rust"], help="only the Python projects or only the crates")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="reprobot-ext-"))
    work.mkdir(parents=True, exist_ok=True)
    data_dir = work / "data"
    rows: list[Row] = []
    try:
        for spec, install in PROJECTS.items() if args.only != "rust" else ():
            try:
                repo = fetch(spec, work)
            except (RuntimeError, StopIteration, subprocess.TimeoutExpired) as exc:
                print(f"external_projects: skipped {spec}: cannot download ({str(exc)[:200]})")
                continue
            truth = ground_truth(repo, install, work)
            rows += _compare(spec, repo, truth, args.sandbox, data_dir)
        if args.only != "python" and shutil.which("cargo") is None:
            print("external_projects: skipped the crates: cargo is not on this host")
        for spec in CRATES if args.only != "python" and shutil.which("cargo") else ():
            try:
                repo = fetch_crate(spec, work)
            except (RuntimeError, StopIteration, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                print(f"external_projects: skipped {spec}: cannot download ({str(exc)[:200]})")
                continue
            truth = cargo_ground_truth(repo, work)
            rows += _compare(spec, repo, truth, args.sandbox, data_dir)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if not rows:
        print("external_projects: nothing ran (offline?)")
        return 0
    print()
    print(f"{'project':30} {'sandbox':7} {'reprobot p/f/s/e':>22} {'host p/f/s/e':>22} {'diff':>6}  ok")
    for spec, backend, _lang, ours, truth, rel, ok in rows:
        mine = "/".join(str(ours.get(k, "-")) for k in ("passed", "failed", "skipped", "errors"))
        theirs = "/".join(str(int(truth[k])) for k in ("passed", "failed", "skipped", "errors"))
        print(f"{spec:30} {backend:7} {mine:>22} {theirs:>22} {rel:6.1%}  {'yes' if ok else 'NO'}")
    return 0 if all(r[-1] for r in rows) else 1


def _compare(spec: str, repo: Path, truth: dict[str, float], sandboxes: str, data_dir: Path) -> list[Row]:
    """Detect, then run reprobot on each backend and compare with the host's counts; one row per backend."""
    detected = reprobot(["env", "detect", "--repo", str(repo)], data_dir)
    rows: list[Row] = []
    for backend in sandboxes.split(","):
        ours = reprobot(["env", "test", "--repo", str(repo), "--sandbox", backend], data_dir)
        rel, ok = within(ours, truth)
        rows.append((spec, backend, detected.get("language"), ours, truth, rel, ok))
        print(_row(spec, backend, ours, truth, rel, ok), flush=True)
    return rows


def _row(spec: str, backend: str, ours: dict[str, object], truth: dict[str, float], rel: float, ok: bool) -> str:
    return (
        f"external_projects: {spec} [{backend}] reprobot {ours.get('seconds')}s vs host {truth['seconds']}s;"
        f" diff {rel:.1%} {'ok' if ok else 'OUTSIDE 10%'}"
    )


if __name__ == "__main__":
    sys.exit(main())
