"""GitHub's web OAuth flow for the double, in GitHub's real shapes: authorize, access_token, /user, user repos.

The "browser" is signed in on the double as `OAuthState.signed_in` and has already authorized the app, so
GitHub's authorize page redirects straight back to the app with a code (as GitHub does on a second login).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from aiohttp import web

from tests.fakes.github_ops import NOT_FOUND, Reply, op

if TYPE_CHECKING:
    from tests.fakes.github import GitHubDouble

PERMISSIONS = {
    "admin": {"admin": True, "maintain": True, "push": True, "triage": True, "pull": True},
    "write": {"admin": False, "maintain": False, "push": True, "triage": True, "pull": True},
    "read": {"admin": False, "maintain": False, "push": False, "triage": False, "pull": True},
}


@dataclass
class OAuthState:
    """The App's OAuth client, the double's users and their repository permissions, codes and tokens."""

    client_id: str = "Iv1.0123456789abcdef"
    client_secret: str = "oauth-client-secret-for-tests"
    #: login -> {repo full name -> "admin" | "write" | "read"}
    users: dict[str, dict[str, str]] = field(default_factory=dict)
    signed_in: str | None = None
    codes: dict[str, tuple[str, str]] = field(default_factory=dict)
    user_tokens: dict[str, str] = field(default_factory=dict)
    current_user: str | None = None
    exchanges: int = 0

    def add_user(self, login: str, permissions: dict[str, str]) -> None:
        """A GitHub user with a permission on some repositories."""
        self.users[login] = dict(permissions)


def add_oauth_routes(app: web.Application, double: GitHubDouble) -> None:
    """Serve /login/oauth/authorize, /login/oauth/access_token and GET /user on the double."""
    state = double.oauth

    async def authorize(request: web.Request) -> web.StreamResponse:
        q = request.query
        if q.get("client_id") != state.client_id:
            return web.Response(status=404, text="Not Found")
        if state.signed_in is None:
            return web.Response(status=200, text="Sign in to GitHub", content_type="text/html")
        code = secrets.token_hex(10)
        state.codes[code] = (state.signed_in, q.get("redirect_uri", ""))
        sep = "&" if "?" in q.get("redirect_uri", "") else "?"
        return web.Response(
            status=302,
            headers={"Location": f"{q['redirect_uri']}{sep}{urlencode({'code': code, 'state': q.get('state', '')})}"},
        )

    async def access_token(request: web.Request) -> web.StreamResponse:
        form = await request.post()
        state.exchanges += 1
        if form.get("client_id") != state.client_id or form.get("client_secret") != state.client_secret:
            return web.json_response(
                {
                    "error": "incorrect_client_credentials",
                    "error_description": "The client_id and/or client_secret passed are incorrect.",
                }
            )
        found = state.codes.pop(str(form.get("code", "")), None)
        if found is None or (form.get("redirect_uri") and form.get("redirect_uri") != found[1]):
            return web.json_response(
                {"error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."}
            )
        token = "ghu_" + secrets.token_hex(18)
        state.user_tokens[token] = found[0]
        return web.json_response({"access_token": token, "token_type": "bearer", "scope": ""})

    async def user(request: web.Request) -> web.StreamResponse:
        login = state.user_tokens.get(request.headers.get("Authorization", "").split(" ")[-1])
        if login is None:
            return web.json_response({"message": "Requires authentication"}, status=401)
        return web.json_response({"login": login, "id": 5000 + sorted(state.users).index(login), "type": "User"})

    app.router.add_get("/login/oauth/authorize", authorize)
    app.router.add_post("/login/oauth/access_token", access_token)
    app.router.add_get("/user", user)


@op("apps/list-installation-repos-for-authenticated-user")
def user_installation_repos(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    login = d.oauth.current_user
    inst = int(p["installation_id"])
    if login is None:
        return 401, {"message": "Requires authentication"}
    if inst not in d.installations:
        return NOT_FOUND
    grants = d.oauth.users.get(login, {})
    repos = []
    for name in d.installations[inst]:
        if name in grants:
            owner, short = name.split("/")
            repos.append(
                {
                    "id": abs(hash(name)) % 10**6,
                    "full_name": name,
                    "name": short,
                    "owner": {"login": owner},
                    "private": False,
                    "permissions": PERMISSIONS[grants[name]],
                }
            )
    if not repos:
        return NOT_FOUND  # GitHub answers 404 for an installation the user cannot see
    return 200, {"total_count": len(repos), "repositories": repos}
