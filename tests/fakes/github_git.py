"""Git smart HTTP for the GitHub double: `git http-backend` behind a token check, and repo seeding."""

from __future__ import annotations

import asyncio
import base64
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

_GIT = ["git", "-c", "user.name=octocat", "-c", "user.email=octocat@localhost", "-c", "init.defaultBranch=main"]


def seed_bare_repo(root: Path, full_name: str, source: Path, branch: str = "main") -> Path:
    """Create root/owner/repo.git holding one commit with the files of `source` on `branch`."""
    bare = root / f"{full_name}.git"
    work = root / ".seed" / full_name
    work.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, work)
    for args in (["init", "-q", "-b", branch], ["add", "-A"], ["commit", "-q", "-m", "initial import"]):
        subprocess.run([*_GIT, *args], cwd=work, check=True, capture_output=True)
    bare.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([*_GIT, "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True)
    subprocess.run(["git", "config", "http.receivepack", "true"], cwd=bare, check=True)
    return bare


def commit_file(root: Path, full_name: str, path: str, text: str, branch: str = "main") -> None:
    """Commit one file to the bare repo's branch (as a maintainer pushing a change)."""
    work = root / ".seed" / full_name
    target = work / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    push = ["push", "-q", "-f", str(root / f"{full_name}.git"), f"HEAD:{branch}"]
    for args in (["add", "-A"], ["commit", "-q", "-m", f"update {path}"], push):
        subprocess.run([*_GIT, *args], cwd=work, check=True, capture_output=True)


def git_show(root: Path, full_name: str, ref: str, path: str) -> str | None:
    """A file at a ref in the bare repo, or None."""
    out = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=root / f"{full_name}.git", capture_output=True)
    return out.stdout.decode() if out.returncode == 0 else None


def branch_exists(root: Path, full_name: str, branch: str) -> bool:
    """Whether refs/heads/branch exists in the bare repo."""
    cmd = ["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"]
    return subprocess.run(cmd, cwd=root / f"{full_name}.git", capture_output=True).returncode == 0


def git_handler(root: Path, token_ok: Callable[[str], bool], seen: list[str]) -> Callable[..., object]:
    """An aiohttp handler for /git/{path}: checks `Authorization: Basic x-access-token:TOKEN`, runs CGI."""

    async def handle(request: web.Request) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        token = ""
        if auth.startswith("Basic "):
            _user, _, token = base64.b64decode(auth[6:]).decode().partition(":")
        if not token or not token_ok(token):
            seen.append(f"git {request.method} {request.path}: unauthorized")
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="GitHub"'})
        body = await request.read()
        env = {
            "GIT_PROJECT_ROOT": str(root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": "/" + request.match_info["path"],
            "REQUEST_METHOD": request.method,
            "QUERY_STRING": request.query_string,
            "CONTENT_TYPE": request.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
            "PATH": "/usr/bin:/bin",
        }
        if request.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = request.headers["Content-Encoding"]
        if request.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = request.headers["Git-Protocol"]
        proc = await asyncio.create_subprocess_exec(
            "git", "http-backend", env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate(body)
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers[name] = value.strip()
        return web.Response(status=status, body=payload, headers=headers)

    return handle
