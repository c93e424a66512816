"""Detection for real-world Python projects: setup.py/setup.cfg, requirement file names, pytest settings and era,
the interpreter, optional stacks. Every example is a small project of its own, written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxes.envspec import detect_spec, requirement_files
from sandboxes.interpreters import Interpreter, available_interpreters, choose_interpreter
from sandboxes.pytest_config import (
    PytestConfig,
    SuiteSignals,
    pytest_requirement,
    read_pytest_config,
    sanitize_addopts,
    scan_suite,
)
from sandboxes.setup_meta import read_setup_metadata
from tests.test_envspec import write

PY311 = [Interpreter((3, 11), "/usr/bin/python3.11")]

SETUP_PY = """
import sys
from setuptools import setup
import mypkg

open(MARKER, "w").write("setup.py ran")  # never reached: setup.py is read, not run

base = ['requests>=2.3', "Pygments>=1.5"]
install_requires = base + ['six']
install_requires.append('idna')
tests_require = ['pytest-httpbin', 'mock']
if sys.version_info < (3,):
    install_requires.append('py2-only-backport')

setup(
    name='mypkg',
    version=mypkg.__version__,
    install_requires=install_requires,
    tests_require=tests_require,
    extras_require={
        'testing': ['freezegun'],
        'docs': ['sphinx'],
        ':sys_platform == "win32"': ['colorama'],
    },
    python_requires='>=3.6',
    classifiers=['Programming Language :: Python :: 3.6', 'Programming Language :: Python :: 3.7'],
)
"""


def test_setup_py_is_read_statically_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    write(
        tmp_path,
        {
            "setup.py": SETUP_PY.replace("MARKER", repr(str(marker))),
            "mypkg/__init__.py": "__version__ = '1.4.0'\n",
            "tests/test_x.py": "def test_x():\n    pass\n",
        },
    )
    meta = read_setup_metadata(tmp_path)
    assert meta.install_requires == ("requests>=2.3", "Pygments>=1.5", "six", "idna")
    assert meta.tests_require == ("pytest-httpbin", "mock")
    assert meta.python_requires == ">=3.6" and meta.version == "1.4.0"
    spec = detect_spec(tmp_path, interpreters=PY311, default_python=Path("/usr/bin/python3.11"))
    assert {"requests>=2.3", "Pygments>=1.5", "six", "idna", "pytest-httpbin", "mock", "freezegun"} <= set(spec.deps)
    assert 'colorama; sys_platform == "win32"' in spec.deps, "marker-only extras become conditional requirements"
    assert "sphinx" not in spec.deps and "py2-only-backport" not in spec.deps
    assert spec.project == ("mypkg", "1.4.0")
    assert not marker.exists(), "setup.py must never be executed"


def test_setup_cfg_options_and_extras(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.cfg": "[metadata]\nname = cfgpkg\nversion = 0.3\nclassifiers =\n"
            "    Programming Language :: Python :: 3.9\n\n"
            "[options]\npython_requires = >=3.8\ninstall_requires =\n    attrs>=20\n"
            "    importlib-metadata; python_version < '3.8'\ntests_require = hypothesis\n\n"
            "[options.extras_require]\ntest =\n    freezegun\n    pytest-mock\nlint = flake8\n",
            "setup.py": "import setuptools\nsetuptools.setup()\n",
        },
    )
    spec = detect_spec(tmp_path)
    assert {"attrs>=20", "importlib-metadata; python_version < '3.8'", "hypothesis", "freezegun", "pytest-mock"} <= set(
        spec.deps
    )
    assert "flake8" not in spec.deps
    assert spec.project == ("cfgpkg", "0.3")


def test_every_common_requirement_file_name_is_read_and_includes_followed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup(name='x')\n",
            "test_requirements.txt": "-r requirements/base.txt\nfreezegun\n",
            "requirements/base.txt": "six\n",
            "requirements_test.txt": "responses\n",
            "dev-requirements.txt": "mock\n",
            "requirements-ci.txt": "pytest-mock\n",
            "requirements/testing.txt": "pytest-asyncio\n",
            "requirements-docs.txt": "sphinx\n",
            "docs/requirements.txt": "sphinx-rtd-theme\n",
        },
    )
    found = requirement_files(tmp_path)
    assert {"test_requirements.txt", "requirements_test.txt", "dev-requirements.txt", "requirements-ci.txt"} <= set(
        found
    )
    assert "requirements/testing.txt" in found and "requirements-docs.txt" not in found
    deps = set(detect_spec(tmp_path).deps)
    assert {"freezegun", "six", "responses", "mock", "pytest-mock", "pytest-asyncio"} <= deps
    assert not {"sphinx", "sphinx-rtd-theme"} & deps


@pytest.mark.parametrize(
    ("files", "source", "native"),
    [
        ({"pytest.ini": "[pytest]\npython_files = check_*.py\n"}, "pytest.ini", True),
        ({"tox.ini": "[tox]\nenvlist=py3\n[pytest]\npython_files = check_*.py\n"}, "tox.ini [pytest]", True),
        ({"setup.cfg": "[tool:pytest]\npython_files = check_*.py\n"}, "setup.cfg [tool:pytest]", True),
        (
            {"pyproject.toml": '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n'},
            "pyproject.toml [tool.pytest.ini_options]",
            True,
        ),
        # pytest >= 4 refuses [pytest] in setup.cfg: the runner hands these settings over itself.
        ({"setup.cfg": "[pytest]\npython_files = check_*.py\n"}, "setup.cfg [pytest]", False),
    ],
)
def test_pytest_settings_are_found_in_every_config_place(
    tmp_path: Path, files: dict[str, str], source: str, native: bool
) -> None:
    write(tmp_path, {**files, "tests/check_math.py": "def test_add():\n    assert 1 + 1 == 2\n"})
    config = read_pytest_config(tmp_path)
    assert config.source == source and config.native is native
    assert config.get("python_files") == "check_*.py"
    spec = detect_spec(tmp_path)
    assert spec.pytest_source == source
    assert bool(spec.pytest_ini) is (not native)
    if not native:
        assert ("python_files", "check_*.py") in spec.pytest_ini


def test_nose_section_becomes_testpaths_and_nose_collection(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.cfg": "[nosetests]\nwhere = suite\nverbosity = 2\n",
            "suite/utils_tests.py": "from nose.tools import assert_equal\n\ndef test_a():\n    assert_equal(1, 1)\n",
        },
    )
    spec = detect_spec(tmp_path)
    assert spec.pytest_source == "setup.cfg [nosetests]"
    assert ("testpaths", "suite") in spec.pytest_ini
    assert "nose" in spec.deps, "the tests import nose.tools, so nose is installed"
    assert any(d.startswith("pytest<8") or ",<8" in d for d in spec.deps if d.startswith("pytest") and "-" not in d)


def test_addopts_that_change_measurement_are_dropped_the_rest_kept() -> None:
    kept = sanitize_addopts("-vvv --cov-report term-missing --cov=pkg -x -n 4 --tb=native -p no:warnings --maxfail=2")
    assert kept == "-vvv --tb=native -p no:warnings"
    assert sanitize_addopts("--strict-markers -nauto") == "--strict-markers"


def test_addopts_with_cov_installs_the_plugin_and_is_overridden(tmp_path: Path) -> None:
    config = "[tool:pytest]\naddopts = -vvv --cov=pkg\n"
    write(tmp_path, {"setup.cfg": config, "tests/test_a.py": "def test_a(): pass\n"})
    spec = detect_spec(tmp_path)
    assert "pytest-cov" in spec.deps
    assert spec.pytest_overrides == (("addopts", "-vvv"),)


NOSE_STYLE = """
class TestThing:
    def setup(self):
        self.value = 1

    def test_value(self):
        assert self.value == 1
"""

YIELD_TEST = """
def check(x):
    assert x

def test_many():
    for x in (1, 2):
        yield check, x
"""

FIXTURE_YIELD = """
import pytest

@pytest.fixture
def thing():
    yield 1

def test_uses(thing):
    assert thing
"""


@pytest.mark.parametrize(
    ("source", "signal"),
    [(NOSE_STYLE, "nose_fixtures"), (YIELD_TEST, "yield_tests"), (FIXTURE_YIELD, None)],
)
def test_suite_era_signals(tmp_path: Path, source: str, signal: str | None) -> None:
    write(tmp_path, {"tests/test_era.py": source})
    signals = scan_suite(tmp_path, read_pytest_config(tmp_path))
    flags = {"nose_fixtures": signals.nose_fixtures, "yield_tests": signals.yield_tests}
    assert {k for k, v in flags.items() if v} == ({signal} if signal else set())


def test_pytest_version_fits_interpreter_pins_and_era() -> None:
    none = SuiteSignals()
    nose = SuiteSignals(nose_fixtures=True)
    config = PytestConfig()
    assert pytest_requirement([], none, config, (3, 11)) == ("pytest", [])
    req, notes = pytest_requirement([], nose, config, (3, 11))
    assert req == "pytest<8,>=7.1" and notes == []
    # The project's pin wins over the era when both fit the interpreter.
    assert pytest_requirement(["==7.4.4"], nose, config, (3, 11))[0] == "pytest<8,==7.4.4,>=7.1"
    # Yield tests need pytest < 4, which cannot run on 3.11: the newest that can is used, and the report says so.
    req, notes = pytest_requirement([], SuiteSignals(yield_tests=True), config, (3, 11))
    assert req == "pytest>=7.1" and "yield tests" in notes[0]
    # A pin older than the interpreter allows is not honoured, and said so.
    req, notes = pytest_requirement(["<4"], none, config, (3, 11))
    assert req == "pytest>=7.1" and "pins pytest <4" in notes[0]
    # minversion from the config is a floor.
    assert pytest_requirement([], nose, PytestConfig(values=(("minversion", "7.2"),)), (3, 11))[0] == (
        "pytest<8,>=7.1,>=7.2"
    )


def test_project_pytest_pin_replaces_the_default(tmp_path: Path) -> None:
    write(tmp_path, {"requirements-test.txt": "pytest==7.4.4\n", "tests/test_era.py": NOSE_STYLE})
    spec = detect_spec(tmp_path, interpreters=PY311, default_python=Path("/usr/bin/python3.11"))
    pytest_reqs = [d for d in spec.deps if d.startswith("pytest") and not d.startswith("pytest-")]
    assert pytest_reqs == ["pytest<8,==7.4.4,>=7.1"]


def test_interpreter_choice() -> None:
    avail = [Interpreter((3, v), f"/usr/bin/python3.{v}") for v in (9, 11, 12)]
    default = avail[1]
    assert choose_interpreter(">=3.12", (), avail, default)[0] == avail[2]
    assert choose_interpreter("", (), avail, default)[0] == default
    classified = ("Programming Language :: Python :: 3.9", "Programming Language :: Python :: 3.10")
    chosen, reason = choose_interpreter(">=3.6", classified, avail, default)
    assert chosen == avail[0] and "classifiers" in reason
    # Classified only up to 3.10, none listed here: the nearest newer one.
    older = ("Programming Language :: Python :: 3.10",)
    assert choose_interpreter("", older, avail, default)[0] == avail[1]
    # Nothing meets requires-python: the configured one is kept, and the reason says so.
    chosen, reason = choose_interpreter(">=3.14", (), avail, default)
    assert chosen == default and "no available interpreter" in reason


def test_available_interpreters_on_host_and_in_the_sandbox_root(tmp_path: Path) -> None:
    host, rootfs = tmp_path / "host", tmp_path / "rootfs"
    for root, versions in ((host, (7, 9, 11)), (rootfs, (11,))):
        (root / "usr" / "bin").mkdir(parents=True)
        for v in versions:
            (root / "usr" / "bin" / f"python3.{v}").write_text("")
        (root / "usr" / "bin" / "python3.11-config").write_text("")
    assert [i.label for i in available_interpreters(host)] == ["3.9", "3.11"], "3.7 is below the runner's tools"
    assert [i.label for i in available_interpreters(host, rootfs)] == ["3.11"], "the sandbox root must have it too"


def test_spec_names_the_chosen_python(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[project]\nname = "p"\nversion = "1"\nrequires-python = ">=3.12"\n'})
    avail = [Interpreter((3, 11), "/usr/bin/python3.11"), Interpreter((3, 12), "/usr/bin/python3.12")]
    spec = detect_spec(tmp_path, interpreters=avail, default_python=Path("/usr/bin/python3.11"))
    assert (spec.python, spec.python_version) == ("/usr/bin/python3.12", "3.12")
    assert ">=3.12" in spec.python_reason


TOX_HEAVY = """
[tox]
envlist = py311

[testenv]
deps =
    pytest-xdist
    pandas
    tensorflow>=2
    responses
commands = pytest
"""


def test_optional_stacks_only_where_tests_import_them(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "tox.ini": TOX_HEAVY,
            "pyproject.toml": '[project]\nname = "lib"\nversion = "1"\n[project.optional-dependencies]\n'
            'all = ["scikit-learn", "pyyaml"]\ntest = ["lib[all]", "hypothesis"]\n',
            "lib/__init__.py": "import yaml\n\ndef load():\n    import sklearn\n",
            "tests/test_lib.py": "import pandas\nimport responses\n\ndef test_x():\n    pass\n",
        },
    )
    spec = detect_spec(tmp_path)
    deps = set(spec.deps)
    assert {"pandas", "responses", "pytest-xdist", "hypothesis"} <= deps, "imported by tests, or a pytest plugin"
    assert "pyyaml" in deps, "the project itself imports it at module level"
    assert not {"tensorflow>=2", "scikit-learn"} & deps, "heavy stacks no test imports stay out"
    assert any("tensorflow>=2" in n and "scikit-learn" in n for n in spec.notes)


def test_an_old_pytest_section_is_handed_over_whole(tmp_path: Path) -> None:
    write(tmp_path, {"setup.cfg": "[pytest]\nxfail_strict = true\ntestpaths = t\naddopts = -x --tb=short\n"})
    spec = detect_spec(tmp_path)
    assert dict(spec.pytest_ini) == {"xfail_strict": "true", "testpaths": "t", "addopts": "--tb=short"}
    assert spec.pytest_overrides == (), "everything goes into the ini reprobot passes with -c"


def test_pytest_pins_for_other_pythons_do_not_combine_with_this_ones(tmp_path: Path) -> None:
    """One pin per Python line, as projects spanning 2.7 and 3.x write them: only this interpreter's applies."""
    pins = 'pytest==4.6.*; python_version == "2.7"\npytest==7.4.*; python_version >= "3.5"\n'
    write(tmp_path, {"requirements.txt": pins, "tests/test_a.py": "def test_a():\n    pass\n"})
    spec = detect_spec(tmp_path, interpreters=PY311, default_python=Path("/usr/bin/python3.11"))
    pytest_reqs = [d for d in spec.deps if d.startswith("pytest") and not d.startswith("pytest-")]
    assert pytest_reqs == ["pytest==7.4.*,>=7.1"]
    assert not any("pins pytest" in note for note in spec.notes), spec.notes


def test_two_wildcard_pins_that_cannot_both_hold_are_not_honoured() -> None:
    req, notes = pytest_requirement(["==4.6.*", "==6.0.*"], SuiteSignals(), PytestConfig(), (3, 11))
    assert req == "pytest>=7.1" and "pins pytest" in notes[0]
