"""Sans-I/O Jira intake: signatures against several secrets, the event parsed from every recorded shape."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from handlers.jira_payload import (
    DeliveryRefused,
    JiraPayloadError,
    SignatureError,
    parse_event,
    precheck_delivery,
    read_delivery,
    site_of,
    verify_signature,
)
from tests.conftest import FIXTURES, require_shared


def _sig(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def test_verify_signature_picks_the_matching_secret() -> None:
    body = b'{"a": 1}'
    assert verify_signature(body, _sig(body, "two"), ["one", "two"]) == 1
    assert verify_signature(body, _sig(body, "one").upper().replace("SHA256", "sha256"), ["one"]) == 0
    for header, reason in (
        (None, "missing"),
        ("sha1=ab", "sha256"),
        ("sha256=zz", "sha256"),
        (_sig(b"x", "one"), "match"),
    ):
        with pytest.raises(SignatureError, match=reason):
            verify_signature(body, header, ["one"])


def test_site_of_keeps_the_context_path() -> None:
    assert site_of("http://Localhost:2990/jira/rest/api/2/issue/10000") == "http://localhost:2990/jira"
    assert site_of("https://x.atlassian.net/rest/api/2/issue/1") == "https://x.atlassian.net"
    with pytest.raises(ValueError):
        site_of("https://x.atlassian.net/browse/X-1")


def test_recorded_shapes_parse_with_their_comments_and_users() -> None:
    folder = require_shared(FIXTURES / "jira" / "webhooks")
    events = {p.stem: parse_event(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))}
    assert all(e is not None for e in events.values()) and len(events) >= 10
    created = events["webhook-issue_created"]
    assert created is not None and created.event == "jira:issue_created" and created.key == "TEST-4"
    assert created.project == "TEST" and created.site == "http://localhost:2990/jira" and created.user == "admin"
    cloud = events["webhook-cloud_comment_added"]
    assert cloud is not None and cloud.comment is not None and cloud.comment.body == "comment body"
    assert cloud.site == "https://jira-trigger-plugin.atlassian.net" and cloud.url.endswith("/browse/TEST-24")


def test_adf_bodies_changelog_labels_and_bad_fields() -> None:
    adf = {"type": "doc", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "/fix"}]}]}
    data = {
        "webhookEvent": "jira:issue_updated",
        "issue": {
            "id": "1",
            "key": "AB_2-12",
            "self": "https://x.example/rest/api/2/issue/1",
            "fields": {"description": adf, "labels": ["ui", "bot-fix"], "components": [{"name": "Core"}]},
        },
        "changelog": {"items": [{"field": "labels", "fromString": "ui", "toString": "ui bot-fix"}]},
        "comment": {"id": 5, "body": adf, "author": {"accountId": "acc-1", "displayName": "Ann"}},
    }
    event = parse_event(data)
    assert event is not None and event.project == "AB_2" and event.components == ("Core",)
    assert event.description == "/fix" and event.added_labels == ("bot-fix",)
    assert event.comment is not None and (event.comment.id, event.comment.author, event.comment.body) == (
        "5",
        "acc-1",
        "/fix",
    )
    assert parse_event({"webhookEvent": "project_created", "project": {}}) is None
    for path, value, field in (
        (("issue", "key"), "not-a-key", "issue.key"),
        (("issue", "self"), 3, "issue.self"),
        (("issue", "fields", "labels"), "ui", "issue.fields.labels"),
        (("webhookEvent",), None, "webhookEvent"),
    ):
        bad = json.loads(json.dumps(data))
        node = bad
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value
        with pytest.raises(JiraPayloadError, match=field.replace(".", r"\.")):
            parse_event(bad)


def test_delivery_checks_before_and_after_reading_the_body() -> None:
    body = json.dumps({"webhookEvent": "x"}).encode()
    secrets = [(None, "s")]
    with pytest.raises(DeliveryRefused) as refused:
        precheck_delivery({}, secrets, False)
    assert refused.value.status == 400
    with pytest.raises(DeliveryRefused) as refused:
        precheck_delivery({"X-Atlassian-Webhook-Identifier": "i"}, [], False)
    assert refused.value.status == 401
    assert precheck_delivery({"X-Atlassian-Webhook-Identifier": "i"}, [], True) == "i"
    assert read_delivery({"X-Hub-Signature": _sig(body, "s")}, body, secrets, False) == ({"webhookEvent": "x"}, None)
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery({"X-Hub-Signature": _sig(b"{", "s")}, b"{", secrets, False)
    assert refused.value.status == 400
