"""Source-only dependency chains: each revealed dependency is fetched and built in the sandbox, in bounded rounds."""

from __future__ import annotations

import dataclasses
import io
import json
import tarfile
from pathlib import Path

import pytest

from sandboxes import pyenv
from sandboxes.base import SandboxSpec
from sandboxes.environment import (
    BASE_TEST_DEPS,
    BuiltEnvironment,
    EnvironmentError_,
    EnvironmentSpec,
    TestSuite,
    build_environment,
)
from sandboxes.factory import available_backends, make_sandbox
from tests.conftest import WHEELHOUSE, make_git_repo

pytestmark = pytest.mark.timeout(900)


def sdist(folder: Path, name: str, requires: list[str], body: str) -> Path:
    """A setuptools source archive written with tarfile: nothing of it runs here."""
    module = name.replace("-", "_")
    base = f"{module}-1.0"
    setup = (
        "from setuptools import setup\n"
        f"setup(name={name!r}, version='1.0', packages=[{module!r}], install_requires={requires!r})\n"
    )
    files = {"setup.py": setup, f"{module}/__init__.py": body}
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / f"{base}.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return archive


@pytest.fixture
def chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EnvironmentSpec:
    """top-pkg (source only) needs mid-pkg (source only) which needs six (a wheel)."""
    problem = available_backends()["bwrap"]
    if problem is not None:
        pytest.skip(f"bwrap backend unavailable: {problem}")
    if not any(WHEELHOUSE.glob("setuptools-*.whl")):
        pytest.skip(f"no setuptools wheel in {WHEELHOUSE} (run `make wheelhouse`)")
    links = tmp_path / "links"
    sdist(links, "top-pkg", ["mid-pkg"], "import mid_pkg\n\ndef value():\n    return mid_pkg.value() + 1\n")
    sdist(links, "mid-pkg", ["six"], "import six\n\ndef value():\n    return 41 if six.PY3 else 0\n")
    monkeypatch.setenv("PIP_FIND_LINKS", f"{WHEELHOUSE} {links}")
    return EnvironmentSpec(deps=(*BASE_TEST_DEPS, "top-pkg"), python_path=(".",))


async def test_revealed_source_only_dependencies_are_built_in_turn(chain: EnvironmentSpec, tmp_path: Path) -> None:
    env = await build_environment(chain, tmp_path / "cache", python=Path("/usr/bin/python3"))
    ws = make_git_repo(
        tmp_path / "ws", {"test_it.py": "import top_pkg\n\ndef test_chain():\n    assert top_pkg.value() == 42\n"}
    )
    async with make_sandbox("bwrap", SandboxSpec(workspace=ws, mounts=env.mounts)) as sb:
        run = await TestSuite(env, timeout=120).run(sb, [])
    assert run.tests == {"test_it.py::test_chain": "passed"}, run.result.output[-2000:]
    assert not list((tmp_path / "cache" / "envs").glob("*.work")), "the build's scratch wheelhouse is removed"


async def test_the_rounds_are_bounded(chain: EnvironmentSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # top-pkg alone takes 4 rounds (download, its build requirements, its build, download again).
    monkeypatch.setattr(pyenv, "MAX_ROUNDS", 4)
    with pytest.raises(EnvironmentError_, match="still unresolved after 4 download/build rounds"):
        await build_environment(chain, tmp_path / "cache", python=Path("/usr/bin/python3"))
    leftovers = list((tmp_path / "cache" / "envs").glob("*.build-*"))
    assert leftovers == [], "a failed build leaves no staging folder behind"


@pytest.fixture
def pulled_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EnvironmentSpec:
    """outer-lib (source only) needs inner-lib (source only): a project named inner-lib gets itself pulled in."""
    problem = available_backends()["bwrap"]
    if problem is not None:
        pytest.skip(f"bwrap backend unavailable: {problem}")
    if not any(WHEELHOUSE.glob("setuptools-*.whl")):
        pytest.skip(f"no setuptools wheel in {WHEELHOUSE} (run `make wheelhouse`)")
    links = tmp_path / "links"
    sdist(links, "outer-lib", ["inner-lib"], "import inner_lib\n\ndef where():\n    return inner_lib.WHERE\n")
    sdist(links, "inner-lib", [], "WHERE = 'index'\n")
    monkeypatch.setenv("PIP_FIND_LINKS", f"{WHEELHOUSE} {links}")
    return EnvironmentSpec(deps=(*BASE_TEST_DEPS, "outer-lib"), python_path=(".",))


async def run_in(env: BuiltEnvironment, ws: Path) -> dict[str, str]:
    """The statuses of the workspace's tests run against `env` in a bwrap sandbox."""
    async with make_sandbox("bwrap", SandboxSpec(workspace=ws, mounts=env.mounts)) as sb:
        run = await TestSuite(env, timeout=120).run(sb, [])
    assert run.tests, run.result.output[-2000:]
    return run.tests


def env_folders(cache: Path) -> list[Path]:
    return [p for p in (cache / "envs").iterdir() if p.is_dir()]


async def test_projects_with_the_same_dependencies_share_one_environment(
    pulled_in: EnvironmentSpec, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    envs = []
    for name, version in (("alpha", "1.0"), ("beta", "2.0")):
        spec = dataclasses.replace(pulled_in, project=(name, version))
        env = await build_environment(spec, cache, python=Path("/usr/bin/python3"))
        assert env.spec == spec  # each caller gets its own spec back
        test = (
            "import importlib.metadata, outer_lib\n\ndef test_own_metadata():\n"
            f"    assert importlib.metadata.version({name!r}) == {version!r}\n"
            "    assert outer_lib.where() == 'index'\n"
        )
        ws = make_git_repo(tmp_path / name, {"test_it.py": test})
        assert await run_in(env, ws) == {"test_it.py::test_own_metadata": "passed"}
        envs.append(env)
    assert not envs[0].cache_hit and envs[1].cache_hit and envs[0].path == envs[1].path
    assert len(env_folders(cache)) == 1
    assert "inner-lib" in json.loads((envs[0].path / "reprobot-dists.json").read_text())


async def test_a_project_its_dependencies_pull_in_gets_an_environment_of_its_own(
    pulled_in: EnvironmentSpec, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    spec = dataclasses.replace(pulled_in, project=("Inner_Lib", "9.9"))  # any spelling of the name
    env = await build_environment(spec, cache, python=Path("/usr/bin/python3"))
    (site,) = env.path.glob("lib/python3*/site-packages")
    assert not list(site.glob("inner_lib*")), "the index copy of the project is uninstalled"
    assert list(site.glob("outer_lib*"))
    # The shared environment was built first and kept: other projects with these dependencies use it.
    shared = [p for p in env_folders(cache) if p != env.path]
    assert len(shared) == 1 and list(shared[0].glob("lib/python3*/site-packages/inner_lib*"))
    test = (
        "import importlib.metadata, inner_lib, outer_lib\n\ndef test_workspace_copy():\n"
        "    assert inner_lib.WHERE == outer_lib.where() == 'workspace'\n"
        "    assert importlib.metadata.version('inner-lib') == '9.9'\n"
    )
    ws = make_git_repo(tmp_path / "ws", {"test_it.py": test, "inner_lib/__init__.py": "WHERE = 'workspace'\n"})
    assert await run_in(env, ws) == {"test_it.py::test_workspace_copy": "passed"}
    again = await build_environment(spec, cache, python=Path("/usr/bin/python3"))
    assert again.cache_hit and again.path == env.path
    other = await build_environment(
        dataclasses.replace(pulled_in, project=("other", "1.0")), cache, python=Path("/usr/bin/python3")
    )
    assert other.cache_hit and other.path == shared[0]


def test_installed_distributions_are_read_as_files_without_following_links(tmp_path: Path) -> None:
    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    (site / "PyYAML-6.0.dist-info").mkdir(parents=True)
    (site / "PyYAML-6.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: PyYAML\n\nName: not-me\n")
    # A folder name that disagrees with its METADATA: both names count.
    (site / "renamed-5.0.dist-info").mkdir()
    (site / "renamed-5.0.dist-info" / "METADATA").write_text("Name: Original.Name\nVersion: 5.0\n")
    (site / "old_pkg-1.0-py3.11.egg-info").write_text("Metadata-Version: 1.1\nName: Old-Pkg\n")
    # A METADATA that is a link to a host file is not opened; the folder name still counts.
    secret = tmp_path / "secret"
    secret.write_text("Name: leaked\n")
    (site / "linky-1.0.dist-info").mkdir()
    (site / "linky-1.0.dist-info" / "METADATA").symlink_to(secret)
    (site / "not_a_dist").mkdir()
    assert pyenv.installed_distributions(tmp_path / "env") == [
        "linky",
        "old-pkg",
        "original-name",
        "pyyaml",
        "renamed",
    ]
    # A site-packages reached through a link is not read at all.
    (tmp_path / "other" / "lib").mkdir(parents=True)
    (tmp_path / "other" / "lib" / "python3.11").symlink_to(site.parent)
    assert pyenv.installed_distributions(tmp_path / "other") == []


def test_pins_are_loosened_to_their_lower_bound_then_dropped() -> None:
    relax = pyenv.relax_requirement
    assert relax("dateparser==0.7.*", "lower bounds") == "dateparser>=0.7"
    assert relax("simplejson==3.17.2", "lower bounds") == "simplejson>=3.17.2"
    assert relax("sphinx>=1.8,<2", "lower bounds") == "sphinx>=1.8"
    assert relax('pytz==2019.*; python_version >= "3.5"', "lower bounds") == 'pytz>=2019; python_version >= "3.5"'
    assert relax("Foo[bar]~=1.2", "unpinned") == "Foo[bar]"
    assert relax("pytest==6.0.*", "unpinned") == "pytest==6.0.*"  # fitted to the interpreter elsewhere
    assert relax("six", "unpinned") == "six"


async def test_a_pin_that_cannot_be_met_is_loosened_and_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project pins a release its index no longer has: the build goes on with a newer one, and notes it."""
    problem = available_backends()["bwrap"]
    if problem is not None:
        pytest.skip(f"bwrap backend unavailable: {problem}")
    if not any(WHEELHOUSE.glob("setuptools-*.whl")):
        pytest.skip(f"no setuptools wheel in {WHEELHOUSE} (run `make wheelhouse`)")
    links = tmp_path / "links"
    sdist(links, "moved-on", [], "def value():\n    return 1\n")  # only 1.0 exists
    monkeypatch.setenv("PIP_FIND_LINKS", f"{WHEELHOUSE} {links}")
    spec = EnvironmentSpec(deps=(*BASE_TEST_DEPS, "moved-on==0.9"), python_path=(".",))
    env = await build_environment(spec, tmp_path / "cache", python=Path("/usr/bin/python3"))
    ws = make_git_repo(
        tmp_path / "ws", {"test_it.py": "import moved_on\n\ndef test_it():\n    assert moved_on.value()\n"}
    )
    assert await run_in(env, ws) == {"test_it.py::test_it": "passed"}
    assert any("'moved-on==0.9' relaxed to 'moved-on>=0.9'" in n for n in env.spec.notes), env.spec.notes
    # The next job on the same environment hears of it too.
    again = await build_environment(spec, tmp_path / "cache", python=Path("/usr/bin/python3"))
    assert again.cache_hit and again.spec.notes == env.spec.notes
