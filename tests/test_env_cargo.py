"""`reprobot env test` on Rust crates in bwrap: a local crate, and a real crate from crates.io vs host cargo."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.cli import main
from bot.settings.config import Settings
from sandboxes.base import Limits, SandboxSpec
from sandboxes.environment import TestSuite, prepare_environment
from sandboxes.factory import available_backends, make_sandbox
from sandboxes.results import cargo_summary_counts
from sandboxes.rust import find_rust_toolchain
from sandboxes.workspace import clone_workspace
from tests.conftest import make_git_repo

pytestmark = pytest.mark.timeout(900)

#: A real crate whose packaged .crate ships its tests (tests/*.rs, doc tests); its optional serde gets vendored.
REAL_CRATE = ("semver", "1.0.23")

LOCAL_CRATE = {
    "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": (
        "/// Adds.\n///\n/// ```\n/// assert_eq!(calc::add(2, 2), 4);\n/// ```\n"
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n"
        "#[cfg(test)]\nmod tests {\n"
        "    #[test]\n    fn same() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n"
        "    #[test]\n    fn wrong() {\n        assert_eq!(super::add(1, 1), 3);\n    }\n"
        "    #[test]\n    #[ignore]\n    fn later() {}\n"
        "    #[test]\n    fn no_network() {\n"
        # UDP connect sends nothing: it only asks for a route to a documentation-only address.
        '        let udp = std::net::UdpSocket::bind("0.0.0.0:0");\n'
        '        assert!(udp.and_then(|s| s.connect("192.0.2.1:9")).is_err());\n    }\n}\n'
    ),
    # Same test name in another binary: ids must stay apart.
    "tests/it.rs": "#[test]\nfn same() {\n    assert_eq!(calc::add(-1, 1), 0);\n}\n",
}


def _require_rust_and_bwrap() -> None:
    if find_rust_toolchain() is None:
        pytest.skip("no Rust toolchain on this host (rustc with cargo next to it)")
    if shutil.which("cc") is None:
        pytest.skip("no C linker (cc) on this host; rustc links test binaries with it")
    problem = available_backends()["bwrap"]
    if problem is not None:
        pytest.skip(f"bwrap backend unavailable: {problem}")


@pytest.fixture
def data_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(settings.data_dir))
    return settings


def env_test(capsys: pytest.CaptureFixture[str], repo: Path) -> dict[str, object]:
    code = main(["env", "test", "--repo", str(repo), "--sandbox", "bwrap", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result: dict[str, object] = json.loads(out)
    return result


def test_local_crate_statuses_in_bwrap(tmp_path: Path, capsys: pytest.CaptureFixture[str], data_env: Settings) -> None:
    _require_rust_and_bwrap()
    repo = make_git_repo(tmp_path / "calc", LOCAL_CRATE)
    assert main(["env", "detect", "--repo", str(repo), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["language"] == "rust"
    result = env_test(capsys, repo)
    assert result["language"] == "rust" and result["cache_hit"] is False
    assert result["tests"] == {
        "calc::tests::same": "passed",
        "calc::tests::wrong": "failed",
        "calc::tests::later": "skipped",
        "calc::tests::no_network": "passed",
        "it::same": "passed",
        "doc:calc::src/lib.rs - add (line 3)": "passed",
    }
    assert (result["passed"], result["failed"], result["skipped"], result["errors"]) == (4, 1, 1, 0)
    assert sorted(p.name for p in repo.iterdir()) == [".git", "Cargo.toml", "src", "tests"]  # checkout untouched
    again = env_test(capsys, repo)
    assert again["cache_hit"] is True and again["tests"] == result["tests"]


async def test_selected_rust_tests_run_by_id(tmp_path: Path, settings: Settings) -> None:
    _require_rust_and_bwrap()
    repo = make_git_repo(tmp_path / "calc", LOCAL_CRATE)
    workspace = await clone_workspace(repo, tmp_path / "ws")
    env = await prepare_environment(workspace, settings.cache_dir, python=settings.sandbox_python)
    spec = SandboxSpec(workspace=workspace, mounts=env.mounts, limits=Limits(wall_seconds=600, max_processes=1024))
    async with make_sandbox("bwrap", spec) as sb:
        run = await TestSuite(env, timeout=600).run(sb, ["calc::tests::wrong", "it::same"])
    assert run.tests["calc::tests::wrong"] == "failed" and run.tests["it::same"] == "passed"
    assert "calc::tests::later" not in run.tests and "calc::tests::no_network" not in run.tests


def _fetch_crate(name: str, version: str, dest: Path) -> Path:
    # Tests talk only to 127.0.0.1 by default; the bench prints the same comparison for a maintainer.
    if os.environ.get("REPROBOT_NETWORK_TESTS") != "1":
        pytest.skip(
            f"fetching {name} {version} reaches crates.io: set REPROBOT_NETWORK_TESTS=1 to run it "
            "(or run `python bench/external_projects.py --only rust`)"
        )
    """The packaged crate, downloaded by host cargo through a scratch package depending on it, as a git repo."""
    scratch = dest / "fetch"
    (scratch / "src").mkdir(parents=True)
    (scratch / "src" / "lib.rs").write_text("")
    (scratch / "Cargo.toml").write_text(
        f'[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\n{name} = "={version}"\n'
    )
    proc = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--manifest-path", str(scratch / "Cargo.toml")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot fetch {name} {version} from crates.io: {proc.stderr.strip()[-300:]}")
    package = next(p for p in json.loads(proc.stdout)["packages"] if p["name"] == name)
    return _as_repo(Path(package["manifest_path"]).parent, dest)


def _as_repo(source: Path, dest: Path) -> Path:
    repo = dest / source.name
    shutil.copytree(source, repo)
    cfg = ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "release"]):
        subprocess.run(["git", *cfg, *args], cwd=repo, check=True, capture_output=True)
    return repo


def test_real_crate_matches_host_cargo_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data_env: Settings
) -> None:
    _require_rust_and_bwrap()
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not on PATH to fetch the crate and run it on the host")
    repo = _fetch_crate(*REAL_CRATE, tmp_path)
    copy = tmp_path / "host-copy"
    shutil.copytree(repo, copy)
    env = {**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "host-target"), "CARGO_TERM_COLOR": "never"}
    host = subprocess.run(
        ["cargo", "test", "--no-fail-fast"], cwd=copy, env=env, capture_output=True, text=True, timeout=900
    )
    truth = cargo_summary_counts(host.stdout)
    assert sum(truth.values()) > 20, host.stderr[-2000:]
    ours = env_test(capsys, repo)
    counts = {k: int(str(ours[k])) for k in ("passed", "failed", "skipped", "errors")}
    diff = sum(abs(counts[k] - truth[k]) for k in truth) + counts["errors"]
    assert diff <= 0.10 * sum(truth.values()), (counts, truth)
    tests = ours["tests"]
    assert isinstance(tests, dict) and len(tests) == sum(counts.values())
    assert any(t.startswith("test_version::") for t in tests) and any(t.startswith("doc:semver::") for t in tests)
