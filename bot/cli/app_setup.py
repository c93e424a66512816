"""`reprobot app setup`: register the GitHub App from its manifest in one click, as Probot does, and keep its keys.

A local page on 127.0.0.1 POSTs the manifest to GitHub's "new App" form; GitHub sends the browser back with a
one-time code, which `POST /app-manifests/{code}/conversions` turns into the App's id, private key, webhook
secret and OAuth client. They go to an env file (mode 0600, never overwritten) and are never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import html
import json
import logging
import os
import re
import secrets
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.settings.config import Settings

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_WEB_URL = "https://github.com"
#: Characters an env-file value may hold unquoted (docker compose, systemd and `sh` read them alike).
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9._+/=:-]*")
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>reprobot: register the GitHub App</title></head>
<body>
<h1>Register reprobot's GitHub App</h1>
<p>This sends reprobot's App manifest (least privilege) to GitHub{where}. GitHub asks you to confirm the App's
name, then sends you back here, and <code>reprobot app setup</code> writes the App's credentials to
<code>{env_file}</code>.</p>
<form id="register" action="{action}" method="post">
<input type="hidden" name="manifest" value="{manifest}">
<button type="submit">Create the GitHub App on GitHub</button>
</form>
<script>document.getElementById("register").submit();</script>
</body></html>
"""


class SetupError(RuntimeError):
    """The App could not be registered or its credentials not kept; the message says what to do."""


@dataclass
class CreatedApp:
    """What the manifest conversion returned that the bot keeps (secrets stay out of its repr)."""

    app_id: str
    name: str
    html_url: str

    def __repr__(self) -> str:
        return f"CreatedApp({self.app_id}, {self.name!r})"


def build_manifest(base: dict[str, Any], redirect_url: str, webhook_url: str | None) -> dict[str, Any]:
    """The shipped manifest, with GitHub sent back to this server and webhooks sent where the bot will listen."""
    manifest = json.loads(json.dumps(base))  # a deep copy of plain JSON
    manifest["redirect_url"] = redirect_url
    if webhook_url:
        manifest["hook_attributes"] = {"url": webhook_url, "active": True}
    else:
        # No public address yet: GitHub still makes a webhook secret; the URL is set in the App's settings later.
        manifest["hook_attributes"] = dict(manifest.get("hook_attributes", {}), active=False)
    return manifest


def env_lines(data: dict[str, Any], settings: Settings) -> list[str]:
    """The env file's lines for a converted manifest (the private key as the base64 of its PEM: one line)."""
    values = {
        "REPROBOT_GITHUB_APP_ID": str(data["id"]),
        "REPROBOT_GITHUB_PRIVATE_KEY": base64.b64encode(str(data["pem"]).encode()).decode(),
        "REPROBOT_GITHUB_WEBHOOK_SECRET": str(data.get("webhook_secret") or ""),
        "REPROBOT_GITHUB_CLIENT_ID": str(data["client_id"]),
        "REPROBOT_GITHUB_CLIENT_SECRET": str(data["client_secret"]),
    }
    # A GitHub Enterprise (or test) deployment needs its addresses beside the keys.
    if settings.github_api_url.rstrip("/") != DEFAULT_API_URL:
        values["REPROBOT_GITHUB_API_URL"] = settings.github_api_url
    if settings.github_web_url.rstrip("/") != DEFAULT_WEB_URL:
        values["REPROBOT_GITHUB_WEB_URL"] = settings.github_web_url
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"# GitHub App {data.get('name', '')!r} (id {data['id']}), registered by `reprobot app setup` on {stamp}.",
        "# Secret: keep this file mode 0600 and out of version control.",
    ]
    return lines + [f"{name}={_quoted(value)}" for name, value in values.items()]


def _quoted(value: str) -> str:
    if _PLAIN_VALUE.fullmatch(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def write_env_file(path: Path, lines: list[str]) -> None:
    """Create `path` with mode 0600 and these lines; SetupError when it exists (it is never overwritten)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SetupError(f"{path} exists: not overwritten (move it away, or pass --env-file NEW-PATH)") from None
    except OSError as exc:
        raise SetupError(f"{path} cannot be created: {exc.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(out.fileno(), 0o600)  # exactly 0600, whatever the umask
        out.write("\n".join(lines) + "\n")


async def convert_manifest_code(session: aiohttp.ClientSession, settings: Settings, code: str) -> dict[str, Any]:
    """`POST /app-manifests/{code}/conversions` (no credentials: the one-time code is one); the new App's data."""
    from gidgethub import GitHubException

    from bot.forges.github_client import client

    if not re.fullmatch(r"[A-Za-z0-9_-]{1,200}", code):
        raise SetupError("GitHub sent back a malformed code; run `reprobot app setup` again")
    gh = client(session, settings)
    try:
        data = await gh.post("/app-manifests/{code}/conversions", {"code": code}, data=b"")
    except GitHubException as exc:
        # A code is good once, for an hour: a reload of the callback page, or a slow confirmation, lands here.
        raise SetupError(f"GitHub did not convert the manifest code ({type(exc).__name__}: {exc})") from None
    missing = [k for k in ("id", "pem", "client_id", "client_secret") if not data.get(k)]
    if missing:
        raise SetupError(f"GitHub's answer lacks {', '.join(missing)}")
    return dict(data)


class AppSetup:
    """The local server: `/` sends the manifest to GitHub, `/callback` takes the code back and writes the file."""

    def __init__(
        self,
        settings: Settings,
        *,
        env_file: Path,
        org: str | None = None,
        port: int = 3000,
        webhook_url: str | None = None,
    ) -> None:
        from bot.forges.app_manifest import manifest

        self.settings = settings
        self.env_file = env_file
        self.org = org
        self.port = port
        self.webhook_url = webhook_url
        self.base_manifest = manifest()
        self.state = secrets.token_urlsafe(24)
        self.url = ""
        self.done: asyncio.Future[CreatedApp] = asyncio.get_running_loop().create_future()
        self._runner: web.AppRunner | None = None

    @property
    def action(self) -> str:
        """GitHub's "new App from a manifest" form for the user, or for the organization."""
        web_url = self.settings.github_web_url.rstrip("/")
        where = f"/organizations/{self.org}" if self.org else ""
        return f"{web_url}{where}/settings/apps/new?state={self.state}"

    async def start(self) -> str:
        """Listen on 127.0.0.1 (`port` 0: any free port); returns the page's URL."""
        if self.env_file.exists():
            raise SetupError(f"{self.env_file} exists: not overwritten (move it away, or pass --env-file NEW-PATH)")
        app = web.Application()
        app.router.add_get("/", self._page)
        app.router.add_get("/callback", self._callback)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise SetupError(f"cannot listen on 127.0.0.1:{self.port}: {exc.strerror} (pass --port)") from None
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/"
        return self.url

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()

    def manifest(self) -> dict[str, Any]:
        """The manifest this page sends, GitHub's redirect pointed back here."""
        webhook = self.webhook_url
        if webhook is None and self.settings.public_url:
            webhook = self.settings.public_url.rstrip("/") + "/webhooks/github"
        return build_manifest(self.base_manifest, f"{self.url}callback", webhook)

    async def _page(self, request: web.Request) -> web.Response:
        where = f" for the organization {self.org}" if self.org else ""
        page = _PAGE.format(
            where=html.escape(where),
            env_file=html.escape(str(self.env_file)),
            action=html.escape(self.action, quote=True),
            manifest=html.escape(json.dumps(self.manifest()), quote=True),
        )
        return web.Response(text=page, content_type="text/html", headers={"Cache-Control": "no-store"})

    async def _callback(self, request: web.Request) -> web.Response:
        if not secrets.compare_digest(request.query.get("state", ""), self.state):
            return web.Response(status=403, text="this is not the answer to the request this setup made")
        if self.done.done():
            return web.Response(status=409, text="the App is registered already; this page is done")
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
                data = await convert_manifest_code(session, self.settings, request.query.get("code", ""))
            write_env_file(self.env_file, env_lines(data, self.settings))
        except SetupError as exc:
            self.done.set_exception(exc)
            return web.Response(status=502, text=f"reprobot app setup failed: {exc}")
        created = CreatedApp(str(data["id"]), str(data.get("name", "")), str(data.get("html_url", "")))
        self.done.set_result(created)
        body = (
            f"The GitHub App {created.name} (id {created.app_id}) is registered; its credentials are in "
            f"{self.env_file}. Install it on your repositories: {created.html_url}/installations/new\n"
        )
        return web.Response(text=body)


def next_steps(created: CreatedApp, env_file: Path) -> str:
    """What to do after setup: install the App, then run the bot with the written file (no secret in it)."""
    return (
        f"Registered the GitHub App {created.name!r} (id {created.app_id}); credentials written to {env_file} "
        "(mode 0600).\n"
        f"Install it on your repositories: {created.html_url}/installations/new\n"
        f"Next: set -a && . {env_file} && set +a && reprobot doctor && reprobot serve\n"
    )


async def _setup(args: argparse.Namespace, settings: Settings) -> int:
    setup = AppSetup(settings, env_file=args.env_file, org=args.org, port=args.port, webhook_url=args.webhook_url)
    try:
        url = await setup.start()
    except SetupError as exc:
        print(f"reprobot app setup: {exc}", file=sys.stderr)
        return 2
    print(f"Open {url} in a browser on this machine to register the GitHub App.", flush=True)
    try:
        created = await setup.done
    except SetupError as exc:
        print(f"reprobot app setup: {exc}", file=sys.stderr)
        return 1
    finally:
        await asyncio.sleep(0.2)  # let the browser receive the last page
        await setup.stop()
    print(next_steps(created, args.env_file), end="")
    return 0


def run_setup_command(args: argparse.Namespace, settings: Settings) -> int:
    """`reprobot app setup`: serve the page until GitHub sends the code back and the credentials are written."""
    return asyncio.run(_setup(args, settings))
