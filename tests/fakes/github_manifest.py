"""GitHub's App-manifest flow and App endpoints for the double, from GitHub's documentation.

Web (github.com, outside the REST API; https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest):
the browser POSTs a form whose `manifest` field is the JSON manifest to `/settings/apps/new` (or
`/organizations/ORG/settings/apps/new`), with `?state=`; the signed-in user confirms, and GitHub redirects to the
manifest's `redirect_url` with `?code=...&state=...`. The "browser" here has confirmed already.

REST (shapes in tests/fakes/github_app_ops.json): `apps/create-from-manifest` turns the code (once, within an
hour) into a new App with its id, PEM key, webhook secret and OAuth client; `apps/get-authenticated` answers the
App a JWT was signed for; `issues/create-label` makes a repository label (422 `already_exists` for a second one).
"""

from __future__ import annotations

import functools
import json
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.github_ops import NOT_FOUND, Reply, op

if TYPE_CHECKING:
    from tests.fakes.github import GitHubDouble

PERMISSION_LEVELS = ("read", "write", "admin")
DOCS = "https://docs.github.com/rest"


@functools.cache
def throwaway_pem() -> str:
    """A real RSA key no App has, for workers that must start (the key is parsed at start) but never call GitHub."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@dataclass
class ManifestApp:
    """An App the double knows: made from a manifest, or the double's own."""

    app_id: str
    name: str
    owner: str
    public_key: rsa.RSAPublicKey
    permissions: dict[str, str]
    events: list[str]
    pem: str = ""
    webhook_secret: str = ""
    client_id: str = ""
    client_secret: str = ""


@dataclass
class ManifestState:
    """Manifest codes not yet converted (code -> (manifest, owner)), and the Apps made from manifests."""

    signed_in: str = "octocat"
    codes: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)
    created: list[ManifestApp] = field(default_factory=list)
    #: Manifests the web form refused, with why (a test fails on any).
    refused: list[str] = field(default_factory=list)


def manifest_problems(manifest: Any) -> list[str]:
    """What GitHub would refuse in a manifest (the documented parameters and their types)."""
    if not isinstance(manifest, dict):
        return ["the manifest is not a JSON object"]
    problems = [] if isinstance(manifest.get("url"), str) else ["`url` is required"]
    hooks = manifest.get("hook_attributes")
    if hooks is not None and not (isinstance(hooks, dict) and isinstance(hooks.get("url"), str)):
        problems.append("`hook_attributes.url` is required with hook_attributes")
    if not isinstance(manifest.get("redirect_url"), str):
        problems.append("`redirect_url` is required for the code to come back")
    perms = manifest.get("default_permissions", {})
    if not isinstance(perms, dict) or any(v not in PERMISSION_LEVELS for v in perms.values()):
        problems.append("`default_permissions` must map permissions to read, write or admin")
    events = manifest.get("default_events", [])
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        problems.append("`default_events` must be a list of event names")
    return problems


def add_manifest_routes(app: web.Application, double: GitHubDouble) -> None:
    """Serve GitHub's "register an App from a manifest" form targets on the double."""

    async def new_app(request: web.Request) -> web.StreamResponse:
        form = await request.post()
        try:
            manifest = json.loads(str(form.get("manifest", "")))
        except ValueError:
            manifest = None
        problems = manifest_problems(manifest)
        if problems:
            double.manifest.refused += problems
            return web.Response(status=422, text="; ".join(problems), content_type="text/html")
        owner = request.match_info.get("org", double.manifest.signed_in)
        code = secrets.token_hex(10)
        double.manifest.codes[code] = (manifest, owner)
        query = {"code": code} | ({"state": request.query["state"]} if "state" in request.query else {})
        sep = "&" if "?" in manifest["redirect_url"] else "?"
        raise web.HTTPFound(f"{manifest['redirect_url']}{sep}{urlencode(query)}")

    app.router.add_post("/settings/apps/new", new_app)
    app.router.add_post("/organizations/{org}/settings/apps/new", new_app)


def user(login: str, user_id: int) -> dict[str, Any]:
    """A simple-user object with every field the schema requires."""
    base = f"https://api.github.com/users/{login}"
    urls = ("events", "followers", "following", "gists", "organizations", "received_events", "repos", "starred")
    return {
        "login": login,
        "id": user_id,
        "node_id": f"U_{user_id}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}",
        "gravatar_id": "",
        "url": base,
        "html_url": f"https://github.com/{login}",
        "type": "User",
        "site_admin": False,
        "subscriptions_url": f"{base}/subscriptions",
        **{f"{name}_url": f"{base}/{name}" for name in urls},
    }


def integration(app: ManifestApp) -> dict[str, Any]:
    """The `integration` object GitHub answers for an App."""
    slug = app.name.lower().replace(" ", "-")
    return {
        "id": int(app.app_id),
        "slug": slug,
        "node_id": f"A_{app.app_id}",
        "client_id": app.client_id or f"Iv1.{app.app_id}",
        "owner": user(app.owner, 1),
        "name": app.name,
        "description": None,
        "external_url": "https://example.org",
        "html_url": f"https://github.com/apps/{slug}",
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "permissions": dict(app.permissions),
        "events": list(app.events),
    }


@op("apps/create-from-manifest")
def create_from_manifest(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    found = d.manifest.codes.pop(p["code"], None)  # a code works once
    if found is None:
        return NOT_FOUND
    manifest, owner = found
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    app = ManifestApp(
        app_id=str(next(d.ids)),
        name=str(manifest.get("name") or "app"),
        owner=owner,
        public_key=key.public_key(),
        permissions=dict(manifest.get("default_permissions", {})),
        events=list(manifest.get("default_events", [])),
        pem=pem,
        webhook_secret=secrets.token_hex(20),
        client_id="Iv1." + secrets.token_hex(8),
        client_secret=secrets.token_hex(20),
    )
    d.manifest.created.append(app)
    d.apps[app.app_id] = app
    secrets_ = {"client_secret": app.client_secret, "webhook_secret": app.webhook_secret, "pem": pem}
    return 201, integration(app) | {"client_id": app.client_id} | secrets_


@op("apps/get-authenticated")
def get_authenticated(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    app = d.apps.get(d.current_app or "")
    return (200, integration(app)) if app else NOT_FOUND


@op("issues/create-label")
def create_label(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    if repo is None:
        return NOT_FOUND
    name = str(body["name"])
    if name.lower() in (n.lower() for n in repo.label_defs):
        error = {"resource": "Label", "code": "already_exists", "field": "name"}
        return 422, {"message": "Validation Failed", "errors": [error], "documentation_url": f"{DOCS}/issues/labels"}
    label = {
        "id": next(d.ids),
        "node_id": f"LA_{name}",
        "url": f"https://api.github.com/repos/{repo.full_name}/labels/{name}",
        "name": name,
        "description": body.get("description"),
        "color": str(body.get("color", "ededed")),
        "default": False,
    }
    repo.label_defs[name] = label
    return 201, label
