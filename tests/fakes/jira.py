"""A Jira double: REST v2 over HTTP on 127.0.0.1 (aiohttp), answering with the recorded shapes; it also signs webhooks.

It serves what reprobot and the real `jira` client use: issues (get, create, edit labels), comments (list, get, add,
update), transitions (list, do), remote links (list, add), project roles, my permissions, search (a small JQL subset),
the field list and myself. Its answers are the recorded responses in ../shared/fixtures/jira/rest with this double's
own values filled in; its site lives under a context path (`/jira`), as Jira Server's does. Every request is
recorded in `calls`; `fail()` injects errors (with headers such as Retry-After).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

#: The base URL the recorded shapes carry; replaced by the double's own.
RECORDED_BASE = "http://localhost:2990/jira"
CONTEXT = "/jira"
API = CONTEXT + "/rest/api/2"


@dataclass
class Fault:
    """Answer `status` (with `headers`) to the next `times` requests of an operation."""

    status: int
    headers: dict[str, str]
    times: int


@dataclass
class JiraIssue:
    """One issue the double holds."""

    id: str
    key: str
    project: str
    summary: str
    description: Any
    labels: list[str]
    components: list[str]
    status: str = "To Do"
    comments: list[dict[str, Any]] = field(default_factory=list)
    remote_links: list[dict[str, Any]] = field(default_factory=list)


#: The workflow: status → transitions available from it (transition name, target status).
WORKFLOW: dict[str, list[tuple[str, str]]] = {
    "To Do": [("Start Progress", "In Progress"), ("Submit for Review", "In Review"), ("Resolve", "Done")],
    "In Progress": [("Submit for Review", "In Review"), ("Stop Progress", "To Do"), ("Resolve", "Done")],
    "In Review": [("Approve", "Done"), ("Reopen", "To Do")],
    "Done": [("Reopen", "To Do")],
}
#: The issue types every project offers (by name, as a create request may name them).
ISSUE_TYPES = ("Bug", "Task", "Story")
_STATUS_IDS = {name: str(10000 + i) for i, name in enumerate(WORKFLOW)}


class JiraDouble:
    """`await double.start()`; then `double.site` is the Jira base URL the bot's client talks to."""

    def __init__(
        self,
        rest_fixtures: Path,
        *,
        token: str | None = "jira-pat-for-tests",
        basic: tuple[str, str] | None = None,
        bot_user: str = "reprobot",
    ) -> None:
        self.templates = {
            "issue": json.loads((rest_fixtures / "TEST-136.json").read_text()),
            "comment": json.loads((rest_fixtures / "comment.json").read_text()),
        }
        self.token = token
        self.basic = basic
        self.bot_user = bot_user
        self.issues: dict[str, JiraIssue] = {}
        #: project → role name → user names in it.
        self.roles: dict[str, dict[str, list[str]]] = {}
        self.calls: list[tuple[str, str, Any]] = []
        #: Project keys issues can be created in (`add_issue` adds its project too).
        self.projects: set[str] = set()
        #: Keys of the issues created through the API, in order.
        self.created: list[str] = []
        self.faults: dict[str, Fault] = {}
        self._ids = itertools.count(10100)
        self._runner: web.AppRunner | None = None
        self.site = ""

    # -- lifecycle ------------------------------------------------------------------------------------------

    async def start(self) -> str:
        """Serve on 127.0.0.1 (a free port); returns the site URL."""
        app = web.Application()
        app.router.add_route("*", API + "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.site = f"http://127.0.0.1:{port}{CONTEXT}"
        return self.site

    async def stop(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()

    # -- test setup -----------------------------------------------------------------------------------------

    def add_issue(
        self,
        project: str,
        summary: str,
        description: Any = "",
        *,
        labels: list[str] | None = None,
        components: list[str] | None = None,
    ) -> JiraIssue:
        """A new issue in `project` (key PROJECT-n)."""
        number = 1 + sum(1 for i in self.issues.values() if i.project == project)
        issue = JiraIssue(
            str(next(self._ids)), f"{project}-{number}", project, summary, description, labels or [], components or []
        )
        self.issues[issue.key] = issue
        self.projects.add(project)
        return issue

    def add_project(self, key: str) -> None:
        """A project issues can be created in."""
        self.projects.add(key)

    def add_role(self, project: str, role: str, users: list[str]) -> None:
        """Put users in a project role."""
        self.roles.setdefault(project, {})[role] = list(users)

    def fail(self, op: str, status: int, *, headers: dict[str, str] | None = None, times: int = 1) -> None:
        """Make the next `times` requests of `op` (e.g. `comment/add`) answer `status`."""
        self.faults[op] = Fault(status, headers or {}, times)

    def user(self, name: str) -> dict[str, Any]:
        """A user object as Jira Server renders one (the recorded shape)."""
        user = copy.deepcopy(self.templates["comment"]["author"])
        return user | {
            "self": f"{self.site}/rest/api/2/user?username={name}",
            "name": name,
            "key": name,
            "emailAddress": f"{name}@example.com",
            "displayName": name,
        }

    def add_comment(self, key: str, body: Any, author: str) -> dict[str, Any]:
        """A comment by a person (not through the API), as a webhook would announce it."""
        return self._new_comment(self.issues[key], body, author)

    def issue_json(self, issue: JiraIssue) -> dict[str, Any]:
        """The issue in the recorded REST shape with its own values."""
        data = self._rebase(copy.deepcopy(self.templates["issue"]))
        data |= {"id": issue.id, "key": issue.key, "self": f"{self.site}/rest/api/2/issue/{issue.id}"}
        f = data["fields"]
        f["summary"] = issue.summary
        f["description"] = issue.description
        f["labels"] = list(issue.labels)
        f["components"] = [{"name": c, "id": str(10000 + i)} for i, c in enumerate(issue.components)]
        f["project"] = f["project"] | {"key": issue.project, "name": issue.project}
        f["status"] = f["status"] | {"name": issue.status, "id": _STATUS_IDS[issue.status]}
        f["comment"] = {"startAt": 0, "maxResults": len(issue.comments), "total": len(issue.comments)}
        f["comment"]["comments"] = issue.comments
        return dict(data)

    def webhook(self, template: dict[str, Any], issue: JiraIssue, **extra: Any) -> dict[str, Any]:
        """A recorded webhook body rewritten to carry `issue` as this site has it, plus `extra` top-level keys."""
        body = self._rebase(copy.deepcopy(template))
        body["issue"] = self.issue_json(issue)
        body.update(extra)
        return dict(body)

    def sign(self, body: bytes, secret: str) -> dict[str, str]:
        """The X-Hub-Signature header an admin webhook with `secret` sends."""
        return {"X-Hub-Signature": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()}

    async def deliver(
        self, url: str, body: dict[str, Any] | bytes, *, identifier: str, secret: str | None, retry: int = 0
    ) -> tuple[int, Any]:
        """POST a webhook the way Jira does (identifier and retry headers, signed when `secret` is given)."""
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": "Atlassian Webhook HTTP Client",
            "X-Atlassian-Webhook-Identifier": identifier,
            "X-Atlassian-Webhook-Retry": str(retry),
        }
        if secret is not None:
            headers |= self.sign(raw, secret)
        async with aiohttp.ClientSession() as session, session.post(url, data=raw, headers=headers) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text

    # -- REST -----------------------------------------------------------------------------------------------

    def _rebase(self, data: Any) -> Any:
        return json.loads(json.dumps(data).replace(RECORDED_BASE, self.site))

    def _authorized(self, request: web.Request) -> str | None:
        """The caller's user name, or None when the Authorization header does not match."""
        header = request.headers.get("Authorization", "")
        if self.token is not None and header == f"Bearer {self.token}":
            return self.bot_user
        if self.basic is not None and header.startswith("Basic "):
            try:
                user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return None
            if (user, password) == self.basic:
                return self.bot_user
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        tail = request.match_info["tail"].strip("/")
        op, params = _route(request.method, tail)
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                return _error(400, "request body is not JSON")
        self.calls.append((op, tail, body))
        if self._authorized(request) is None:
            return _error(401, "You are not authenticated. Authentication required to perform this operation.")
        fault = self.faults.get(op)
        if fault is not None and fault.times > 0:
            fault.times -= 1
            return _error(fault.status, "injected fault", headers=fault.headers)
        handler = getattr(self, "_op_" + op.replace("/", "_"), None)
        if handler is None:
            return _error(404, f"no such resource: {request.method} {tail}")
        try:
            result: web.StreamResponse = handler(params, body, dict(request.query))
            return result
        except KeyError as exc:
            return _error(404, f"Issue Does Not Exist: {exc}")
        except (TypeError, ValueError) as exc:
            return _error(400, f"bad request: {exc}")

    def _issue(self, key_or_id: str) -> JiraIssue:
        for issue in self.issues.values():
            if key_or_id in (issue.key, issue.id):
                return issue
        raise KeyError(key_or_id)

    def _op_issue_get(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        data = self.issue_json(self._issue(p["issue"]))
        wanted = [f for f in q.get("fields", "").split(",") if f and not f.startswith("-")]
        if wanted and "*all" not in wanted:
            data["fields"] = {k: v for k, v in data["fields"].items() if k in wanted}
        return web.json_response(data)

    def _op_issue_create(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        """REST v2 create: validates the body's shape, answers 201 `{id, key, self}` as Jira does."""
        fields = body.get("fields") if isinstance(body, dict) else None
        if not isinstance(fields, dict):
            raise TypeError('expected {"fields": {...}}')
        errors: dict[str, str] = {}
        project = fields.get("project")
        key = project.get("key") if isinstance(project, dict) else None
        if not isinstance(key, str) or key not in self.projects:
            errors["project"] = "valid project is required"
        summary = fields.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            errors["summary"] = "You must specify a summary of the issue."
        elif len(summary) > 255:
            errors["summary"] = "Summary must be less than 255 characters."
        kind = fields.get("issuetype")
        if not isinstance(kind, dict) or (kind.get("name") not in ISSUE_TYPES and kind.get("id") is None):
            errors["issuetype"] = "valid issue type is required"
        labels = fields.get("labels", [])
        if not isinstance(labels, list) or not all(isinstance(v, str) and " " not in v for v in labels):
            errors["labels"] = "labels must be a list of strings without spaces"
        description = fields.get("description", "")
        if not isinstance(description, str):
            errors["description"] = "Operation value must be a string"
        if errors:
            return web.json_response({"errorMessages": [], "errors": errors}, status=400)
        assert isinstance(key, str) and isinstance(summary, str)
        issue = self.add_issue(key, summary, description, labels=list(labels))
        self.created.append(issue.key)
        return web.json_response(
            {"id": issue.id, "key": issue.key, "self": f"{self.site}/rest/api/2/issue/{issue.id}"}, status=201
        )

    def _op_issue_edit(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        issue = self._issue(p["issue"])
        if not isinstance(body, dict):
            raise TypeError("expected a JSON object")
        fields = body.get("fields") or {}
        for name, value in fields.items():
            if name == "labels":
                issue.labels = [str(v) for v in value]
            elif name == "summary":
                issue.summary = str(value)
            elif name == "description":
                issue.description = value
            else:
                raise ValueError(f"field {name} cannot be set")
        for name, ops in (body.get("update") or {}).items():
            if name != "labels":
                raise ValueError(f"field {name} cannot be updated")
            for change in ops:
                for verb, value in change.items():
                    if verb == "add" and value not in issue.labels:
                        issue.labels.append(str(value))
                    elif verb == "remove" and value in issue.labels:
                        issue.labels.remove(value)
                    elif verb == "set":
                        issue.labels = [str(v) for v in value]
        return web.Response(status=204)

    def _new_comment(self, issue: JiraIssue, body: Any, author: str) -> dict[str, Any]:
        comment = copy.deepcopy(self.templates["comment"])
        cid = str(next(self._ids))
        comment |= {
            "self": f"{self.site}/rest/api/2/issue/{issue.id}/comment/{cid}",
            "id": cid,
            "author": self.user(author),
            "updateAuthor": self.user(author),
            "body": body,
        }
        issue.comments.append(comment)
        return dict(comment)

    def _op_comment_list(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        comments = self._issue(p["issue"]).comments
        start = int(q.get("startAt", 0))
        size = int(q.get("maxResults", 50))
        page = comments[start : start + size]
        return web.json_response({"startAt": start, "maxResults": size, "total": len(comments), "comments": page})

    def _op_comment_add(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        if not isinstance(body, dict) or not isinstance(body.get("body"), str) or not body["body"]:
            raise ValueError("Comment body can not be empty!")
        return web.json_response(self._new_comment(self._issue(p["issue"]), body["body"], self.bot_user), status=201)

    def _comment(self, p: dict[str, str]) -> dict[str, Any]:
        for comment in self._issue(p["issue"]).comments:
            if comment["id"] == p["comment"]:
                return comment
        raise KeyError(f"comment {p['comment']}")

    def _op_comment_get(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        return web.json_response(self._comment(p))

    def _op_comment_update(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        comment = self._comment(p)
        if not isinstance(body, dict) or not isinstance(body.get("body"), str) or not body["body"]:
            raise ValueError("Comment body can not be empty!")
        if comment["author"]["name"] != self.bot_user:
            return _error(403, "You do not have the permission to edit this comment.")
        comment["body"] = body["body"]
        comment["updated"] = "2026-01-01T00:00:00.000+0000"
        return web.json_response(comment)

    def _op_transitions_list(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        issue = self._issue(p["issue"])
        out = []
        for i, (name, target) in enumerate(WORKFLOW[issue.status]):
            to = {"self": f"{self.site}/rest/api/2/status/{_STATUS_IDS[target]}", "name": target}
            out.append({"id": str(11 + 10 * list(WORKFLOW).index(issue.status) + i), "name": name, "to": to})
        return web.json_response({"expand": "transitions", "transitions": out})

    def _op_transitions_do(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        issue = self._issue(p["issue"])
        wanted = str((body or {}).get("transition", {}).get("id"))
        for i, (_name, target) in enumerate(WORKFLOW[issue.status]):
            if str(11 + 10 * list(WORKFLOW).index(issue.status) + i) == wanted:
                issue.status = target
                return web.Response(status=204)
        return _error(400, f"Transition id '{wanted}' is not valid for this issue.")

    def _op_remotelink_list(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        return web.json_response(self._issue(p["issue"]).remote_links)

    def _op_remotelink_add(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        issue = self._issue(p["issue"])
        obj = (body or {}).get("object")
        if not isinstance(obj, dict) or not obj.get("url") or not obj.get("title"):
            raise ValueError("'object' with 'url' and 'title' is required")
        global_id = body.get("globalId")
        for link in issue.remote_links:
            if global_id and link.get("globalId") == global_id:
                link["object"] = obj
                return web.json_response({"id": link["id"], "self": link["self"]}, status=200)
        lid = next(self._ids)
        link = {"id": lid, "self": f"{self.site}/rest/api/2/issue/{issue.key}/remotelink/{lid}", "object": obj}
        if global_id:
            link["globalId"] = global_id
        issue.remote_links.append(link)
        return web.json_response({"id": lid, "self": link["self"]}, status=201)

    def _op_project_roles(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        names = self.roles.get(p["project"], {})
        base = f"{self.site}/rest/api/2/project/{p['project']}/role"
        return web.json_response({name: f"{base}/{10002 + i}" for i, name in enumerate(names)})

    def _op_project_role(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        names = list(self.roles.get(p["project"], {}))
        index = int(p["role"]) - 10002
        if not 0 <= index < len(names):
            return _error(404, f"role {p['role']} not found")
        name = names[index]
        actors = []
        for n, user in enumerate(self.roles[p["project"]][name]):
            actors.append(
                {
                    "id": 20000 + n,
                    "displayName": user,
                    "type": "atlassian-user-role-actor",
                    "name": user,
                    "actorUser": {"accountId": f"acc-{user}"},
                }
            )
        role = {"self": f"{self.site}/rest/api/2/project/{p['project']}/role/{p['role']}", "name": name}
        return web.json_response(role | {"id": int(p["role"]), "description": name, "actors": actors})

    def _op_mypermissions(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        keys = (
            "BROWSE_PROJECTS",
            "ADD_COMMENTS",
            "EDIT_OWN_COMMENTS",
            "TRANSITION_ISSUES",
            "EDIT_ISSUES",
            "LINK_ISSUES",
        )
        wanted = [k for k in q.get("permissions", ",".join(keys)).split(",") if k]
        perms = {
            k: {"id": str(i), "key": k, "name": k.title(), "type": "PROJECT", "havePermission": k in keys}
            for i, k in enumerate(wanted)
        }
        return web.json_response({"permissions": perms})

    def _op_fields(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        """The fields the recorded issue carries, as GET /field lists them (the client maps names with it)."""
        out = []
        for name in self.templates["issue"]["fields"]:
            custom = name.startswith("customfield_")
            out.append({"id": name, "key": name, "name": name, "custom": custom, "navigable": True, "searchable": True})
            out[-1]["clauseNames"] = [name]
        return web.json_response(out)

    def _op_myself(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        return web.json_response(self.user(self.bot_user))

    def _op_search(self, p: dict[str, str], body: Any, q: dict[str, str]) -> web.Response:
        args = body if isinstance(body, dict) else q
        jql = str(args.get("jql") or "")
        start = int(args.get("startAt") or 0)
        size = int(args.get("maxResults") or 50)
        found = [i for i in self.issues.values() if _jql_match(jql, i)]
        page = [self.issue_json(i) for i in found[start : start + size]]
        return web.json_response({"startAt": start, "maxResults": size, "total": len(found), "issues": page})


_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    (m, re.compile(p), op)
    for m, p, op in (
        ("GET", r"issue/(?P<issue>[^/]+)", "issue/get"),
        ("PUT", r"issue/(?P<issue>[^/]+)", "issue/edit"),
        ("POST", r"issue", "issue/create"),
        ("GET", r"issue/(?P<issue>[^/]+)/comment", "comment/list"),
        ("POST", r"issue/(?P<issue>[^/]+)/comment", "comment/add"),
        ("GET", r"issue/(?P<issue>[^/]+)/comment/(?P<comment>\d+)", "comment/get"),
        ("PUT", r"issue/(?P<issue>[^/]+)/comment/(?P<comment>\d+)", "comment/update"),
        ("GET", r"issue/(?P<issue>[^/]+)/transitions", "transitions/list"),
        ("POST", r"issue/(?P<issue>[^/]+)/transitions", "transitions/do"),
        ("GET", r"issue/(?P<issue>[^/]+)/remotelink", "remotelink/list"),
        ("POST", r"issue/(?P<issue>[^/]+)/remotelink", "remotelink/add"),
        ("GET", r"project/(?P<project>[^/]+)/role", "project/roles"),
        ("GET", r"project/(?P<project>[^/]+)/role/(?P<role>\d+)", "project/role"),
        ("GET", r"mypermissions", "mypermissions"),
        ("GET", r"field", "fields"),
        ("GET", r"myself", "myself"),
        ("GET", r"search", "search"),
        ("POST", r"search", "search"),
    )
]


def _route(method: str, tail: str) -> tuple[str, dict[str, str]]:
    for m, pattern, op in _ROUTES:
        match = pattern.fullmatch(tail)
        if m == method and match:
            return op, match.groupdict()
    return f"unknown:{method} {tail}", {}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """Jira's error shape."""
    return web.json_response({"errorMessages": [message], "errors": {}}, status=status, headers=headers)


_CLAUSE = re.compile(r'\s*(\w+)\s*(=|in)\s*(\([^)]*\)|"[^"]*"|[^\s)]+)\s*', re.IGNORECASE)


def _jql_match(jql: str, issue: JiraIssue) -> bool:
    """A JQL subset: `field = value` and `field in (a, b)` clauses joined by AND, on project/key/labels/status."""
    query = re.split(r"\s+order\s+by\s+", jql, flags=re.IGNORECASE)[0].strip()
    if not query:
        return True
    values = {
        "project": [issue.project],
        "key": [issue.key],
        "issuekey": [issue.key],
        "labels": issue.labels,
        "status": [issue.status],
        "component": issue.components,
    }
    for clause in re.split(r"\s+AND\s+", query, flags=re.IGNORECASE):
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            raise ValueError(f"unsupported JQL: {clause!r}")
        name, op, raw = match.group(1).lower(), match.group(2).lower(), match.group(3)
        wanted = [v.strip().strip('"') for v in raw.strip("()").split(",")] if op == "in" else [raw.strip('"')]
        if name not in values:
            raise ValueError(f"unsupported JQL field: {name}")
        if not set(wanted) & set(values[name]):
            return False
    return True
