"""The dashboard's routes under /dashboard: login, jobs list and page, deliveries, runners, the stylesheet.

Every answer under /dashboard carries the security headers of bot.dashboard.guard; every POST must come from
the dashboard's own origin.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp_jinja2
import jinja2
from aiohttp import web

from bot.dashboard import auth, guard
from bot.dashboard.render import (
    MOJIRA_FILTERS,
    STEP_FILTERS,
    candidate_points,
    conversation_view,
    diff_css,
    filter_steps,
    job_context,
    mojira_rows,
    step_view,
)
from bot.render.charts import CandidatePoint
from bot.settings.config import Settings
from bot.store import Store
from bot.store.views import RunnerJob, RunnerView

log = logging.getLogger(__name__)

PREFIX = "/dashboard"
#: The login form's field (and the GitHub login's cookie) naming the page to return to once logged in.
_NEXT_FIELD = "next"
_NEXT_COOKIE = "reprobot_next"
#: Steps of one trajectory listed on the job page; a link lists all of them (`?show=<trajectory>`).
STEPS_SHOWN = 100
_SETTINGS: web.AppKey[Settings] = web.AppKey("dashboard_settings", Settings)
_STORE_KEY: web.AppKey[web.AppKey[Store]] = web.AppKey("dashboard_store_key", web.AppKey)

Page = Callable[[web.Request, auth.Viewer], Awaitable[dict[str, Any]]]


def _store(request: web.Request) -> Store:
    return request.app[request.app[_STORE_KEY]]


def _back_to(path: str) -> str:
    """A dashboard page to land on after logging in: `path` when it is one of ours (no open redirect), else ""."""
    ours = path.startswith(tuple(f"{PREFIX}/{page}" for page in ("jobs", "mojira", "runners", "deliveries")))
    return path if ours and not any(c in path for c in "\\\r\n") else ""


def _login_page(request: web.Request, status: int, error: str = "", back: str | None = None) -> web.Response:
    """The login form (`back`: the page to return to; by default the page asked for, when it is a GET)."""
    settings = request.app[_SETTINGS]
    back = _back_to(back if back is not None else request.path_qs if request.method == "GET" else "")
    context = {
        "next": back,
        "error": error,
        "github": auth.oauth_configured(settings),
        "token": bool(settings.dashboard_token),
        "viewer": None,
    }
    return aiohttp_jinja2.render_template("login.html", request, context, status=status)


def _viewer(request: web.Request) -> auth.Viewer | None:
    settings = request.app[_SETTINGS]
    key = auth.session_key(settings)
    header = request.headers.get("Authorization", "")
    scheme, _, credential = header.partition(" ")
    if scheme.lower() == "bearer" and credential and auth.token_matches(settings, credential):
        return auth.Viewer("deployment token", "token", None)
    return auth.viewer_from_session(key, request.cookies.get(auth.SESSION_COOKIE), time.time())


def _page(template: str, page: Page) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A page that needs a viewer: 401 and the login page without one."""

    async def handler(request: web.Request) -> web.StreamResponse:
        viewer = _viewer(request)
        if viewer is None:
            return _login_page(request, 401)
        context = await page(request, viewer)
        context |= {"viewer": viewer, "prefix": PREFIX}
        response = aiohttp_jinja2.render_template(template, request, context)
        response.headers["Cache-Control"] = "no-store"
        return response

    return handler


def _redirect(location: str, status: int = 303) -> web.Response:
    return web.Response(status=status, headers={"Location": location})


def _secure(request: web.Request) -> bool:
    return request.secure or request.headers.get("X-Forwarded-Proto", "") == "https"


def _start_session(request: web.Request, viewer: auth.Viewer, back: str = "") -> web.StreamResponse:
    key = auth.session_key(request.app[_SETTINGS])
    assert key is not None, "a login succeeded, so a login secret is set"
    response = _redirect(_back_to(back) or f"{PREFIX}/jobs")
    response.del_cookie(_NEXT_COOKIE, path=PREFIX)
    response.set_cookie(
        auth.SESSION_COOKIE,
        auth.sign(key, auth.session_data(viewer, time.time())),
        max_age=auth.SESSION_SECONDS,
        httponly=True,
        samesite="Lax",
        secure=_secure(request),
        path=PREFIX,
    )
    response.del_cookie(auth.STATE_COOKIE, path=PREFIX)
    return response


async def login_form(request: web.Request) -> web.StreamResponse:
    """GET /dashboard/login."""
    return _login_page(request, 200)


def _cross_origin(request: web.Request) -> web.Response | None:
    """403 and the login page for a POST that did not come from the dashboard's own pages (CSRF), else None."""
    if guard.same_origin(request, request.app[_SETTINGS]):
        return None
    origin = request.headers.get("Origin")
    log.warning("dashboard: refused a %s %s from origin %r", request.method, request.path, origin)
    return _login_page(request, 403, "This form was not sent from this dashboard's pages.")


async def login_token(request: web.Request) -> web.StreamResponse:
    """POST /dashboard/login: the deployment token (from the dashboard's own login form only: no login CSRF)."""
    refused = _cross_origin(request)
    if refused is not None:
        return refused
    form = await request.post()
    back = str(form.get(_NEXT_FIELD, ""))
    if not auth.token_matches(request.app[_SETTINGS], str(form.get("token", ""))):
        return _login_page(request, 401, "That token is not this deployment's dashboard token.", back)
    return _start_session(request, auth.Viewer("deployment token", "token", None), back)


def _callback_url(settings: Settings) -> str:
    """The OAuth redirect_uri: REPROBOT_PUBLIC_URL's callback (oauth_configured ensures it is set)."""
    url = guard.callback_url(settings, f"{PREFIX}/auth/github/callback")
    assert url is not None, "oauth_configured checks REPROBOT_PUBLIC_URL"
    return url


async def github_start(request: web.Request) -> web.StreamResponse:
    """GET /dashboard/auth/github: off to GitHub's authorize page, with a state bound to this browser."""
    settings = request.app[_SETTINGS]
    if not auth.oauth_configured(settings):
        return _login_page(request, 404, "GitHub login is not configured on this deployment.")
    state = secrets.token_urlsafe(24)
    response = _redirect(auth.authorize_url(settings, _callback_url(settings), state), 302)
    response.set_cookie(
        auth.STATE_COOKIE, state, max_age=600, httponly=True, samesite="Lax", secure=_secure(request), path=PREFIX
    )
    back = _back_to(request.query.get(_NEXT_FIELD, ""))
    if back:
        response.set_cookie(
            _NEXT_COOKIE, back, max_age=600, httponly=True, samesite="Lax", secure=_secure(request), path=PREFIX
        )
    return response


async def github_callback(request: web.Request) -> web.StreamResponse:
    """GET /dashboard/auth/github/callback: check the state, trade the code, keep admins only."""
    settings = request.app[_SETTINGS]
    state, expected = request.query.get("state", ""), request.cookies.get(auth.STATE_COOKIE, "")
    if not auth.oauth_configured(settings):
        return _login_page(request, 404, "GitHub login is not configured on this deployment.")
    if not state or not expected or not secrets.compare_digest(state, expected):
        return _login_page(request, 401, "The login expired or did not start here; please try again.")
    code = request.query.get("code", "")
    if not code:
        return _login_page(request, 401, f"GitHub did not grant the login: {request.query.get('error', 'no code')}")
    store = _store(request)
    try:
        installations = await asyncio.to_thread(store.views.installation_ids)
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            token = await auth.exchange_code(session, settings, code, _callback_url(settings))
            viewer = await auth.admin_viewer(session, settings, token, installations)
    except auth.LoginError as exc:
        return _login_page(request, 403, str(exc))
    log.info("dashboard: %s logged in with GitHub (%d repositories)", viewer.login, len(viewer.repos or ()))
    return _start_session(request, viewer, request.cookies.get(_NEXT_COOKIE, ""))


async def logout(request: web.Request) -> web.StreamResponse:
    """POST /dashboard/logout (from the dashboard's own pages only: another site cannot log its viewer out)."""
    refused = _cross_origin(request)
    if refused is not None:
        return refused
    response = _redirect(f"{PREFIX}/login")
    response.del_cookie(auth.SESSION_COOKIE, path=PREFIX)
    return response


async def jobs_page(request: web.Request, viewer: auth.Viewer) -> dict[str, Any]:
    """GET /dashboard/jobs?repo=&kind=&status=."""
    store = _store(request)
    chosen = {k: (request.query.get(k) or None) for k in ("repo", "kind", "status")}
    if chosen["repo"] is not None and not viewer.may_see(chosen["repo"]):
        chosen["repo"] = None

    def read() -> tuple[list[Any], dict[str, list[str]]]:
        rows = store.views.list_jobs(repo=chosen["repo"], kind=chosen["kind"], status=chosen["status"], limit=200)
        return rows, store.views.filter_choices()

    rows, choices = await asyncio.to_thread(read)
    rows = [r for r in rows if viewer.may_see(r.issue.repo if r.issue else None)]
    choices["repo"] = [r for r in choices["repo"] if viewer.may_see(r)]
    return {"rows": rows, "choices": choices, "chosen": chosen}


def _load_conversation(path: Path) -> list[tuple[str, str]]:
    try:
        return conversation_view(json.loads(path.read_text()))
    except (OSError, ValueError):
        return []


def _epoch(text: str | None) -> float | None:
    """Epoch seconds of a store timestamp (ISO-8601), None when absent or unreadable."""
    try:
        return datetime.fromisoformat(text).timestamp() if text else None
    except ValueError:
        return None


def _progress(job: Any, now: float) -> dict[str, Any] | None:
    """The running job's current stage and how long it has been in it, from the note its pipeline keeps."""
    result = job.result if isinstance(job.result, dict) else {}
    note = result.get("progress") if job.status == "running" else None
    if not isinstance(note, dict):
        return {"stage": "waiting for a worker", "detail": "", "elapsed": 0.0} if job.status == "running" else None
    since = _epoch(str(note.get("since") or ""))
    elapsed = max(now - since, 0.0) if since is not None else 0.0
    return {"stage": str(note.get("stage") or "?"), "detail": str(note.get("detail") or ""), "elapsed": elapsed}


def _trajectory_views(
    store: Store, job_id: int, record: dict[str, Any], settings: Settings, query: dict[str, str]
) -> tuple[list[dict[str, Any]], dict[str, list[CandidatePoint]]]:
    """Each trajectory of the job (steps filtered as asked) and the candidates each tried over time."""
    named = {int(t["db_id"]): t for t in record.get("trajectories", []) if isinstance(t, dict) and t.get("db_id")}
    rows = store.runs.list_trajectories(job_id)
    # The job's clock starts where the record says its first trajectory started (else at the first row).
    origin = None
    for row in rows:
        start = _epoch(row.created_at)
        if row.id in named and start is not None:
            origin = start - float(named[row.id].get("start") or 0.0)
            break
    if origin is None:
        origin = min((_epoch(r.created_at) or 0.0 for r in rows), default=0.0)
    views, series = [], {}
    for t in rows:
        stored = store.runs.get_steps(t.id)
        name = str(named[t.id]["id"]) if t.id in named else f"#{t.id}"
        timed = [((_epoch(s.created_at) or origin) - origin, s.kind, s.content) for s in stored]
        points = candidate_points(timed)
        if points:
            series[name] = points
        # Titles of every step for the filter; the full view (texts, details) only of the steps shown.
        heads = [step_view(s.idx, s.kind, s.content, full=False) for s in stored]
        kept = filter_steps(heads, query.get("steps", "all"), query.get("q", ""))
        shown = len(kept) if query.get("show") == str(t.id) else STEPS_SHOWN
        by_idx = {s.idx: s for s in stored}
        steps = [step_view(h.idx, h.kind, by_idx[h.idx].content) for h in kept[:shown]]
        conversation = []
        if t.id in named and "/" not in name:
            conversation = _load_conversation(settings.data_dir / "trajectories" / f"{name}.json")
        views.append(
            {
                "row": t,
                "name": name,
                "steps": steps,
                "matching": len(kept),
                "total": len(stored),
                "conversation": conversation,
            }
        )
    return views, series


async def job_page(request: web.Request, viewer: auth.Viewer) -> dict[str, Any]:
    """GET /dashboard/jobs/{id}?steps=&q=: the job's record, explained (see templates/job.html)."""
    store = _store(request)
    settings = request.app[_SETTINGS]
    try:
        job_id = int(request.match_info["id"])
    except ValueError:
        raise web.HTTPNotFound(text="no such job") from None
    query = {k: request.query.get(k, "")[:200] for k in ("steps", "q", "show")}
    if query["steps"] not in STEP_FILTERS:
        query["steps"] = "all"

    def read() -> dict[str, Any] | None:
        job = store.jobs.get_job(job_id)
        if job is None:
            return None
        issue = store.views.issue(job.issue_id) if job.issue_id is not None else None
        if not viewer.may_see(issue.repo if issue else None):
            return None
        result = job.result if isinstance(job.result, dict) else {}
        record: dict[str, Any] = result["record"] if isinstance(result.get("record"), dict) else {}
        trajectories, series = _trajectory_views(store, job_id, record, settings, query)
        publications = store.views.publications(issue.id) if issue else []
        return {
            "job": job,
            "issue": issue,
            "record": record,
            "result": result,
            "trajectories": trajectories,
            "series": series,
            "publications": publications,
            "links": _links(issue, result, publications),
        }

    data = await asyncio.to_thread(read)
    if data is None:
        raise web.HTTPNotFound(text="no such job")
    return (
        data
        | job_context(data["job"].status, data["result"], data["record"], data["series"])
        | {
            "progress": _progress(data["job"], time.time()),
            "query": query,
            "step_filters": STEP_FILTERS,
        }
    )


def _links(issue: Any, result: dict[str, Any], publications: list[Any]) -> list[tuple[str, str]]:
    """(label, URL) of the issue, its PR and the status comment, where the forge gives web URLs."""
    links: list[tuple[str, str]] = []
    if issue is not None and issue.url:
        links.append((f"issue {issue.repo}#{issue.number_or_key}", issue.url))
    base = f"https://github.com/{issue.repo}" if issue is not None and issue.forge == "github" else ""
    prs = {str(result["pr"])} if str(result.get("pr") or "").isdigit() else set()
    for pub in publications:
        ref = str(pub.forge_ref)
        if ref.startswith(("http://", "https://")):
            links.append((pub.kind, ref))
        elif pub.kind == "pr" and ref.isdigit():
            prs.add(ref)
        elif base and pub.kind.startswith("status-") and ref.isdigit() and issue is not None:
            what = pub.kind.removeprefix("status-")
            links.append((f"{what} status comment", f"{base}/issues/{issue.number_or_key}#issuecomment-{ref}"))
    if base:
        links += [(f"pull request #{n}", f"{base}/pull/{n}") for n in sorted(prs, key=int)]
    return links


async def mojira_page(request: web.Request, viewer: auth.Viewer) -> dict[str, Any]:
    """GET /dashboard/mojira?route=&triage=&signature=&grouped=&q=: the polled Mojira reports (deployment token)."""
    chosen = {k: request.query.get(k, "").strip()[:200] for k in MOJIRA_FILTERS}
    if viewer.repos is not None:
        # Mojira reports belong to no repository a GitHub viewer administers.
        return {"rows": [], "hidden": True, "chosen": chosen, "routes": []}
    reports = await asyncio.to_thread(_store(request).mojira.recent)
    routes = sorted({r.route for r in reports if r.route})
    return {"rows": mojira_rows(reports, chosen), "hidden": False, "chosen": chosen, "routes": routes}


async def deliveries_page(request: web.Request, viewer: auth.Viewer) -> dict[str, Any]:
    """GET /dashboard/deliveries (every delivery for the token; GitHub viewers see only jobs, not the inbox)."""
    if viewer.repos is not None:
        return {"rows": [], "hidden": True}
    rows = await asyncio.to_thread(_store(request).views.list_deliveries, limit=200)
    return {"rows": rows, "hidden": False}


def visible_runners(rows: list[RunnerView], jobs: list[RunnerJob], viewer: auth.Viewer) -> list[RunnerView]:
    """The runners `viewer` may see, each with only the leases they may see.

    A runner's scope is the set of installations it serves, read from the jobs it took: a GitHub viewer sees a
    runner that served one of their installations, and counts only its leases of those installations. A
    runner that took no job yet serves nobody a GitHub viewer can name: only the deployment token sees it.
    """
    if viewer.repos is None:
        return rows
    served: dict[int, set[int]] = {}
    leases: dict[int, int] = {}
    for job in jobs:
        if job.installation_id is None:
            continue
        served.setdefault(job.runner_id, set()).add(job.installation_id)
        if job.leased and job.installation_id in viewer.installations:
            leases[job.runner_id] = leases.get(job.runner_id, 0) + 1
    # Other tenants' leases are theirs: the count shows only this viewer's.
    return [
        replace(row, leases=leases.get(row.id, 0))
        for row in rows
        if viewer.may_see_installations(served.get(row.id, set()))
    ]


async def runners_page(request: web.Request, viewer: auth.Viewer) -> dict[str, Any]:
    """GET /dashboard/runners: every runner for the token, a GitHub viewer's installations' runners for them."""
    store, now = _store(request), time.time()
    rows, jobs = await asyncio.to_thread(lambda: (store.views.runners(now=now), store.views.runner_jobs(now=now)))
    return {"rows": visible_runners(rows, jobs, viewer), "scoped": viewer.repos is not None}


async def root(request: web.Request) -> web.StreamResponse:
    """GET /dashboard: the jobs list."""
    raise web.HTTPFound(f"{PREFIX}/jobs")


@functools.cache
def _stylesheet() -> str:
    """The dashboard's one stylesheet: its own rules and the diff highlighting's (a file, so CSP needs no inline)."""
    own = resources.files("bot.dashboard").joinpath("templates", "style.css").read_text(encoding="utf-8")
    return f"{own}\n{diff_css()}\n"


async def stylesheet(request: web.Request) -> web.StreamResponse:
    """GET /dashboard/style.css (no login: it holds no data)."""
    return web.Response(text=_stylesheet(), content_type="text/css", headers={"Cache-Control": "max-age=3600"})


async def _dashboard_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Security headers on every answer under /dashboard, whatever produced it (a page, a 404, a redirect)."""
    if request.path == PREFIX or request.path.startswith(f"{PREFIX}/"):
        guard.add_security_headers(response)


def setup_dashboard(app: web.Application, settings: Settings, store_key: web.AppKey[Store]) -> None:
    """Add the dashboard's routes and templates to the web app; the store is read from `app[store_key]`."""
    app[_SETTINGS] = settings
    app[_STORE_KEY] = store_key
    aiohttp_jinja2.setup(
        app, loader=jinja2.PackageLoader("bot.dashboard", "templates"), autoescape=jinja2.select_autoescape()
    )
    app.on_response_prepare.append(_dashboard_headers)
    app.router.add_get(PREFIX, root)
    app.router.add_get(f"{PREFIX}/style.css", stylesheet)
    app.router.add_get(f"{PREFIX}/login", login_form)
    app.router.add_post(f"{PREFIX}/login", login_token)
    app.router.add_post(f"{PREFIX}/logout", logout)
    app.router.add_get(f"{PREFIX}/auth/github", github_start)
    app.router.add_get(f"{PREFIX}/auth/github/callback", github_callback)
    app.router.add_get(f"{PREFIX}/jobs", _page("jobs.html", jobs_page))
    app.router.add_get(f"{PREFIX}/jobs/{{id}}", _page("job.html", job_page))
    app.router.add_get(f"{PREFIX}/deliveries", _page("deliveries.html", deliveries_page))
    app.router.add_get(f"{PREFIX}/runners", _page("runners.html", runners_page))
    app.router.add_get(f"{PREFIX}/mojira", _page("mojira.html", mojira_page))
