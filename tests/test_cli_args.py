"""The command line's contract: relative paths, numeric ranges (exit 2), one JSON document even on a crash,
and text output that is never hard-wrapped when it goes to a pipe or a file."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import bot.cli.job
from bot.cli import main
from bot.cli.job import print_text_result
from tests.test_cli import ISSUE, REPROBOT, calc_repo


def run(*args: str | Path, data: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The console script as a user runs it, with a private data dir."""
    env = {**os.environ, "REPROBOT_DATA_DIR": str(data)}
    return subprocess.run([REPROBOT, *map(str, args)], capture_output=True, text=True, timeout=600, env=env, cwd=cwd)


def one_json(stdout: str) -> dict[str, Any]:
    """stdout must be exactly one JSON document."""
    assert stdout.count("\n") == 1 and stdout.endswith("\n"), f"not one JSON line: {stdout[:500]!r}"
    doc = json.loads(stdout)
    assert isinstance(doc, dict)
    return doc


@pytest.fixture
def data_dir(tmp_path: Path, env_cache: Path) -> Path:
    """A private data dir that shares the session's environment cache."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").symlink_to(env_cache)
    return data


@pytest.mark.parametrize(
    ("args", "option", "allowed"),
    [
        (["fix", "--trajectories", "0"], "--trajectories/-M", "from 1 to 32"),
        (["fix", "-M", "-1"], "--trajectories/-M", "from 1 to 32"),
        (["fix", "-M", "33"], "--trajectories/-M", "from 1 to 32"),
        (["fix", "-M", "two"], "--trajectories/-M", "from 1 to 32"),
        (["fix", "--timeout", "0"], "--timeout", "from 1 to 7200"),
        (["reproduce", "--timeout", "nan"], "--timeout", "from 1 to 7200"),
        (["reproduce", "--timeout", "inf"], "--timeout", "from 1 to 7200"),
    ],
)
def test_bad_numbers_for_fix_and_reproduce_exit_2_with_the_range(
    tmp_path: Path, data_dir: Path, args: list[str], option: str, allowed: str
) -> None:
    repo = calc_repo(tmp_path / "calc")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    proc = run(*args, "--repo", repo, "--issue", issue, data=data_dir)
    assert proc.returncode == 2, proc.stderr
    assert f"argument {option}: must be" in proc.stderr and allowed in proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    with_json = run(*args, "--repo", repo, "--issue", issue, "--json", data=data_dir)
    doc = one_json(with_json.stdout)
    assert with_json.returncode == 2 and doc["status"] == "error" and allowed in doc["reasons"][0]
    assert not (data_dir / "reprobot.db").exists(), "a usage error does no work"


@pytest.mark.parametrize(
    ("args", "allowed"),
    [
        (["eval", "--bench", "b", "-M", "0"], "from 1 to 32"),
        (["eval", "--bench", "b", "--jobs", "0"], "from 1 to 64"),
        (["eval", "--bench", "b", "--k", "1,0,M"], "from 1 to 32"),
        (["eval", "--bench", "b", "--k", "one"], "from 1 to 32"),
        (["serve", "--port", "0"], "from 1 to 65535"),
        (["serve", "--port", "65536"], "from 1 to 65535"),
        (["serve", "--workers", "-1"], "from 0 to 64"),
        (["worker", "--concurrency", "0"], "from 1 to 64"),
        (["env", "test", "--repo", ".", "--timeout", "-5"], "from 1 to 86400"),
        (["env", "test", "--repo", ".", "--memory-gb", "0"], "from 0.125 to 1024"),
    ],
)
def test_every_numeric_option_is_range_checked(
    args: list[str], allowed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "must be" in err and allowed in err


def test_an_out_path_that_is_a_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "taken"
    taken.write_text("x")
    assert main(["fix", "--repo", str(tmp_path), "--issue", str(taken), "--out", str(taken), "--json"]) == 2
    out, err = capsys.readouterr()
    assert "exists and is not a folder" in one_json(out)["reasons"][0] and "is not a folder" in err


def test_relative_repo_issue_and_out_paths_work(tmp_path: Path, data_dir: Path) -> None:
    repo = calc_repo(tmp_path / "calc")
    (tmp_path / "issue.md").write_text(ISSUE)
    proc = run("reproduce", "--repo", ".", "--issue", "../issue.md", "--out", "out", "--json", data=data_dir, cwd=repo)
    doc = one_json(proc.stdout)
    assert proc.returncode == 0 and doc["status"] == "reproduced", (doc, proc.stderr[-2000:])
    assert Path(doc["out_dir"]) == repo / "out" and (repo / "out" / "comment.md").is_file()
    assert "Traceback" not in proc.stderr


def test_a_crash_with_json_still_prints_one_error_document(tmp_path: Path) -> None:
    # A data dir that is a file makes the run fail where no error is expected: an escaped exception.
    repo = calc_repo(tmp_path / "calc")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    not_a_dir = tmp_path / "data-file"
    not_a_dir.write_text("")
    proc = run("fix", "--repo", repo, "--issue", issue, "--json", data=not_a_dir)
    doc = one_json(proc.stdout)
    assert proc.returncode == 8 and doc["status"] == "error" and doc["exit_code"] == 8
    assert doc["reasons"][0].startswith("internal error: FileExistsError")
    assert "Traceback" in proc.stderr and "Traceback" not in proc.stdout
    text = run("fix", "--repo", repo, "--issue", issue, data=not_a_dir)
    assert text.returncode == 8 and "internal error" in text.stderr and text.stdout == ""


async def _crash_after_printing(args: Any, settings: Any) -> int:
    print("half a document {")
    os.write(1, b"a child process writing to stdout\n")
    raise RuntimeError("boom")


def test_a_bug_escaping_after_output_leaves_only_the_error_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # Fault injection: the command prints half a document, a child writes to fd 1, then a bug escapes.
    monkeypatch.setattr(bot.cli.job, "run_job_command", _crash_after_printing)
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(tmp_path / "data"))
    assert main(["fix", "--repo", str(tmp_path), "--issue", str(tmp_path / "i.md"), "--json"]) == 8
    out, err = capfd.readouterr()
    assert one_json(out)["reasons"] == ["internal error: RuntimeError: boom"]
    assert "a child process writing to stdout" in err and "RuntimeError: boom" in err


def test_text_output_is_never_wrapped() -> None:
    long_line = "| reviewer | verdict | " + "a long reason that must stay on its markdown table row " * 4 + "|"
    body = f"## Fix for issue x: title\n\n{long_line}\n\n[link](https://example.org/{'p' * 120}) :smile: [b]x[/b]"
    result = {"status": "fixed", "reasons": ["reason [with] brackets " + "w" * 100], "out_dir": "/o/" + "d" * 100}
    sink = io.StringIO()
    print_text_result(result, body, None, file=sink)
    lines = sink.getvalue().splitlines()
    assert long_line in lines and f"[link](https://example.org/{'p' * 120}) :smile: [b]x[/b]" in lines
    assert "  - " + result["reasons"][0] in lines and "output: " + result["out_dir"] in lines


def test_text_output_to_a_pipe_keeps_the_pr_body_verbatim(tmp_path: Path, data_dir: Path) -> None:
    repo = calc_repo(tmp_path / "calc")
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    out = tmp_path / ("a-long-output-folder-name-" * 4)
    proc = run("fix", "--repo", repo, "--issue", issue, "-M", "2", "--out", out, data=data_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    pr = (out / "pr.md").read_text()
    assert max(map(len, pr.splitlines())) > 80, "the PR body has lines a wrap at 80 columns would break"
    assert pr.strip() in proc.stdout and f"output: {out}\n" in proc.stdout


async def _print_two_documents(args: Any, settings: Any) -> int:
    print(json.dumps({"status": "fixed"}))
    print(json.dumps({"status": "fixed"}))
    return 0


def test_output_that_is_not_one_document_becomes_an_error_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bot.cli.job, "run_job_command", _print_two_documents)
    monkeypatch.setenv("REPROBOT_DATA_DIR", str(tmp_path / "data"))
    assert main(["reproduce", "--repo", str(tmp_path), "--issue", str(tmp_path / "i.md"), "--json"]) == 8
    out, err = capfd.readouterr()
    assert "did not print one JSON document" in one_json(out)["reasons"][0] and '"fixed"' in err


def test_version_and_verbosity_after_any_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import build_parser

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("reprobot ")
    parser = build_parser()
    for argv in (["fix", "--repo", "r", "--issue", "i"], ["env", "detect", "--repo", "r"], ["doctor"]):
        assert parser.parse_args(argv).verbose is False
        assert parser.parse_args([*argv, "-v"]).verbose is True
        assert parser.parse_args([*argv, "-q"]).quiet is True
        assert parser.parse_args(["-v", *argv]).verbose is True  # the top-level flag still works
    with pytest.raises(Exception, match="not allowed with"):
        parser.parse_args(["doctor", "-v", "-q"])


def test_serve_prints_one_start_line_with_its_address(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "REPROBOT_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.Popen(
        [REPROBOT, "serve", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"reprobot serve: listening on http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
