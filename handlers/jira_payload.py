"""Sans-I/O Jira webhooks: the signature check and the parsing of a delivery into a typed event.

Jira (Server, Data Center and Cloud) posts JSON whose `webhookEvent` names the event. An admin webhook created with
a secret signs the raw body with HMAC-SHA256 in `X-Hub-Signature: sha256=<hex>`. Descriptions and comment bodies are
strings (REST v2) or Atlassian Document Format (Cloud): both become markdown through bot.render.adf. Nothing here
does I/O.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.render.adf import adf_to_markdown
from bot.settings.jira_mapping import normalize_site

__all__ = [
    "JIRA_DELIVERY_PREFIX",
    "DeliveryRefused",
    "JiraComment",
    "JiraEvent",
    "JiraPayloadError",
    "SignatureError",
    "normalize_site",
    "parse_event",
    "precheck_delivery",
    "read_delivery",
    "site_of",
    "sites_with_secrets",
    "unsigned_sites",
    "verify_signature",
]

#: A Jira issue key: project key (a letter, then letters, digits or underscores), a dash, a number.
ISSUE_KEY = re.compile(r"[A-Z][A-Z0-9_]*-[1-9][0-9]*")
#: Jira's delivery ids get this prefix in the inbox, so they never meet a GitHub delivery id.
JIRA_DELIVERY_PREFIX = "jira:"
#: Text copied into the store is capped, as for GitHub.
MAX_TEXT = 1_000_000


class JiraPayloadError(ValueError):
    """The payload lacks a field the Jira handlers read, or has one of the wrong type; says which."""


class DeliveryRefused(ValueError):
    """The delivery is refused: `status` is 401 (signature) or 400 (malformed); the message says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class SignatureError(ValueError):
    """The delivery's signature is missing, malformed or does not match any configured secret."""


def site_of(self_url: str) -> str:
    """The site base URL from a REST `self` link (`https://x.atlassian.net/rest/api/2/issue/1` → the base)."""
    base, sep, _ = self_url.partition("/rest/api/")
    if not sep:
        raise ValueError(f"not a Jira REST link: {self_url[:200]!r}")
    return normalize_site(base)


def verify_signature(body: bytes, header: str | None, secrets: Sequence[str]) -> int:
    """Index of the secret in `secrets` whose HMAC-SHA256 of `body` is the `X-Hub-Signature` header.

    Raises SignatureError when the header is missing, is not `sha256=<64 hex>`, or matches no secret. Every secret
    is compared in constant time, so the answer's timing does not tell which one came close.
    """
    if not header:
        raise SignatureError("signature is missing (X-Hub-Signature)")
    algo, _, digest = header.strip().partition("=")
    if algo.lower() != "sha256" or not re.fullmatch(r"[0-9a-fA-F]{64}", digest):
        raise SignatureError("X-Hub-Signature must be sha256=<64 hex digits>")
    found = -1
    for i, secret in enumerate(secrets):
        mac = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        if hmac.compare_digest(mac, digest.lower()) and found < 0:
            found = i
    if found < 0:
        raise SignatureError("signature does not match")
    return found


@dataclass(frozen=True)
class JiraComment:
    """A comment as the handlers read it; `body` is markdown (ADF converted)."""

    id: str
    body: str
    #: Who wrote it: the Server user name, else the Cloud accountId.
    author: str
    author_display: str


@dataclass(frozen=True)
class JiraEvent:
    """One Jira delivery about an issue, with the fields the handlers read."""

    event: str
    site: str
    issue_id: str
    key: str
    project: str
    components: tuple[str, ...]
    summary: str
    description: str
    labels: tuple[str, ...]
    #: Labels the changelog says this update added (empty for other events).
    added_labels: tuple[str, ...]
    comment: JiraComment | None
    #: Who caused the event (Server `user.name`, Cloud `user.accountId`), when the payload says.
    user: str | None

    @property
    def url(self) -> str:
        """The issue's page."""
        return f"{self.site}/browse/{self.key}"


def _describe(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _get(data: Mapping[str, Any], path: str, kind: type | tuple[type, ...], *, required: bool = True) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or node.get(part) is None:
            if required:
                raise JiraPayloadError(f"`{path}` is missing")
            return None
        node = node[part]
    if not isinstance(node, kind) or isinstance(node, bool):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted = " or ".join("an object" if k is Mapping else _describe(k()) for k in kinds)
        raise JiraPayloadError(f"`{path}` must be {wanted}, not {_describe(node)}")
    if isinstance(node, str) and len(node) > MAX_TEXT:
        raise JiraPayloadError(f"`{path}` is longer than {MAX_TEXT} characters")
    return node


def _text(value: object) -> str:
    """A description or comment body (string or ADF) as markdown, without lone surrogates."""
    text = adf_to_markdown(value)
    # A JSON \ud800 escape decodes to a lone surrogate, which cannot be stored or sent: drop it.
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


def _names(items: object, path: str) -> tuple[str, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise JiraPayloadError(f"`{path}` must be an array, not {_describe(items)}")
    out = []
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, Mapping) else item
        if not isinstance(name, str):
            raise JiraPayloadError(f"`{path}[{i}]` must be a name, not {_describe(name)}")
        out.append(name)
    return tuple(out)


def _user(user: object) -> str | None:
    if not isinstance(user, Mapping):
        return None
    for key in ("name", "accountId", "key"):
        value = user.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _added_labels(changelog: object) -> tuple[str, ...]:
    if not isinstance(changelog, Mapping) or not isinstance(changelog.get("items"), list):
        return ()
    added: list[str] = []
    for item in changelog["items"]:
        if not isinstance(item, Mapping) or str(item.get("field", "")).lower() != "labels":
            continue
        before = set(str(item.get("fromString") or "").split())
        added.extend(label for label in str(item.get("toString") or "").split() if label not in before)
    return tuple(added)


def parse_event(data: object) -> JiraEvent | None:
    """The issue event in a decoded Jira webhook body; None for events without an issue (project, sprint...).

    Raises JiraPayloadError naming the first field the handlers read that is missing or of the wrong type.
    """
    if not isinstance(data, Mapping):
        raise JiraPayloadError(f"the JSON body must be an object, not {_describe(data)}")
    event = _get(data, "webhookEvent", str)
    if data.get("issue") is None:
        return None
    _get(data, "issue", Mapping)
    key = _get(data, "issue.key", str)
    if not ISSUE_KEY.fullmatch(key):
        raise JiraPayloadError(f"`issue.key` is not an issue key: {key[:80]!r}")
    try:
        site = site_of(_get(data, "issue.self", str))
    except ValueError as exc:
        raise JiraPayloadError(f"`issue.self`: {exc}") from None
    issue_id = _get(data, "issue.id", (str, int))
    fields = _get(data, "issue.fields", Mapping)
    project = _get(data, "issue.fields.project.key", str, required=False) or key.rsplit("-", 1)[0]
    summary = _get(data, "issue.fields.summary", str, required=False) or ""
    comment: JiraComment | None = None
    raw = data.get("comment")
    if raw is not None:
        if not isinstance(raw, Mapping):
            raise JiraPayloadError(f"`comment` must be an object, not {_describe(raw)}")
        comment_id = _get(data, "comment.id", (str, int))
        author = _user(raw.get("author")) or _user(raw.get("updateAuthor")) or ""
        display = raw.get("author", {}).get("displayName") if isinstance(raw.get("author"), Mapping) else None
        comment = JiraComment(str(comment_id), _text(raw.get("body")), author, str(display or author))
    return JiraEvent(
        event=event,
        site=site,
        issue_id=str(issue_id),
        key=key,
        project=project,
        components=_names(fields.get("components"), "issue.fields.components"),
        summary=_text(summary),
        description=_text(fields.get("description")),
        labels=_names(fields.get("labels"), "issue.fields.labels"),
        added_labels=_added_labels(data.get("changelog")),
        comment=comment,
        user=_user(data.get("user")),
    )


#: (site or None for any site, secret) pairs, as Settings.jira_webhook_secrets holds them.
SiteSecrets = Sequence[tuple[str | None, str]]


def precheck_delivery(headers: Mapping[str, str], secrets: SiteSecrets, allow_unsigned: bool) -> str:
    """The delivery identifier, checked with what can be checked before the body is read; raises DeliveryRefused."""
    identifier = headers.get("x-atlassian-webhook-identifier") or headers.get("X-Atlassian-Webhook-Identifier")
    if not identifier:
        raise DeliveryRefused(400, "missing X-Atlassian-Webhook-Identifier header")
    if not allow_unsigned:
        if not secrets:
            raise DeliveryRefused(401, "REPROBOT_JIRA_WEBHOOK_SECRET is not set: no delivery can be verified")
        if not (headers.get("x-hub-signature") or headers.get("X-Hub-Signature")):
            raise DeliveryRefused(401, "signature check failed: signature is missing (X-Hub-Signature)")
    return identifier


def read_delivery(
    headers: Mapping[str, str], body: bytes, secrets: SiteSecrets, allow_unsigned: bool
) -> tuple[Mapping[str, Any], JiraEvent | None]:
    """Verify the signature, decode the JSON and parse the event; raises DeliveryRefused (401 or 400).

    A signature present is always checked, even when unsigned deliveries are allowed. A secret given for one site
    does not let a delivery speak for another site, and a site with a secret of its own is spoken for only by a
    delivery signed with that secret: unsigned mode covers the other sites alone.
    """
    signature = headers.get("x-hub-signature") or headers.get("X-Hub-Signature")
    signed = False
    site: str | None = None
    if signature or not allow_unsigned:
        if not secrets:
            raise DeliveryRefused(401, "REPROBOT_JIRA_WEBHOOK_SECRET is not set: no delivery can be verified")
        try:
            site = secrets[verify_signature(body, signature, [secret for _, secret in secrets])][0]
        except SignatureError as exc:
            raise DeliveryRefused(401, f"signature check failed: {exc}") from None
        signed = True
    try:
        data = json.loads(body)
    except RecursionError:
        raise DeliveryRefused(400, "malformed JSON: nested too deeply") from None
    except ValueError as exc:  # not JSON, or bytes that are not UTF-8
        raise DeliveryRefused(400, f"malformed JSON: {exc}") from None
    try:
        event = parse_event(data)
    except JiraPayloadError as exc:
        raise DeliveryRefused(400, f"payload refused: {exc}") from None
    if event is None:
        return data, event
    if site is not None and event.site != site:
        raise DeliveryRefused(401, f"signature check failed: signed with the secret of {site}, not of {event.site}")
    if site is None and event.site in sites_with_secrets(secrets):
        # Unsigned (or signed with a secret for no site in particular): it may not speak for a site that signs.
        why = "signature is missing" if not signed else "not signed with that site's own secret"
        raise DeliveryRefused(401, f"signature check failed: {event.site} has a secret of its own; {why}")
    return data, event


def sites_with_secrets(secrets: SiteSecrets) -> frozenset[str]:
    """The sites that have a secret of their own: unsigned mode never applies to them."""
    return frozenset(site for site, _ in secrets if site is not None)


def unsigned_sites(secrets: SiteSecrets, allow_unsigned: bool, sites: Sequence[str]) -> list[str]:
    """Which of `sites` (normalized) a delivery without a signature may speak for; none unless unsigned is allowed."""
    if not allow_unsigned:
        return []
    signing = sites_with_secrets(secrets)
    return sorted({site for site in sites if site not in signing})
