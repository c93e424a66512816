"""Source-only dependency chains: each revealed dependency is fetched and built in the sandbox, in bounded rounds."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from sandboxes import pyenv
from sandboxes.base import SandboxSpec
from sandboxes.environment import BASE_TEST_DEPS, EnvironmentError_, EnvironmentSpec, TestRunner, build_environment
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
        run = await TestRunner(env, timeout=120).run(sb, [])
    assert run.tests == {"test_it.py::test_chain": "passed"}, run.result.output[-2000:]
    assert not list((tmp_path / "cache" / "envs").glob("*.work")), "the build's scratch wheelhouse is removed"


async def test_the_rounds_are_bounded(chain: EnvironmentSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # top-pkg alone takes 4 rounds (download, its build requirements, its build, download again).
    monkeypatch.setattr(pyenv, "MAX_ROUNDS", 4)
    with pytest.raises(EnvironmentError_, match="still unresolved after 4 download/build rounds"):
        await build_environment(chain, tmp_path / "cache", python=Path("/usr/bin/python3"))
    leftovers = list((tmp_path / "cache" / "envs").glob("*.build-*"))
    assert leftovers == [], "a failed build leaves no staging folder behind"
