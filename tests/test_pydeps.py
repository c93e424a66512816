"""Requirements as files: classification, refusal of direct references, and fetching sources without running them."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import socket
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from bot.settings.policy import PolicyError, validate
from sandboxes.base import SandboxSpec
from sandboxes.environment import BASE_TEST_DEPS, EnvironmentError_, EnvironmentSpec, TestSuite, build_environment
from sandboxes.factory import available_backends, make_sandbox
from sandboxes.pydeps import (
    DEFAULT_BUILD_REQUIRES,
    Candidate,
    DependencyError,
    SourceFetcher,
    Sources,
    archive_build_requires,
    classify,
    missing_distribution,
    parse_simple_html,
    pick_sdist,
)
from sandboxes.pyenv import refuse_direct_references
from tests.conftest import WHEELHOUSE, make_git_repo


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        ("attrs>=22", "name", "attrs"),
        ("pkg[extra]; python_version >= '3'", "name", "pkg"),
        ("pkg @ https://example.invalid/pkg-1.0.tar.gz", "url", "pkg"),
        ("pkg @ file:///tmp/pkg-1.0.tar.gz", "path", "pkg"),
        ("pkg @ git+https://example.invalid/pkg.git@v1", "vcs", "pkg"),
        ("git+https://example.invalid/pkg.git#egg=pkg", "vcs", "pkg"),
        ("-e git+https://example.invalid/pkg.git", "vcs", None),
        ("./libs/pkg", "path", None),
        ("-e ../elsewhere", "path", None),
        ("https://example.invalid/pkg-1.0.tar.gz", "url", None),
    ],
)
def test_classify(text: str, kind: str, name: str | None) -> None:
    got = classify(text)
    assert (got.kind, got.name, got.direct) == (kind, name, kind != "name")


def test_an_invalid_requirement_is_a_clear_error() -> None:
    with pytest.raises(DependencyError, match="not a valid PEP 508"):
        classify("pkg >>= 1")


def test_direct_references_are_refused_by_name_unless_allowed() -> None:
    deps = ("pytest", "evil @ http://127.0.0.1:9/evil-1.tar.gz", "./vendored")
    with pytest.raises(DependencyError) as info:
        refuse_direct_references(deps, allowed=False)
    message = str(info.value)
    assert "'evil @ http://127.0.0.1:9/evil-1.tar.gz'" in message and "'./vendored'" in message
    assert "environment.allow_direct_references" in message and "'pytest'" not in message
    assert [c.kind for c in refuse_direct_references(deps, allowed=True)] == ["name", "url", "path"]


def test_the_policy_key_is_a_validated_bool() -> None:
    validate({"environment": {"allow_direct_references": True}})
    with pytest.raises(PolicyError, match="allow_direct_references"):
        validate({"environment": {"allow_direct_references": "yes please"}})


def test_missing_distribution_is_read_from_pips_output() -> None:
    out = (
        "ERROR: Could not find a version that satisfies the requirement foo-bar>=2 (from versions: none)\n"
        "ERROR: No matching distribution found for foo-bar>=2\n"
    )
    assert missing_distribution(out) == "foo-bar>=2"
    assert missing_distribution("ERROR: HTTP error 500") is None


def _tar(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def test_build_requirements_are_read_from_the_archive(tmp_path: Path) -> None:
    hatch = '[build-system]\nrequires = ["hatchling>=1.2", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
    with_table = _tar(tmp_path / "a-1.0.tar.gz", {"a-1.0/pyproject.toml": hatch, "a-1.0/x/pyproject.toml": "bad"})
    assert archive_build_requires(with_table) == ["hatchling>=1.2", "hatch-vcs"]
    legacy = _tar(tmp_path / "b-1.0.tar.gz", {"b-1.0/setup.py": "raise SystemExit"})
    assert archive_build_requires(legacy) == list(DEFAULT_BUILD_REQUIRES)
    (tmp_path / "c-1.0.tar.gz").write_bytes(b"not an archive")
    assert archive_build_requires(tmp_path / "c-1.0.tar.gz") == list(DEFAULT_BUILD_REQUIRES)


def test_pick_sdist_takes_the_newest_acceptable_archive() -> None:
    cands = [
        Candidate("pkg-1.0.tar.gz", "u1"),
        Candidate("pkg-2.0.tar.gz", "u2", yanked=True),
        Candidate("pkg-1.5.zip", "u3"),
        Candidate("pkg-1.7-py3-none-any.whl", "u4"),
        Candidate("pkg-1.6.tar.gz", "u5", requires_python=">=3.99"),
        Candidate("pkg-3.0rc1.tar.gz", "u6"),
        Candidate("other-9.0.tar.gz", "u7"),
    ]
    assert pick_sdist(cands, Requirement("pkg"), "3.11.2") == cands[2]
    assert pick_sdist(cands, Requirement("pkg<1.5"), "3.11.2") == cands[0]
    assert pick_sdist(cands, Requirement("pkg>=4"), "3.11.2") is None


def test_html_links_keep_hashes_and_flags() -> None:
    page = (
        '<a href="../files/pkg-1.0.tar.gz#sha256=abc" data-requires-python="&gt;=3.8">pkg-1.0.tar.gz</a>'
        '<a href="pkg-0.9.tar.gz" data-yanked="">old</a>'
    )
    first, second = parse_simple_html(page, "http://h/simple/pkg/")
    assert (first.url, first.sha256, first.requires_python) == ("http://h/simple/files/pkg-1.0.tar.gz", "abc", ">=3.8")
    assert second.yanked and second.filename == "pkg-0.9.tar.gz"


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real HTTP server on 127.0.0.1: a PEP 691 JSON project page for `jsonpkg`, PEP 503 HTML for `htmlpkg`."""
    root = tmp_path / "index"
    root.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            page = root / self.path.strip("/") / "page.json"
            accept = self.headers.get("Accept", "")
            if page.is_file() and "application/vnd.pypi.simple.v1+json" in accept:
                body = page.read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", root
    finally:
        server.shutdown()
        server.server_close()


async def test_sources_come_from_the_simple_api_as_files(index: tuple[str, Path], tmp_path: Path) -> None:
    url, root = index
    files = root / "files"
    files.mkdir()
    good = _tar(files / "jsonpkg-1.1.tar.gz", {"jsonpkg-1.1/setup.py": "raise SystemExit('never run')"})
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    (root / "simple" / "jsonpkg").mkdir(parents=True)
    listing = {
        "meta": {"api-version": "1.0"},
        "name": "jsonpkg",
        "files": [
            {"filename": "jsonpkg-1.1.tar.gz", "url": "../../files/jsonpkg-1.1.tar.gz", "hashes": {"sha256": digest}},
            {"filename": "jsonpkg-2.0.tar.gz", "url": "../../files/jsonpkg-2.0.tar.gz", "hashes": {}, "yanked": True},
        ],
    }
    (root / "simple" / "jsonpkg" / "page.json").write_text(json.dumps(listing))
    _tar(files / "htmlpkg-0.3.tar.gz", {"htmlpkg-0.3/setup.py": ""})
    (root / "simple" / "htmlpkg").mkdir()
    (root / "simple" / "htmlpkg" / "index.html").write_text(
        '<a href="../../files/htmlpkg-0.3.tar.gz#sha256=0000">htmlpkg-0.3.tar.gz</a>'
    )
    fetcher = SourceFetcher(Sources(index_urls=(url,)), tmp_path / "dest")
    got = await fetcher.sdist("jsonpkg>=1", "3.11.2")
    assert got.name == "jsonpkg-1.1.tar.gz" and got.read_bytes() == good.read_bytes()
    with pytest.raises(DependencyError, match="sha256 does not match"):
        await fetcher.sdist("htmlpkg", "3.11.2")
    assert not (tmp_path / "dest" / "htmlpkg-0.3.tar.gz").exists()
    with pytest.raises(DependencyError, match="no source archive in"):
        await fetcher.sdist("absent", "3.11.2")


async def test_find_links_folders_come_first_and_no_index_means_none(tmp_path: Path) -> None:
    links = tmp_path / "links"
    links.mkdir()
    _tar(links / "local_pkg-0.1.tar.gz", {"local_pkg-0.1/setup.py": ""})
    sources = Sources(find_links=(str(links),), index_urls=("http://127.0.0.1:9/simple",), no_index=True)
    got = await SourceFetcher(sources, tmp_path / "dest").sdist("local-pkg", None)
    assert got == tmp_path / "dest" / "local_pkg-0.1.tar.gz"
    with pytest.raises(DependencyError, match=r"no source archive in .*links$"):
        await SourceFetcher(sources, tmp_path / "dest").sdist("other", None)


async def test_path_references_must_stay_inside_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "libs" / "inner").mkdir(parents=True)
    (repo / "libs" / "inner" / "setup.py").write_text("")
    (repo / "libs" / "inner" / ".git").mkdir()
    fetcher = SourceFetcher(Sources(), tmp_path / "dest")
    packed = await fetcher.direct(classify("inner @ file:./libs/inner"), repo)
    with tarfile.open(packed) as tf:
        assert sorted(tf.getnames()) == ["inner", "inner/setup.py"]
    for outside in ("../../etc", "/etc/passwd", "pkg @ file:///root/.ssh/id_rsa"):
        with pytest.raises(DependencyError, match="outside the repository"):
            await fetcher.direct(classify(outside), repo)
    with pytest.raises(DependencyError, match="names the repository itself"):
        await fetcher.direct(classify("self @ file:."), repo)


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real `git daemon` on 127.0.0.1 exporting the bare repositories under one folder."""
    base = tmp_path / "git-served"
    base.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = ["git", "daemon", "--reuseaddr", "--export-all", f"--base-path={base}", "--listen=127.0.0.1"]
    proc = subprocess.Popen([*argv, f"--port={port}", str(base)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as conn:
            if conn.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    try:
        yield f"git://127.0.0.1:{port}", base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _served_package(base: Path, tmp_path: Path) -> None:
    """A bare repo `vcs-pkg.git`: tag v1 has double(); the later commit breaks it."""
    work = make_git_repo(
        tmp_path / "vcs-work",
        {
            "setup.py": "from setuptools import setup\nsetup(name='vcs-pkg', version='1.0', packages=['vcs_pkg'])\n",
            "vcs_pkg/__init__.py": "def double(x):\n    return 2 * x\n",
        },
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "tag", "v1"], cwd=work, check=True)
    (work / "vcs_pkg" / "__init__.py").write_text("raise ImportError('not v1')\n")
    subprocess.run([*git, "commit", "-qam", "later"], cwd=work, check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(base / "vcs-pkg.git")], check=True)


async def test_git_references_are_checked_out_as_files_over_network_transports_only(
    git_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, base = git_server
    _served_package(base, tmp_path)
    fetcher = SourceFetcher(Sources(), tmp_path / "dest")
    packed = await fetcher.direct(classify(f"vcs-pkg @ git+{url}/vcs-pkg.git@v1"), None)
    with tarfile.open(packed) as tf:
        assert sorted(tf.getnames()) == [
            "vcs-pkg",
            "vcs-pkg/setup.py",
            "vcs-pkg/vcs_pkg",
            "vcs-pkg/vcs_pkg/__init__.py",
        ]
        member = tf.extractfile("vcs-pkg/vcs_pkg/__init__.py")
        assert member is not None and b"2 * x" in member.read()
    for refused, reason in (
        (f"x @ git+file://{base}/vcs-pkg.git", "git over file"),
        ("x @ git+ssh://git@example.invalid/x.git", "git over ssh"),
        ("x @ hg+https://example.invalid/x", "only git"),
    ):
        with pytest.raises(DependencyError, match=reason):
            await fetcher.direct(classify(refused), None)


async def test_an_allowed_git_dependency_is_built_and_installed_in_the_sandbox(
    git_server: tuple[str, Path], tmp_path: Path
) -> None:
    problem = available_backends()["bwrap"]
    if problem is not None:
        pytest.skip(f"bwrap backend unavailable: {problem}")
    if not any(WHEELHOUSE.glob("setuptools-*.whl")):
        pytest.skip(f"no setuptools wheel in {WHEELHOUSE} (run `make wheelhouse`)")
    url, base = git_server
    _served_package(base, tmp_path)
    spec = EnvironmentSpec(deps=(*BASE_TEST_DEPS, f"vcs-pkg @ git+{url}/vcs-pkg.git@v1"), python_path=(".",))
    with pytest.raises(EnvironmentError_, match="allow_direct_references"):
        await build_environment(spec, tmp_path / "cache", python=Path("/usr/bin/python3"))
    env = await build_environment(
        spec, tmp_path / "cache", python=Path("/usr/bin/python3"), allow_direct_references=True
    )
    ws = make_git_repo(
        tmp_path / "ws", {"test_it.py": "import vcs_pkg\n\ndef test_v1():\n    assert vcs_pkg.double(2) == 4\n"}
    )
    async with make_sandbox("bwrap", SandboxSpec(workspace=ws, mounts=env.mounts)) as sb:
        run = await TestSuite(env, timeout=120).run(sb, [])
    assert run.tests == {"test_it.py::test_v1": "passed"}, run.result.output[-2000:]


async def test_index_credentials_never_show_in_messages(tmp_path: Path) -> None:
    sources = Sources(index_urls=("http://user:s3cr3t-token@127.0.0.1:9/simple",))
    with pytest.raises(DependencyError) as info:
        await SourceFetcher(sources, tmp_path, timeout=5).sdist("anything", None)
    assert "s3cr3t-token" not in str(info.value) and "***@127.0.0.1:9" in str(info.value)
