"""Rust support pieces without a toolchain: manifests digest, vendor config, wrapper, toolchain detection."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sandboxes.envspec import detect_spec
from sandboxes.results import cargo_summary_counts, parse_cargo_test
from sandboxes.rust import (
    RUST_MOUNT,
    cargo_wrapper,
    find_rust_toolchain,
    manifest_digest,
    sandbox_env,
    vendor_config,
)

CARGO_TOML = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n'


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_manifest_digest_follows_manifests_and_lock_only(tmp_path: Path) -> None:
    repo = write(tmp_path, {"Cargo.toml": CARGO_TOML, "src/lib.rs": "pub fn f() {}\n"})
    first = manifest_digest(repo)
    (repo / "src/lib.rs").write_text("pub fn g() {}\n")
    write(repo, {"target/debug/Cargo.toml": "build output\n", ".git/Cargo.lock": "git data\n"})
    assert manifest_digest(repo) == first
    write(repo, {"Cargo.lock": "version = 3\n"})
    with_lock = manifest_digest(repo)
    write(repo, {"member/Cargo.toml": CARGO_TOML.replace("calc", "member")})
    assert len({first, with_lock, manifest_digest(repo)}) == 3


def test_rust_spec_cache_key_changes_with_the_dependencies(tmp_path: Path) -> None:
    repo = write(tmp_path, {"Cargo.toml": CARGO_TOML})
    before = detect_spec(repo)
    assert before.language == "rust" and before.fetch_steps == () and before.manifest_digest
    (repo / "Cargo.toml").write_text(CARGO_TOML + '\n[dev-dependencies]\nitoa = "1"\n')
    after = detect_spec(repo)
    assert after.cache_key("py") != before.cache_key("py")


def test_vendor_config_points_every_source_at_the_mounted_folder() -> None:
    printed = (
        "To use vendored sources, add this to your .cargo/config.toml for this project:\n\n"
        '[source.crates-io]\nreplace-with = "vendored-sources"\n\n'
        '[source."git+https://example.org/x.git"]\ngit = "https://example.org/x.git"\n'
        'replace-with = "vendored-sources"\n\n'
        '[source.vendored-sources]\ndirectory = "/data/envs/abc.build-1/vendor"\n'
    )
    config = vendor_config(printed, Path("/data/envs/abc.build-1/vendor"), "/opt/reprobot-env/vendor")
    assert config.startswith("[source.crates-io]") and "To use" not in config
    assert 'directory = "/opt/reprobot-env/vendor"' in config and "/data/envs" not in config
    assert '[source."git+https://example.org/x.git"]' in config


def test_vendor_config_without_dependencies_still_replaces_crates_io() -> None:
    config = vendor_config("There is no dependency to vendor in this project.\n", Path("/x"), "/opt/e/vendor")
    assert '[source.crates-io]\nreplace-with = "vendored-sources"' in config
    assert 'directory = "/opt/e/vendor"' in config


def test_wrapper_and_sandbox_env_use_the_mounts_only() -> None:
    wrapper = cargo_wrapper("/opt/reprobot-env")
    assert wrapper.startswith("#!/bin/sh\n")
    assert f'exec {RUST_MOUNT}/bin/cargo --config /opt/reprobot-env/cargo-config.toml "$@"' in wrapper
    env = sandbox_env("/opt/reprobot-env", ".reprobot/cargo-target")
    assert env["PATH"].split(":")[:2] == ["/opt/reprobot-env/bin", f"{RUST_MOUNT}/bin"]
    assert env["CARGO_NET_OFFLINE"] == "true" and env["CARGO_HOME"].startswith("/tmp/")
    assert env["CARGO_TARGET_DIR"] == "/workspace/.reprobot/cargo-target"
    assert not any("/root" in v for v in env.values())


def _fake_rustc(tmp_path: Path, sysroot: Path) -> str:
    rustc = tmp_path / "rustc"
    rustc.write_text(f'#!/bin/sh\nif [ "$2" = sysroot ]; then echo {sysroot}; else echo "rustc 9.9.9 (fake)"; fi\n')
    rustc.chmod(0o755)
    return str(rustc)


def test_find_rust_toolchain_reads_the_sysroot(tmp_path: Path) -> None:
    sysroot = tmp_path / "toolchain"
    for tool in ("rustc", "cargo"):
        write(sysroot, {f"bin/{tool}": "#!/bin/sh\n"})
    found = find_rust_toolchain(_fake_rustc(tmp_path, sysroot))
    assert found is not None and found.sysroot == sysroot and found.version == "rustc 9.9.9 (fake)"
    assert found.cargo == sysroot / "bin" / "cargo"
    assert (found.mount.host, found.mount.inside, found.mount.read_only) == (sysroot, RUST_MOUNT, True)


def test_find_rust_toolchain_needs_cargo_next_to_rustc(tmp_path: Path) -> None:
    sysroot = write(tmp_path / "toolchain", {"bin/rustc": "#!/bin/sh\n"})
    assert find_rust_toolchain(_fake_rustc(tmp_path, sysroot)) is None
    assert find_rust_toolchain(str(tmp_path / "no-such-rustc")) is None


def test_cargo_summary_counts_add_up_every_binary() -> None:
    text = (
        "test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
        "  test result: ok. 7 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.1s\n"
        "test foo ... ok\n"
    )
    assert cargo_summary_counts(text) == {"passed": 8, "failed": 1, "skipped": 3}
    assert cargo_summary_counts("error: could not compile `x`\n") == {"passed": 0, "failed": 0, "skipped": 0}


def test_cargo_parser_keeps_targets_when_streams_are_merged() -> None:
    merged = (
        "   Compiling calc v0.1.0 (/workspace)\n"
        "     Running unittests src/lib.rs (/workspace/.reprobot/cargo-target/debug/deps/calc-0123456789abcdef)\n"
        "running 1 test\ntest tests::same ... ok\n"
        "     Running tests/other.rs (/workspace/.reprobot/cargo-target/debug/deps/other-fedcba9876543210)\n"
        "running 1 test\ntest tests::same ... FAILED\n"
    )
    assert parse_cargo_test(merged) == {"calc::tests::same": "passed", "other::tests::same": "failed"}


def test_the_host_toolchain_is_found_with_its_cargo() -> None:
    found = find_rust_toolchain()
    if found is None:
        pytest.skip("no Rust toolchain on this host (rustc with cargo next to it)")
    out = subprocess.run([str(found.cargo), "--version"], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.startswith("cargo ")


def test_doctor_reports_the_rust_toolchain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.cli import main

    monkeypatch.setenv("REPROBOT_DATA_DIR", str(tmp_path / "data"))
    main(["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    found = find_rust_toolchain()
    if found is None:
        assert report["rust_toolchain"].startswith("not found")
    else:
        assert str(found.sysroot) in report["rust_toolchain"] and RUST_MOUNT in report["rust_toolchain"]
