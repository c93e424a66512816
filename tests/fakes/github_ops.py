"""The GitHub double's REST operations, keyed by OpenAPI operationId: (double, path, query, body) → reply."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakes.github import GitHubDouble

Reply = tuple[int, Any]
Op = Callable[["GitHubDouble", dict[str, str], dict[str, str], Any], Reply]
OPS: dict[str, Op] = {}
NOT_FOUND: Reply = (404, {"message": "Not Found"})
#: The App's bot user: the author of everything reprobot posts.
BOT: dict[str, Any] = {"login": "reprobot[bot]", "id": 9000, "type": "Bot"}


def op(op_id: str) -> Callable[[Op], Op]:
    """Register an operation."""

    def deco(fn: Op) -> Op:
        OPS[op_id] = fn
        return fn

    return deco


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@op("apps/create-installation-access-token")
def create_token(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    inst = int(p["installation_id"])
    if inst not in d.installations:
        return NOT_FOUND
    token = "ghs_" + secrets.token_hex(18)
    d.tokens[token] = inst
    expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return 201, {"token": token, "expires_at": expires, "permissions": {"issues": "write"}}


@op("apps/get-repo-installation")
def get_repo_installation(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    full_name = f"{p['owner']}/{p['repo']}"
    for inst, repos in d.installations.items():
        if full_name in repos:
            account = {"login": p["owner"], "id": 1, "type": "Organization"}
            return 200, {"id": inst, "account": account, "app_id": int(d.app_id), "target_type": "Organization"}
    return NOT_FOUND


@op("repos/get")
def get_repo(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    if repo is None:
        return NOT_FOUND
    name = repo.full_name
    return 200, {"full_name": name, "default_branch": repo.default_branch, "clone_url": f"{d.git_url}/{name}.git"}


@op("repos/get-content")
def get_content(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    found = d.content(repo.full_name, p["path"]) if repo else None
    return (200, found) if found else NOT_FOUND


@op("repos/get-collaborator-permission-level")
def get_permission(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    if repo is None or p["username"] not in repo.collaborators:
        return NOT_FOUND
    return 200, {"permission": repo.collaborators[p["username"]], "user": {"login": p["username"]}}


@op("issues/get")
def get_issue(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    issue = repo.issues.get(int(p["issue_number"])) if repo else None
    return (200, issue) if issue else NOT_FOUND


@op("issues/list-comments")
def list_comments(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    if repo is None:
        return NOT_FOUND
    return 200, [c for c in repo.comments if c["issue_number"] == int(p["issue_number"])]


@op("issues/create-comment")
def create_comment(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    if repo is None or int(p["issue_number"]) not in repo.issues:
        return NOT_FOUND
    comment = {
        "id": next(d.ids),
        "issue_number": int(p["issue_number"]),
        "body": body["body"],
        "user": dict(BOT),
        "created_at": _now(),
        "html_url": f"https://github.com/{repo.full_name}/issues/{p['issue_number']}#issuecomment",
    }
    repo.comments.append(comment)
    return 201, comment


@op("issues/update-comment")
def update_comment(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    for comment in repo.comments if repo else []:
        if comment["id"] == int(p["comment_id"]):
            comment["body"] = body["body"]
            return 200, comment
    return NOT_FOUND


def _react(d: GitHubDouble, repo: Any, target: tuple[str, int], content: str) -> Reply:
    for r in repo.reactions:
        if r["target"] == target and r["content"] == content and r["user"]["login"] == BOT["login"]:
            return 200, r
    reaction = {"id": next(d.ids), "content": content, "user": dict(BOT), "target": target, "created_at": _now()}
    repo.reactions.append(reaction)
    return 201, reaction


@op("reactions/create-for-issue-comment")
def react_comment(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    return _react(d, repo, ("comment", int(p["comment_id"])), body["content"]) if repo else NOT_FOUND


@op("reactions/create-for-issue")
def react_issue(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    return _react(d, repo, ("issue", int(p["issue_number"])), body["content"]) if repo else NOT_FOUND


@op("issues/add-labels")
def add_labels(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    if repo is None:
        return NOT_FOUND
    names = [x if isinstance(x, str) else x["name"] for x in (body or {}).get("labels", [])]
    labels = repo.labels.setdefault(int(p["issue_number"]), [])
    labels += [n for n in names if n not in labels]
    return 200, [{"name": n} for n in labels]


@op("pulls/list")
def list_pulls(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    if repo is None:
        return NOT_FOUND
    pulls = [pr for pr in repo.pulls if q.get("state", "open") in ("all", pr["state"])]
    if "head" in q:
        pulls = [pr for pr in pulls if pr["head"]["ref"] == d.head_branch(repo.full_name, q["head"])]
    return 200, pulls


@op("pulls/create")
def create_pull(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    if repo is None:
        return NOT_FOUND
    head = d.head_branch(repo.full_name, body["head"])
    if not d.has_branch(repo.full_name, head):
        return 422, {"message": "Validation Failed", "errors": [{"field": "head", "code": "invalid"}]}
    if any(pr["head"]["ref"] == head and pr["state"] == "open" for pr in repo.pulls):
        return 422, {"message": f"A pull request already exists for {head}."}
    number = len(repo.issues) + len(repo.pulls) + 1
    pr = {
        "number": number,
        "state": "open",
        "title": body.get("title", ""),
        "body": body.get("body", ""),
        "draft": bool(body.get("draft", False)),
        "head": {"ref": head},
        "base": {"ref": body["base"]},
        "user": dict(BOT),
        "html_url": f"https://github.com/{repo.full_name}/pull/{number}",
        "merged": False,
    }
    repo.pulls.append(pr)
    return 201, pr


@op("pulls/update")
def update_pull(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    for pr in repo.pulls if repo else []:
        if pr["number"] == int(p["pull_number"]):
            pr.update({k: v for k, v in body.items() if k in ("title", "body", "state", "base")})
            return 200, pr
    return NOT_FOUND


@op("pulls/get")
def get_pull(d: GitHubDouble, p: dict[str, str], q: dict[str, str], body: Any) -> Reply:
    repo = d.repo_of(p)
    for pr in repo.pulls if repo else []:
        if pr["number"] == int(p["pull_number"]):
            return 200, pr
    return NOT_FOUND
