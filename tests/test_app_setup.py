"""`reprobot app setup` end to end: the manifest flow on the GitHub double, then `reprobot serve` with its keys."""

from __future__ import annotations

import asyncio
import base64
import html
import json
import re
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest

from bot.cli.app_setup import AppSetup, SetupError
from bot.forges.app_manifest import manifest
from bot.settings.config import Settings
from tests.conftest import FIXTURES, require_shared
from tests.fakes.github import GitHubDouble
from tests.gh_env import load_payload
from tests.runner_procs import REPROBOT, _env, free_port, serve_with

ROOT = Path(__file__).resolve().parents[1]


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (comments skipped), as `set -a; . FILE` or docker compose's env_file read them."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))
    return {key: value for key, value in pairs}


def test_the_manifest_ships_in_the_package_and_links_a_page_that_exists() -> None:
    data = manifest()
    assert "workflows" not in data["default_permissions"]
    page = re.search(r"/blob/main/(docs/[\w-]+\.md)$", data["url"])
    assert page is not None and (ROOT / page.group(1)).is_file()
    assert not (ROOT / "deploy" / "app-manifest.yml").exists()


async def _register(double: GitHubDouble, page_url: str) -> str:
    """The browser: open the page, check its form, submit it to GitHub, follow GitHub back; the last page's text."""
    async with aiohttp.ClientSession() as browser:
        async with browser.get(page_url) as resp:
            assert resp.status == 200
            page = await resp.text()
        form = re.search(r'<form id="register" action="([^"]+)" method="post">', page)
        field = re.search(r'<input type="hidden" name="manifest" value="([^"]*)">', page)
        assert form is not None and field is not None, page
        action, sent = html.unescape(form.group(1)), json.loads(html.unescape(field.group(1)))
        assert re.fullmatch(re.escape(f"{double.url}/settings/apps/new?state=") + r"[\w-]{32}", action), action
        assert sent["redirect_url"] == f"{page_url}callback"
        assert sent["hook_attributes"] == {"url": "https://bot.example.org/webhooks/github", "active": True}
        assert sent["default_permissions"] == manifest()["default_permissions"]
        # GitHub answers the form with a redirect to redirect_url?code=...&state=...; the browser follows it.
        async with browser.post(action, data={"manifest": html.unescape(field.group(1))}) as resp:
            assert resp.status == 200, await resp.text()
            assert str(resp.url).startswith(f"{page_url}callback?code=")
            return await resp.text()


async def _setup_process(env: dict[str, str], env_file: Path) -> tuple[asyncio.subprocess.Process, str]:
    """`reprobot app setup` on a free port; the process and the page URL it printed."""
    argv = ["app", "setup", "--port", "0", "--env-file", str(env_file)]
    argv += ["--webhook-url", "https://bot.example.org/webhooks/github"]
    proc = await asyncio.create_subprocess_exec(
        *REPROBOT, *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
    found = re.search(r"Open (http://127\.0\.0\.1:\d+/) in a browser", line)
    assert found is not None, line
    return proc, found.group(1)


async def test_manifest_flow_then_serve_accepts_a_ping_signed_with_the_written_secret(
    tmp_path: Path, settings: Settings
) -> None:
    double = GitHubDouble(tmp_path / "github", require_shared(FIXTURES / "github" / "rest-openapi-subset.json"), "x")
    await double.start()
    try:
        urls = {"REPROBOT_GITHUB_API_URL": double.url, "REPROBOT_GITHUB_WEB_URL": double.url}
        base_env = _env(urls | {"REPROBOT_DATA_DIR": str(tmp_path / "data")})
        env_file = tmp_path / "reprobot.env"
        proc, page_url = await _setup_process(base_env, env_file)
        try:
            done = await _register(double, page_url)
            out, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        assert proc.returncode == 0, err.decode()
        assert double.manifest.refused == [] and double.violations == []
        (app,) = double.manifest.created
        assert app.app_id in done
        printed = out.decode() + err.decode()
        assert f"(id {app.app_id})" in printed and str(env_file) in printed and "/installations/new" in printed
        assert "reprobot serve" in printed  # the next command
        # The file: mode 0600, every value; no secret on the last page or in what was printed.
        assert env_file.stat().st_mode & 0o777 == 0o600
        values = read_env_file(env_file)
        assert values["REPROBOT_GITHUB_APP_ID"] == app.app_id
        assert base64.b64decode(values["REPROBOT_GITHUB_PRIVATE_KEY"]).decode() == app.pem
        assert values["REPROBOT_GITHUB_WEBHOOK_SECRET"] == app.webhook_secret
        assert values["REPROBOT_GITHUB_CLIENT_ID"] == app.client_id
        assert values["REPROBOT_GITHUB_CLIENT_SECRET"] == app.client_secret
        assert values["REPROBOT_GITHUB_API_URL"] == double.url
        for secret in (app.webhook_secret, app.client_secret, values["REPROBOT_GITHUB_PRIVATE_KEY"], "PRIVATE KEY"):
            assert secret not in done and secret not in printed
        # A second setup never overwrites the file.
        s = replace(settings, github_api_url=double.url, github_web_url=double.url)
        with pytest.raises(SetupError, match="exists"):
            await AppSetup(s, env_file=env_file, port=0).start()

        # `reprobot doctor` with the written file: GitHub (the double) knows the App by the written id and key.
        env = _env(values | {"REPROBOT_DATA_DIR": str(tmp_path / "data")})
        doctor = await asyncio.create_subprocess_exec(
            *REPROBOT, "doctor", "--json", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, _ = await doctor.communicate()
        checks = {c["name"]: c for c in json.loads(out)["checks"]}
        assert checks["github app id"]["status"] == "ok", checks["github app id"]
        assert checks["github app key"]["status"] == checks["github webhook secret"]["status"] == "ok"
        assert ("apps/get-authenticated", "/app", 0) in double.calls

        # `reprobot serve` with exactly the written credentials; GitHub now signs with the new App's secret.
        double.webhook_secret = app.webhook_secret
        ping = load_payload("ping", "with-app_id") | {"hook_id": 1}
        with serve_with(env, free_port(), tmp_path / "serve.log") as url:
            status, answer = await double.deliver(f"{url}/webhooks/github", "ping", ping)
            assert 200 <= status < 300, (status, answer)
            # The same body signed with another secret is refused: the written secret is the one checked.
            double.webhook_secret = "not-the-secret"
            status, _ = await double.deliver(f"{url}/webhooks/github", "ping", ping)
            assert status == 401
    finally:
        await double.stop()


async def test_the_organization_form_and_a_refused_code(tmp_path: Path, settings: Settings) -> None:
    double = GitHubDouble(tmp_path / "github", require_shared(FIXTURES / "github" / "rest-openapi-subset.json"), "x")
    await double.start()
    try:
        s = replace(settings, github_api_url=double.url, github_web_url=double.url)
        env_file = tmp_path / "org.env"
        setup = AppSetup(s, env_file=env_file, port=0, org="octo-org")
        page_url = await setup.start()
        try:
            assert setup.action == f"{double.url}/organizations/octo-org/settings/apps/new?state={setup.state}"
            async with aiohttp.ClientSession() as browser:
                # Someone else's redirect (no matching state) is refused before any call to GitHub.
                async with browser.get(f"{page_url}callback?code=abc&state=forged") as resp:
                    assert resp.status == 403
                # A code GitHub does not know (expired, or used already): the setup fails and writes nothing.
                async with browser.get(f"{page_url}callback?code=unknown&state={setup.state}") as resp:
                    assert resp.status == 502
            with pytest.raises(SetupError, match="did not convert"):
                await asyncio.wait_for(setup.done, 10)
        finally:
            await setup.stop()
        assert not env_file.exists()
        assert [c[0] for c in double.calls] == ["apps/create-from-manifest"]
    finally:
        await double.stop()


def test_the_command_line_names_the_file_it_will_not_overwrite(tmp_path: Path) -> None:
    import subprocess

    existing = tmp_path / "reprobot.env"
    existing.write_text("REPROBOT_GITHUB_APP_ID=1\n")
    run = subprocess.run(
        [*REPROBOT, "app", "setup", "--port", "0", "--env-file", str(existing)],
        env=_env({"REPROBOT_DATA_DIR": str(tmp_path / "data")}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "not overwritten" in run.stderr
    assert existing.read_text() == "REPROBOT_GITHUB_APP_ID=1\n"
