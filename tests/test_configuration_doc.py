"""The settings table is the one truth: Settings' fields, docs/configuration.md and the code's reads all follow it."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from bot.settings.config import Settings, SettingsError, unknown_variables, variables_in_use
from bot.settings.docs import configuration_markdown, main
from bot.settings.table import ROWS, SECTIONS, row_for

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("bot", "agents", "sandboxes", "patch_selectors", "handlers")


def test_the_committed_document_is_the_generated_one() -> None:
    committed = (ROOT / "docs" / "configuration.md").read_text()
    assert committed == configuration_markdown(), "docs/configuration.md is stale: run `make docs`"


def test_every_row_is_in_the_document() -> None:
    text = configuration_markdown()
    for row in ROWS:
        assert f"| `{row.env}` |" in text


def test_main_checks_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "configuration.md"
    stale.write_text("# old\n")
    assert main(["--check", str(stale)]) == 1
    assert main([]) == 0
    stale.write_text(capsys.readouterr().out)
    assert main(["--check", str(stale)]) == 0


def test_every_field_has_a_row_and_every_row_a_field() -> None:
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    rows = {row.field for row in ROWS}
    assert set(fields) == rows
    for row in ROWS:
        f = fields[row.field]
        # Secrets stay out of repr; the table says which fields are secrets.
        assert row.secret == (not f.repr), row.env
        if row.factory is not None:
            assert f.default_factory is row.factory, row.env
        else:
            assert f.default == row.default, row.env


def test_rows_are_well_formed() -> None:
    envs = [row.env for row in ROWS]
    assert len(envs) == len(set(envs))
    for row in ROWS:
        assert row.env.startswith("REPROBOT_") and row.env.upper() == row.env
        assert row.section in SECTIONS and row.doc and "\n" not in row.doc
    assert all(any(row.section == name for row in ROWS) for name in SECTIONS)


def test_defaults_pass_their_own_rules() -> None:
    assert Settings.from_env({}) == Settings()


def test_rows_sharing_a_field_take_the_first_set(tmp_path: Path) -> None:
    pem = tmp_path / "app.pem"
    pem.write_text("from the file")
    from_file = {"REPROBOT_GITHUB_PRIVATE_KEY_PATH": str(pem)}
    assert Settings.from_env(from_file).github_private_key == "from the file"
    both = {**from_file, "REPROBOT_GITHUB_PRIVATE_KEY": "inline"}
    assert Settings.from_env(both).github_private_key == "inline"
    with pytest.raises(SettingsError, match="REPROBOT_GITHUB_PRIVATE_KEY_PATH="):
        Settings.from_env({"REPROBOT_GITHUB_PRIVATE_KEY_PATH": str(tmp_path / "missing.pem")})


def test_prefix_rows_collect_every_name() -> None:
    env = {"REPROBOT_GIT_CREDENTIAL_B": "u:t", "REPROBOT_GIT_CREDENTIAL_A": "t", "REPROBOT_GIT_CREDENTIAL_C": ""}
    assert Settings.from_env(env).git_credentials == (("A", "t"), ("B", "u:t"))
    assert row_for("REPROBOT_GIT_CREDENTIAL_<NAME>").prefix


def test_sections_are_read_only_views() -> None:
    runner = Settings(runner_lease=5.0).section("runner")
    assert runner["runner_lease"] == 5.0 and "mojira_jql" not in runner
    with pytest.raises(TypeError):
        runner["runner_lease"] = 1.0  # type: ignore[index]
    with pytest.raises(KeyError):
        Settings().section("nowhere")


def test_doctor_lists_what_is_set_and_names_unknown_variables() -> None:
    env = {"REPROBOT_WORKERS": "3", "REPROBOT_LLM_API_KEY": "sk-1", "REPROBOT_WROKERS": "2", "PATH": "/bin"}
    settings = Settings.from_env(env)
    assert variables_in_use(settings, env) == {"REPROBOT_WORKERS": "3", "REPROBOT_LLM_API_KEY": "(set)"}
    assert unknown_variables(env) == ["REPROBOT_WROKERS"]
    assert unknown_variables({"REPROBOT_GIT_CREDENTIAL_SHOP": "t"}) == []
    # Listing parses nothing again: a PEM file that the inline key overrides is never read.
    both = {"REPROBOT_GITHUB_PRIVATE_KEY": "pem", "REPROBOT_GITHUB_PRIVATE_KEY_PATH": "/nonexistent.pem"}
    listed = variables_in_use(Settings.from_env(both), both)
    assert listed == {"REPROBOT_GITHUB_PRIVATE_KEY": "(set)", "REPROBOT_GITHUB_PRIVATE_KEY_PATH": "(set)"}


def test_runner_settings_from_the_table() -> None:
    env = {"REPROBOT_RUNNER_TOKEN": "reg", "REPROBOT_RUNNER_CACHE": "/w/cache"}
    settings = Settings.from_env(env)
    assert settings.runner_token == "reg" and "reg" not in repr(settings) and "reg" in settings.secret_values()
    assert settings.runner_cache == Path("/w/cache")


# -- no REPROBOT_* variable is read from the environment outside bot/settings -------------------------------------

#: Files allowed to read REPROBOT_* variables from the environment. Only the settings package: everything else gets
#: its values from Settings or, below bot/, as parameters its caller passes in. Add nothing here without a comment.
ALLOWED = ("bot/settings/",)


def _reprobot_constants(tree: ast.Module) -> set[str]:
    """Module-level names bound to a "REPROBOT_..." string (CACHE_ENV = "REPROBOT_RUNNER_CACHE")."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _names_reprobot(node.value, set()):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _names_reprobot(node: ast.AST, constants: set[str]) -> bool:
    """True when an expression is, or starts with, a REPROBOT_ name: a literal, an f-string, a constant."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.startswith("REPROBOT_")
    if isinstance(node, ast.JoinedStr):
        return bool(node.values) and _names_reprobot(node.values[0], constants)
    if isinstance(node, ast.BinOp):
        return _names_reprobot(node.left, constants)
    return isinstance(node, ast.Name) and node.id in constants


def _is_environ(node: ast.AST) -> bool:
    text = ast.unparse(node)
    return text.endswith("environ") or text.endswith("environb")


def environment_reads(source: str) -> list[str]:
    """Every read of a REPROBOT_* variable from os.environ / os.getenv in `source`, as code text."""
    tree = ast.parse(source)
    constants = _reprobot_constants(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        keys: list[ast.AST] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner, method = node.func.value, node.func.attr
            if (_is_environ(owner) and method in ("get", "pop", "setdefault")) or method == "getenv":
                keys = node.args[:1]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getenv":
            keys = node.args[:1]
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            keys = [node.slice]
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            keys = [node.left]
        if any(_names_reprobot(key, constants) for key in keys):
            found.append(ast.unparse(node))
        if "environ" in source and _is_prefix_scan(node, constants):
            found.append(ast.unparse(node))
    return found


def _is_prefix_scan(node: ast.AST, constants: set[str]) -> bool:
    """`k.startswith("REPROBOT_...")`: a scan of the environment by prefix reads settings too."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    return node.func.attr == "startswith" and bool(node.args) and _names_reprobot(node.args[0], constants)


def test_the_read_finder_finds_reads() -> None:
    source = (
        "import os\nfrom os import getenv\nX = 'REPROBOT_X'\n"
        "a = os.environ.get('REPROBOT_A')\nb = os.environ['REPROBOT_B']\nc = os.getenv(f'REPROBOT_{a}')\n"
        "d = os.environ.get(X)\ne = 'REPROBOT_E' in os.environ\nf = getenv('REPROBOT_F')\n"
        "g = [k for k in os.environ if k.startswith('REPROBOT_G_')]\n"
        "ok = os.environ.get('PATH'); env = {'REPROBOT_RUNNER_OUT': '/o'}\n"
    )
    assert len(environment_reads(source)) == 7


def test_no_reprobot_variable_is_read_outside_the_settings_package() -> None:
    offenders: list[str] = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(ALLOWED):
                continue
            offenders += [f"{rel}: {read}" for read in environment_reads(path.read_text())]
    assert offenders == [], "add a row to bot/settings/table.py and read it from Settings instead"
