"""A Mojira double on 127.0.0.1: the public read-only search (`POST /api/jql-search-post`) and attachments.

Built from the documented shape (../shared/fixtures/README.md; misode/mojira.dev api/public.go): a JSON body
`{"advanced": true, "project": "MC", "search": "<JQL>", "maxResults": N}` (plus `startAt`, paging as Jira
does), answered with `{"issues": [{"key", "fields"}], "startAt", "maxResults", "total"}`. The JQL is honoured
as far as the poller needs: `updated >= "yyyy-MM-dd HH:mm"` (or a relative `-1d`), `ORDER BY updated`. Switches:
answer 429 with Retry-After, and slow each page down (so a test can kill a poller between pages).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

__all__ = ["MojiraDouble", "adf_doc", "jira_time"]

_UPDATED_BOUND = re.compile(r'updated\s*>=\s*(?:"(?P<date>[^"]+)"|(?P<rel>-\d+[wdhm]))', re.I)
_ORDER_UPDATED = re.compile(r"order\s+by\s+updated(?:\s+(?P<dir>asc|desc))?", re.I)
_UNITS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60}


def jira_time(moment: datetime) -> str:
    """Jira's timestamp format: `2024-05-01T12:34:56.789+0000`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}+0000"


def adf_doc(*paragraphs: str, code: str | None = None) -> dict[str, Any]:
    """An Atlassian Document Format description: paragraphs, and optionally a code block (a pasted crash)."""
    content: list[dict[str, Any]] = [
        {"type": "paragraph", "content": [{"type": "text", "text": text}]} for text in paragraphs
    ]
    if code is not None:
        content.append({"type": "codeBlock", "attrs": {}, "content": [{"type": "text", "text": code}]})
    return {"type": "doc", "version": 1, "content": content}


@dataclass
class MojiraDouble:
    """Start with `await double.start()`; add reports with `add`; `requests` lists every search body."""

    issues: dict[str, dict[str, Any]] = field(default_factory=dict)
    attachments: dict[str, bytes] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    page_delay: float = 0.0
    url: str = ""
    _throttle: list[str] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(10000))
    _runner: web.AppRunner | None = None

    async def start(self) -> str:
        """Serve on a free port of 127.0.0.1; returns the API base URL (what REPROBOT_MOJIRA_API_URL names)."""
        app = web.Application()
        app.router.add_post("/api/jql-search-post", self._search)
        app.router.add_get("/secure/attachment/{id}/{name}", self._attachment)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return f"{self.url}/api"

    async def stop(self) -> None:
        """Shut the server down."""
        if self._runner is not None:
            await self._runner.cleanup()

    def add(
        self,
        key: str,
        summary: str,
        updated: datetime,
        *,
        description: object = "",
        versions: tuple[str, ...] = (),
        attachments: dict[str, bytes] | None = None,
        resolution: str | None = None,
        **custom: Any,
    ) -> dict[str, Any]:
        """Add (or replace) a report with Jira's standard fields and Mojira's custom fields (by id)."""
        attached = []
        for name, content in (attachments or {}).items():
            ident = str(next(self._ids))
            self.attachments[ident] = content
            attached.append(
                {
                    "id": ident,
                    "filename": name,
                    "size": len(content),
                    "mimeType": "text/plain",
                    "content": f"{self.url}/secure/attachment/{ident}/{name}",
                }
            )
        fields = {
            "summary": summary,
            "description": description,
            "status": {"name": "Resolved" if resolution else "Open"},
            "resolution": {"name": resolution} if resolution else None,
            "resolutiondate": jira_time(updated) if resolution else None,
            "labels": [],
            "created": jira_time(updated - timedelta(days=1)),
            "updated": jira_time(updated),
            "versions": [{"name": v} for v in versions],
            "fixVersions": [],
            "attachment": attached,
            "issuelinks": [],
            "customfield_10054": {"value": "Unconfirmed"},
            "customfield_10070": 0,
        } | custom
        issue = {"key": key, "fields": fields}
        self.issues[key] = issue
        return issue

    def throttle(self, times: int = 1, retry_after: str = "1") -> None:
        """The next `times` searches get 429 Too Many Requests with this Retry-After."""
        self._throttle.extend([retry_after] * times)

    async def _search(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"errorMessages": ["body is not JSON"]}, status=400)
        self.requests.append(body)
        if self._throttle:
            return web.json_response(
                {"errorMessages": ["Rate limit exceeded"]}, status=429, headers={"Retry-After": self._throttle.pop(0)}
            )
        if not isinstance(body, dict) or body.get("advanced") is not True or not isinstance(body.get("search"), str):
            return web.json_response({"errorMessages": ["expected an advanced JQL search"]}, status=400)
        if self.page_delay:
            await asyncio.sleep(self.page_delay)
        jql = body["search"]
        project = str(body.get("project") or "")
        chosen = [i for i in self.issues.values() if i["key"].rsplit("-", 1)[0] == project]
        bound = _UPDATED_BOUND.search(jql)
        if bound:
            if bound["date"]:
                since = datetime.strptime(bound["date"], "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
            else:
                rel = bound["rel"]
                since = datetime.now(UTC) - timedelta(seconds=int(rel[1:-1]) * _UNITS[rel[-1]])
            chosen = [i for i in chosen if _updated(i) >= since]
        order = _ORDER_UPDATED.search(jql)
        if order:
            chosen.sort(
                key=lambda i: (_updated(i), _key_number(i["key"])), reverse=(order["dir"] or "").lower() == "desc"
            )
        else:
            chosen.sort(key=lambda i: _key_number(i["key"]), reverse=True)  # Jira's default: newest key first
        start = int(body.get("startAt") or 0)
        size = min(int(body.get("maxResults") or 50), 100)
        page = chosen[start : start + size]
        return web.json_response({"startAt": start, "maxResults": size, "total": len(chosen), "issues": page})

    async def _attachment(self, request: web.Request) -> web.Response:
        content = self.attachments.get(request.match_info["id"])
        if content is None:
            return web.Response(status=404)
        return web.Response(body=content, content_type="text/plain")


def _updated(issue: dict[str, Any]) -> datetime:
    try:
        return datetime.strptime(str(issue["fields"].get("updated")), "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return datetime.now(UTC)  # a malformed report (served on purpose by a test) sorts as just updated


def _key_number(key: str) -> int:
    return int(key.rsplit("-", 1)[1])
