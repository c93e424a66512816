"""Mojira's wire format without I/O: the search request, the response, and reports with typed custom fields."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.render.adf import adf_to_markdown

__all__ = [
    "Attachment",
    "MojiraFormatError",
    "MojiraReport",
    "cursor_jql",
    "parse_report",
    "parse_search_response",
    "parse_updated",
    "search_body",
]

#: Mojira's custom fields (misode/mojira.dev api/public.go): field id -> attribute of MojiraReport.
CUSTOM_FIELDS: Mapping[str, str] = {
    "customfield_10054": "confirmation_status",
    "customfield_10051": "area",
    "customfield_10055": "categories",
    "customfield_10049": "mojang_priority",
    "customfield_10050": "ado",
    "customfield_10063": "platform",
    "customfield_10061": "os_version",
    "customfield_10056": "realms_platform",
    "customfield_10070": "votes",
}


class MojiraFormatError(ValueError):
    """A search response or issue that does not have Mojira's shape; the message names the key and field."""


@dataclass(frozen=True)
class Attachment:
    """An attachment: file name, download URL, size in bytes and MIME type (as Mojira reports them)."""

    filename: str
    url: str | None
    size: int | None
    mime_type: str | None


@dataclass(frozen=True)
class MojiraReport:
    """One Mojira issue with Jira's standard fields and Mojira's custom fields, typed."""

    key: str
    summary: str
    description: str
    updated: str
    created: str | None = None
    status: str | None = None
    resolution: str | None = None
    resolution_date: str | None = None
    labels: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    fix_versions: tuple[str, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    links: tuple[str, ...] = ()
    comments: tuple[str, ...] = ()
    confirmation_status: str | None = None
    area: str | None = None
    categories: tuple[str, ...] = ()
    mojang_priority: str | None = None
    ado: str | None = None
    platform: str | None = None
    os_version: str | None = None
    realms_platform: str | None = None
    votes: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def project(self) -> str:
        """The project key (MC of MC-123)."""
        return self.key.rsplit("-", 1)[0]

    @property
    def url(self) -> str:
        """The report's public page."""
        return f"https://bugs.mojang.com/browse/{self.key}"

    def to_json(self) -> dict[str, Any]:
        """The typed fields as JSON (without the raw issue)."""
        data: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            if name == "raw":
                continue
            value = getattr(self, name)
            if name == "attachments":
                value = [a.__dict__ for a in value]
            elif isinstance(value, tuple):
                value = list(value)
            data[name] = value
        return data


def search_body(project: str, jql: str, start_at: int, max_results: int) -> dict[str, Any]:
    """The JSON body of `POST /api/jql-search-post` (advanced JQL search)."""
    return {"advanced": True, "project": project, "search": jql, "startAt": start_at, "maxResults": max_results}


def parse_updated(text: str) -> datetime:
    """Jira's timestamp (`2024-05-01T12:34:56.789+0000`, or ISO-8601) as an aware datetime."""
    value = text.strip()
    if re.search(r"[+-]\d{4}$", value):
        value = value[:-2] + ":" + value[-2:]
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise MojiraFormatError(f"updated {text!r} is not a Jira timestamp") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def cursor_jql(base: str, since: str | None, *, start: str, overlap_minutes: float) -> str:
    """`base` restricted to what changed since `since` (a Jira timestamp; None: `start`), oldest first.

    JQL compares dates to the minute, so the bound is floored to the minute and moved back by
    `overlap_minutes` (a server in another time zone, clock skew); the store's seen reports drop the repeats.
    """
    if since is None:
        bound = start if re.fullmatch(r"-?\d+[wdhm]", start) else f'"{start}"'
    else:
        moment = parse_updated(since).astimezone(UTC) - timedelta(minutes=overlap_minutes)
        bound = f'"{moment:%Y-%m-%d %H:%M}"'
    # ORDER BY must end the query; a base that has its own ordering loses it (the cursor needs updated order).
    base = re.split(r"(?i)\border\s+by\b", base)[0].strip()
    restricted = f"({base}) AND updated >= {bound}" if base else f"updated >= {bound}"
    return f"{restricted} ORDER BY updated ASC, key ASC"


def parse_search_response(data: object) -> tuple[list[Mapping[str, Any]], int | None]:
    """The raw issues of one page and the total, when the server says it."""
    if not isinstance(data, Mapping) or not isinstance(data.get("issues"), list):
        raise MojiraFormatError("search response: expected an object with an 'issues' list")
    issues = data["issues"]
    for i, issue in enumerate(issues):
        if not isinstance(issue, Mapping) or not isinstance(issue.get("key"), str):
            raise MojiraFormatError(f"search response: issues[{i}] has no 'key'")
    total = data.get("total")
    return list(issues), total if isinstance(total, int) else None


def _value(raw: object) -> str | None:
    if isinstance(raw, Mapping):
        for key in ("value", "name"):
            if isinstance(raw.get(key), str):
                return str(raw[key])
        return None
    return raw if isinstance(raw, str) and raw else None


def _names(raw: object) -> tuple[str, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return ()
    return tuple(v for item in raw if (v := _value(item)) is not None)


def _attachments(raw: object) -> tuple[Attachment, ...]:
    out = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("filename"), str):
            size = item.get("size")
            out.append(
                Attachment(
                    filename=item["filename"],
                    url=item.get("content") if isinstance(item.get("content"), str) else None,
                    size=size if isinstance(size, int) else None,
                    mime_type=item.get("mimeType") if isinstance(item.get("mimeType"), str) else None,
                )
            )
    return tuple(out)


def _links(raw: object) -> tuple[str, ...]:
    out = []
    for link in raw if isinstance(raw, list) else []:
        if not isinstance(link, Mapping):
            continue
        kind = _value(link.get("type")) or "link"
        for side in ("outwardIssue", "inwardIssue"):
            other = link.get(side)
            if isinstance(other, Mapping) and isinstance(other.get("key"), str):
                out.append(f"{kind}:{other['key']}")
    return tuple(out)


def _comments(raw: object) -> tuple[str, ...]:
    # The search leaves comments out, but an issue fetched whole carries Jira's {"comments": [{"body": ...}]}.
    items = raw.get("comments") if isinstance(raw, Mapping) else raw
    return (
        tuple(adf_to_markdown(c.get("body")) for c in items if isinstance(c, Mapping) and c.get("body") is not None)
        if isinstance(items, list)
        else ()
    )


def parse_report(issue: Mapping[str, Any]) -> MojiraReport:
    """A typed report from one raw issue of the search; MojiraFormatError names what is missing."""
    key = issue.get("key")
    fields = issue.get("fields")
    if not isinstance(key, str) or not re.fullmatch(r"[A-Z][A-Z0-9_]*-\d+", key):
        raise MojiraFormatError(f"issue key {key!r} is not a Jira key such as MC-123")
    if not isinstance(fields, Mapping):
        raise MojiraFormatError(f"{key}: 'fields' is missing")
    updated = fields.get("updated")
    if not isinstance(updated, str):
        raise MojiraFormatError(f"{key}: fields.updated is missing")
    try:
        parse_updated(updated)
    except MojiraFormatError as exc:
        raise MojiraFormatError(f"{key}: fields.{exc}") from None
    votes = fields.get("customfield_10070")
    if isinstance(votes, float) and votes.is_integer():
        votes = int(votes)
    return MojiraReport(
        key=key,
        summary=str(fields.get("summary") or ""),
        description=adf_to_markdown(fields.get("description")),
        updated=updated,
        created=fields.get("created") if isinstance(fields.get("created"), str) else None,
        status=_value(fields.get("status")),
        resolution=_value(fields.get("resolution")),
        resolution_date=fields.get("resolutiondate") if isinstance(fields.get("resolutiondate"), str) else None,
        labels=tuple(v for v in fields.get("labels") or [] if isinstance(v, str)),
        versions=_names(fields.get("versions")),
        fix_versions=_names(fields.get("fixVersions")),
        attachments=_attachments(fields.get("attachment")),
        links=_links(fields.get("issuelinks")),
        comments=_comments(fields.get("comment")),
        confirmation_status=_value(fields.get("customfield_10054")),
        area=_value(fields.get("customfield_10051")),
        categories=_names(fields.get("customfield_10055")),
        mojang_priority=_value(fields.get("customfield_10049")),
        ado=_value(fields.get("customfield_10050")),
        platform=_value(fields.get("customfield_10063")),
        os_version=_value(fields.get("customfield_10061")),
        realms_platform=_value(fields.get("customfield_10056")),
        votes=votes if isinstance(votes, int) and not isinstance(votes, bool) else None,
        raw=issue,
    )
