"""Setup discovery: policy first, then repo signals per language, then CI workflow steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandboxes.envspec import BASE_TEST_DEPS, ci_test_commands, detect_spec


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


PYPROJECT_SELF_EXTRAS = """
[project]
name = "My_Pkg"
version = "1.2.3"
dependencies = ["six"]
[project.optional-dependencies]
tests = ["hypothesis", "my-pkg[typing]"]
typing = ["mypy>=1"]
docs = ["sphinx"]
"""


def test_python_extras_expand_self_references_instead_of_installing_the_project(tmp_path: Path) -> None:
    spec = detect_spec(write(tmp_path, {"pyproject.toml": PYPROJECT_SELF_EXTRAS}))
    assert spec.language == "python" and spec.report_format == "junit-xml"
    assert set(spec.deps) == {*BASE_TEST_DEPS, "six", "hypothesis", "mypy>=1"}
    assert spec.project == ("My_Pkg", "1.2.3")
    assert spec.test_command == ("python", "-m", "pytest")


def test_python_tox_deps_requirement_includes_and_pkg_info(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.py": "from setuptools import setup\nsetup()\n",
            "PKG-INFO": "Metadata-Version: 2.1\nName: dateish\nVersion: 2.9.0\n\nlong description\n",
            "tox.ini": "[tox]\nenvlist = py311\n\n[testenv]\ndeps =\n    -rci/test.txt\n    freezegun\n"
            "    {env:EXTRA:}\ncommands = pytest\n\n[testenv:docs]\ndeps = sphinx\n",
            "ci/test.txt": "-r base.txt\npytest-cov >= 2.0  # coverage\n",
            "ci/base.txt": "six\n--index-url http://x\n",
            "src/dateish/__init__.py": "",
        },
    )
    spec = detect_spec(tmp_path)
    assert {"freezegun", "pytest-cov >= 2.0", "six"} <= set(spec.deps)
    assert "sphinx" not in spec.deps
    assert spec.project == ("dateish", "2.9.0")
    assert spec.python_path == (".", "src")
    assert "tox.ini" in spec.sources and "setup.py" in spec.sources


def test_policy_wins_over_repo_signals(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[project]\nname='x'\nversion='1'\n", "Makefile": "test:\n\ttrue\n"})
    spec = detect_spec(tmp_path, setup=["pip install -e ."], test="pytest -x tests/unit")
    assert spec.sources[0] == "policy"
    assert spec.install_steps == ("pip install -e .",)
    assert spec.test_command == ("pytest", "-x", "tests/unit")
    assert spec.report_format == "junit-xml"  # still pytest: per-test results come from JUnit XML
    make = detect_spec(tmp_path, test="make check")
    assert make.test_command == ("make", "check") and make.report_format == "exit-code"


@pytest.mark.parametrize(
    ("deps", "command", "fmt"),
    [
        ({"jest": "^29"}, ("npx", "jest"), "jest-json"),
        ({"vitest": "^2"}, ("npx", "vitest"), "jest-json"),
        ({}, ("npm", "test"), "exit-code"),
    ],
)
def test_node_picks_the_runner_and_fetches_without_scripts(
    tmp_path: Path, deps: dict[str, str], command: tuple[str, ...], fmt: str
) -> None:
    pkg = {"name": "x", "scripts": {"test": "node test.js"}, "devDependencies": deps}
    spec = detect_spec(write(tmp_path, {"package.json": json.dumps(pkg)}))
    assert spec.language == "node" and spec.test_command[:2] == command and spec.report_format == fmt
    assert spec.fetch_steps == (("npm install --ignore-scripts",) if deps else ())


@pytest.mark.parametrize(
    ("files", "language", "fmt", "first"),
    [
        ({"go.mod": "module example.com/x\n"}, "go", "go-json", "go"),
        ({"Cargo.toml": "[package]\nname='x'\n"}, "rust", "cargo", "cargo"),
        ({"pom.xml": "<project/>"}, "java", "surefire-xml", "mvn"),
        ({"build.gradle": "", "gradlew": ""}, "java", "surefire-xml", "./gradlew"),
        ({"Makefile": "all:\n\tcc x.c\n\ntest: all\n\t./run-tests\n"}, "make", "exit-code", "make"),
    ],
)
def test_other_languages(tmp_path: Path, files: dict[str, str], language: str, fmt: str, first: str) -> None:
    spec = detect_spec(write(tmp_path, files))
    assert (spec.language, spec.report_format, spec.test_command[0]) == (language, fmt, first)
    assert "{test_id}" in spec.per_test_template or fmt == "exit-code"


WORKFLOW = """
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: ./configure --quiet
      - name: tests
        run: |
          make -C build
          ctest || make test
      - run: echo ${{ matrix.x }} | pytest
"""


def test_ci_workflow_run_steps_are_the_last_resort(tmp_path: Path) -> None:
    write(tmp_path, {".github/workflows/ci.yml": WORKFLOW, "broken.yml": ":"})
    assert ci_test_commands(tmp_path) == ["ctest || make test"]
    spec = detect_spec(tmp_path)
    assert spec.sources == ("ci",) and spec.test_command == ("sh", "-c", "ctest || make test")
    assert spec.ci_commands == ("ctest || make test",)


def test_nothing_to_go_on_is_a_clear_error(tmp_path: Path) -> None:
    write(tmp_path, {"README.md": "hello\n", ".github/workflows/x.yml": "{not: [yaml"})
    with pytest.raises(ValueError, match="no test setup found"):
        detect_spec(tmp_path)


def test_cache_key_changes_with_deps_and_interpreter(tmp_path: Path) -> None:
    a = detect_spec(write(tmp_path / "a", {"requirements.txt": "six\n"}))
    b = detect_spec(write(tmp_path / "b", {"requirements.txt": "six\nattrs\n"}))
    assert a.cache_key("/usr/bin/python3") != b.cache_key("/usr/bin/python3")
    assert a.cache_key("/usr/bin/python3") != a.cache_key("/usr/bin/python3.12")
    assert a.cache_key("/usr/bin/python3") == detect_spec(tmp_path / "a").cache_key("/usr/bin/python3")


def test_the_shared_cache_key_leaves_the_project_name_out(tmp_path: Path) -> None:
    a = detect_spec(
        write(tmp_path / "a", {"pyproject.toml": '[project]\nname="a"\nversion="1"\ndependencies=["six"]\n'})
    )
    b = detect_spec(
        write(tmp_path / "b", {"pyproject.toml": '[project]\nname="b"\nversion="2"\ndependencies=["six"]\n'})
    )
    assert a.project == ("a", "1") and a.deps == b.deps
    assert a.cache_key("/usr/bin/python3") == b.cache_key("/usr/bin/python3")
    assert a.cache_key("/usr/bin/python3", own=True) != b.cache_key("/usr/bin/python3", own=True)
    assert a.cache_key("/usr/bin/python3", own=True) != a.cache_key("/usr/bin/python3")
