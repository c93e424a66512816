"""A GitHub double on 127.0.0.1: the REST subset reprobot uses (checked against the OpenAPI subset), git smart
HTTP through `git http-backend` with token checks, App JWT auth, fault injection, and signed webhooks."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import itertools
import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import jwt
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.github_git import branch_exists, git_handler, git_show, seed_bare_repo
from tests.fakes.github_manifest import ManifestApp, ManifestState, add_manifest_routes
from tests.fakes.github_oauth import OAuthState, add_oauth_routes
from tests.fakes.github_ops import BOT, OPS
from tests.fakes.openapi import OpenAPISpec

__all__ = ["BOT", "GitHubDouble"]

#: Operations GitHub authenticates with the App's JWT (not an installation token).
APP_JWT_OPS = ("apps/create-installation-access-token", "apps/get-repo-installation", "apps/get-authenticated")
#: Operations that take no credentials (the manifest code is the credential).
OPEN_OPS = ("apps/create-from-manifest",)
#: Operations the shared subset lacks, described in the project from GitHub's docs; their answers are checked too.
SUPPLEMENT = Path(__file__).with_name("github_app_ops.json")


@dataclass
class Fault:
    """An injected failure: the next `times` calls of operation `op_id` get this response."""

    op_id: str
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    times: int


@dataclass
class HostedRepo:
    """A repository on the double: its bare git repo and its issues, comments, pulls, reactions."""

    full_name: str
    default_branch: str
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: list[dict[str, Any]] = field(default_factory=list)
    pulls: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    collaborators: dict[str, str] = field(default_factory=dict)
    labels: dict[int, list[str]] = field(default_factory=dict)
    #: The repository's labels (issues/create-label), by name.
    label_defs: dict[str, dict[str, Any]] = field(default_factory=dict)


class GitHubDouble:
    """Start with `await double.start()`; `double.violations` lists every request that did not fit the spec."""

    def __init__(self, root: Path, spec_path: Path, webhook_secret: str, app_id: str = "4242") -> None:
        self.root = root
        self.spec = OpenAPISpec(spec_path, SUPPLEMENT)
        self.supplement_ops = {
            op["operationId"] for item in json.loads(SUPPLEMENT.read_text())["paths"].values() for op in item.values()
        }
        self.webhook_secret = webhook_secret
        self.app_id = app_id
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.private_key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        self._public_key = key.public_key()
        #: Apps whose JWTs the double accepts, by id: its own, and any made from a manifest.
        granted = {"issues": "write", "pull_requests": "write", "contents": "write", "metadata": "read"}
        events = ["issues", "issue_comment", "pull_request"]
        self.apps: dict[str, ManifestApp] = {
            app_id: ManifestApp(app_id, "reprobot", "octo", self._public_key, granted, events)
        }
        #: The App whose JWT authenticated the request being answered.
        self.current_app: str | None = None
        self.manifest = ManifestState()
        self.repos: dict[str, HostedRepo] = {}
        self.installations: dict[int, list[str]] = {}
        self.tokens: dict[str, int] = {}
        self.faults: list[Fault] = []
        self.violations: list[str] = []
        self.calls: list[tuple[str, str, int]] = []
        self.ids = itertools.count(1000)
        #: Operations that never answer until `release()` (a hung API); see `hang`.
        self.hanging: set[str] = set()
        self._released = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.oauth = OAuthState()

    # -- lifecycle and setup --------------------------------------------------------------------------------

    async def start(self) -> str:
        """Serve on 127.0.0.1 at a free port; returns the base URL."""
        app = web.Application(client_max_size=50 * 1024 * 1024)
        app.router.add_route("*", "/git/{path:.*}", git_handler(self.root / "git", self.tokens.__contains__, []))
        # GitHub's web OAuth flow (github.com, outside the REST API): see tests/fakes/github_oauth.py.
        add_oauth_routes(app, self)
        # GitHub's web form that registers an App from a manifest: see tests/fakes/github_manifest.py.
        add_manifest_routes(app, self)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        """Shut the server down (hung calls are released first)."""
        self.release()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def git_url(self) -> str:
        """Base of clone URLs (REPROBOT_GITHUB_GIT_URL)."""
        return f"{self.url}/git"

    def add_repo(self, full_name: str, source: Path, installation_id: int = 1, branch: str = "main") -> HostedRepo:
        """Host a repo seeded from the files of `source`, installed under `installation_id`."""
        seed_bare_repo(self.root / "git", full_name, source, branch)
        repo = HostedRepo(full_name, branch)
        self.repos[full_name] = repo
        self.installations.setdefault(installation_id, []).append(full_name)
        return repo

    def add_issue(self, full_name: str, title: str, body: str, user: str = "octocat") -> dict[str, Any]:
        """Open an issue; returns it as the REST API would."""
        repo = self.repos[full_name]
        number = len(repo.issues) + len(repo.pulls) + 1
        issue = {
            "id": next(self.ids),
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "user": {"login": user, "id": 1, "type": "User"},
            "labels": [],
            "html_url": f"https://github.com/{full_name}/issues/{number}",
            "author_association": "OWNER",
        }
        repo.issues[number] = issue
        return issue

    def fail(self, op_id: str, status: int, *, headers: dict[str, str] | None = None, times: int = 1) -> None:
        """Make the next `times` calls of `op_id` answer `status` (e.g. 502, or 403 secondary rate limit)."""
        messages = {403: "You have exceeded a secondary rate limit.", 404: "Not Found", 429: "Too Many Requests"}
        message = messages.get(status, "Server Error")
        self.faults.append(Fault(op_id, status, headers or {}, {"message": message}, times))

    def hang(self, op_id: str) -> None:
        """Make every call of `op_id` hang (no answer, connection kept open) until `release()`."""
        self._released.clear()
        self.hanging.add(op_id)

    def release(self) -> None:
        """Let hung calls go on (they then answer normally) and stop hanging new ones."""
        self.hanging.clear()
        self._released.set()

    def branch_file(self, full_name: str, branch: str, path: str) -> str | None:
        """A file on a branch of a hosted repo."""
        return git_show(self.root / "git", full_name, branch, path)

    def has_branch(self, full_name: str, branch: str) -> bool:
        """Whether a branch was pushed."""
        return branch_exists(self.root / "git", full_name, branch)

    # -- webhooks -------------------------------------------------------------------------------------------

    def sign(self, body: bytes, secret: str | None = None) -> dict[str, str]:
        """The signature headers GitHub adds: HMAC-SHA256 (and the legacy SHA-1) of the body."""
        key = (secret or self.webhook_secret).encode()
        return {
            "X-Hub-Signature-256": "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest(),
            "X-Hub-Signature": "sha1=" + hmac.new(key, body, hashlib.sha1).hexdigest(),
        }

    async def deliver(
        self, url: str, event: str, payload: dict[str, Any], *, delivery_id: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        """POST a webhook to `url` exactly as GitHub does; returns (status, JSON answer)."""
        body = json.dumps(payload).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/5d8e9c1",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
            "X-GitHub-Hook-ID": "123456",
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": self.app_id,
            **self.sign(body),
        }
        async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as resp:
            return resp.status, await resp.json(content_type=None)

    # -- REST -----------------------------------------------------------------------------------------------

    def _auth(self, request: web.Request, op_id: str) -> int | None:
        header = request.headers.get("Authorization", "")
        scheme, _, credential = header.partition(" ")
        if op_id in OPEN_OPS:
            return 0
        if op_id in APP_JWT_OPS:
            # As GitHub does: the `iss` claim names the App, whose public key must verify the signature.
            try:
                issuer = str(jwt.decode(credential, options={"verify_signature": False}).get("iss"))
                app = self.apps.get(issuer)
                if app is None or scheme.lower() != "bearer":
                    return None
                jwt.decode(credential, app.public_key, algorithms=["RS256"])
            except jwt.PyJWTError:
                return None
            self.current_app = issuer
            return 0
        if scheme.lower() in ("token", "bearer") and credential in self.oauth.user_tokens:
            return 0  # a user access token from the OAuth flow: its operations check the user themselves
        return self.tokens.get(credential) if scheme.lower() in ("token", "bearer") else None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        op, params, problems = self.spec.match(request.method, request.path, dict(request.query), body)
        if op is None or problems:
            self.violations += problems
            return web.json_response({"message": "; ".join(problems)}, status=404 if op is None else 422)
        self.calls.append((op.op_id, request.path, 0))
        if op.op_id in self.hanging:
            await self._released.wait()
        self.current_app = None
        if self._auth(request, op.op_id) is None:
            if op.op_id in APP_JWT_OPS:  # GitHub's answer to a JWT it cannot verify for the App it names
                return web.json_response({"message": "A JSON web token could not be decoded"}, status=401)
            return web.json_response({"message": "Bad credentials"}, status=401)
        for fault in self.faults:
            if fault.op_id == op.op_id and fault.times > 0:
                fault.times -= 1
                return web.json_response(fault.body, status=fault.status, headers=fault.headers)
        handler = OPS.get(op.op_id)
        if handler is None:
            self.violations.append(f"{op.op_id}: in the spec but not implemented by the double")
            return web.json_response({"message": "Not Implemented"}, status=501)
        data = json.loads(body) if body.strip() else None
        # Operations for a user token (apps/list-installation-repos-for-authenticated-user) need to know whose.
        self.oauth.current_user = self.oauth.user_tokens.get(request.headers.get("Authorization", "").split(" ")[-1])
        status, answer = handler(self, params, dict(request.query), data)
        if op.op_id in self.supplement_ops:
            self.violations += self.spec.check_response(op, status, answer)
        return web.json_response(answer, status=status)

    def repo_of(self, params: dict[str, str]) -> HostedRepo | None:
        """The hosted repo named by the path parameters."""
        return self.repos.get(f"{params['owner']}/{params['repo']}")

    def content(self, full_name: str, path: str) -> dict[str, Any] | None:
        """A contents-API file object from the default branch."""
        repo = self.repos[full_name]
        text = self.branch_file(full_name, repo.default_branch, path)
        if text is None:
            return None
        encoded = base64.b64encode(text.encode()).decode()
        return {"type": "file", "encoding": "base64", "path": path, "name": Path(path).name, "content": encoded}

    def head_branch(self, full_name: str, head: str) -> str:
        """`owner:branch` or `branch` → branch."""
        return re.sub(r"^[^:]+:", "", head)
