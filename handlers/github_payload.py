"""Sans-I/O checks of the webhook payload fields the GitHub handlers read, run before any handler.

A validly signed delivery can still carry a field of the wrong type or out of range (GitHub's own payloads never
do, but a fuzzer, a proxy or a future schema change can). Such a body is refused at intake with a specific
reason, so that nothing downstream (the inbox commit, promotion, a job) ever meets it: a bad value found later
would fail the worker instead of the sender.

Only the fields the handlers read are checked; everything else in the payload is kept verbatim in the raw body.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

__all__ = ["INT64_MAX", "INT64_MIN", "PayloadError", "validate_payload"]

#: SQLite stores integers as signed 64-bit: a larger Python int cannot be bound to a statement.
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
#: Strings a handler copies into the store are capped; GitHub caps an issue body at 65,536 characters.
MAX_TEXT = 1_000_000
_SURROGATE = re.compile("[\ud800-\udfff]")
#: "owner/name": GitHub's own character set for both halves.
_FULL_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


class PayloadError(ValueError):
    """The payload has a field a handler reads with the wrong type or an out-of-range value; says which."""


def _describe(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", float: "a number"}
    if value is None:
        return "null"
    if isinstance(value, int) and not isinstance(value, bool):
        return "an integer"
    return names.get(type(value), type(value).__name__)


def _check_text(path: str, value: object, *, pattern: re.Pattern[str] | None = None) -> None:
    if not isinstance(value, str):
        raise PayloadError(f"`{path}` must be a string, not {_describe(value)}")
    if len(value) > MAX_TEXT:
        raise PayloadError(f"`{path}` is longer than {MAX_TEXT} characters")
    # The JSON escape \ud800 decodes to a lone surrogate, which is not UTF-8 and cannot be stored or sent.
    if not value.isascii() and _SURROGATE.search(value):
        raise PayloadError(f"`{path}` contains a lone UTF-16 surrogate (not valid Unicode text)")
    if pattern is not None and not pattern.fullmatch(value):
        raise PayloadError(f"`{path}` is not of the form owner/name: {value[:80]!r}")


def _check_int(path: str, value: object, *, low: int, high: int = INT64_MAX) -> None:
    # bool is an int subclass in Python; JSON true is not a number.
    if not isinstance(value, int) or isinstance(value, bool):
        raise PayloadError(f"`{path}` must be an integer, not {_describe(value)}")
    if not low <= value <= high:
        raise PayloadError(f"`{path}` is {value}, outside {low}..{high}")


Check = Callable[[str, object], None]


def _text(path: str, value: object) -> None:
    _check_text(path, value)


def _name(path: str, value: object) -> None:
    _check_text(path, value, pattern=_FULL_NAME)


def _id(path: str, value: object) -> None:
    _check_int(path, value, low=0)


def _number(path: str, value: object) -> None:
    _check_int(path, value, low=1)


def _bool(path: str, value: object) -> None:
    if not isinstance(value, bool):
        raise PayloadError(f"`{path}` must be a boolean, not {_describe(value)}")


def _object(path: str, value: object) -> None:
    # dict first: JSON objects are dicts, and isinstance against the Mapping ABC costs several times more.
    if not isinstance(value, dict) and not isinstance(value, Mapping):
        raise PayloadError(f"`{path}` must be an object, not {_describe(value)}")


def _array(path: str, value: object) -> None:
    if not isinstance(value, list):
        raise PayloadError(f"`{path}` must be an array, not {_describe(value)}")


#: (path, check, required, nullable) for every event. Parents come before their children, so a child is
#: only reached through objects. `required` fields must be present; `nullable` ones may be JSON null.
_Field = tuple[str, Check, bool, bool]
_COMMON: tuple[_Field, ...] = (
    ("action", _text, False, False),
    ("installation", _object, False, True),
    ("installation.id", _id, False, True),
    ("sender", _object, False, True),
    ("sender.login", _text, False, True),
    ("sender.type", _text, False, True),
)
_REPOSITORY: tuple[_Field, ...] = (
    ("repository", _object, True, False),
    ("repository.full_name", _name, True, False),
    ("repository.default_branch", _text, False, True),
)
_ISSUE: tuple[_Field, ...] = (
    ("issue", _object, True, False),
    ("issue.number", _number, True, False),
    ("issue.title", _text, False, True),
    ("issue.body", _text, False, True),
    ("issue.html_url", _text, False, True),
)
_FIELDS: dict[str, tuple[_Field, ...]] = {
    "issues": (
        ("action", _text, True, False),
        *_REPOSITORY,
        *_ISSUE,
        ("label", _object, False, True),
        ("label.name", _text, False, True),
    ),
    "issue_comment": (
        ("action", _text, True, False),
        *_REPOSITORY,
        *_ISSUE,
        ("comment", _object, True, False),
        ("comment.id", _id, True, False),
        ("comment.body", _text, False, True),
        ("comment.user", _object, True, False),
        ("comment.user.login", _text, True, False),
        ("comment.user.type", _text, False, True),
        ("comment.author_association", _text, False, False),
    ),
    "installation": (
        ("action", _text, True, False),
        ("installation", _object, True, False),
        ("installation.id", _id, True, False),
        ("installation.account", _object, True, False),
        ("installation.account.login", _text, True, False),
        ("repositories", _array, False, True),
    ),
    "installation_repositories": (
        ("action", _text, True, False),
        ("installation", _object, True, False),
        ("installation.id", _id, True, False),
        ("repositories_added", _array, False, True),
    ),
    "pull_request": (
        ("action", _text, True, False),
        *_REPOSITORY,
        ("pull_request", _object, True, False),
        ("pull_request.number", _number, True, False),
        ("pull_request.merged", _bool, False, True),
        ("pull_request.closed_at", _text, False, True),
        ("pull_request.head", _object, False, False),
        ("pull_request.head.ref", _text, False, True),
    ),
}


def _plan(fields: tuple[_Field, ...]) -> tuple[tuple[str, tuple[str, ...], Check, bool, bool], ...]:
    """The fields with their paths split once, and each path checked once (an event's own rule wins)."""
    seen: dict[str, _Field] = {}
    for f in fields:
        seen[f[0]] = f
    return tuple((path, tuple(path.split(".")), check, req, null) for path, check, req, null in seen.values())


#: Events that list repositories, and the field that does: every entry's full_name is checked.
_REPO_LISTS = {"installation": "repositories", "installation_repositories": "repositories_added"}
_PLANS = {event: _plan((*_COMMON, *fields)) for event, fields in _FIELDS.items()}
_UNHANDLED = _plan(_COMMON)


def validate_payload(event: str, data: object) -> None:
    """Raise PayloadError naming the first field a handler of `event` reads that has a bad type or value.

    Events no handler reads pass with only the top-level check (the body must be a JSON object).
    """
    if not isinstance(data, dict) and not isinstance(data, Mapping):  # dict first, as in _object
        raise PayloadError(f"the JSON body must be an object, not {_describe(data)}")
    handled = event in _FIELDS
    # This runs for every field of every delivery, on the ack path: the walk of `_at` is inlined, and the
    # common case of a text field (an ASCII string of sane length, which `_text` passes) skips the call.
    for path, keys, check, required, nullable in _PLANS.get(event, _UNHANDLED):
        value: object = data
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                if required:
                    raise PayloadError(f"`{path}` is missing")
                break
            value = value[key]
        else:
            if value is None and nullable:
                continue
            if not handled and path != "action":
                continue  # the sender and installation of an event nobody handles do not matter
            if check is _text and type(value) is str and value.isascii() and len(value) <= MAX_TEXT:
                continue
            check(path, value)
    if event in _REPO_LISTS:
        key = _REPO_LISTS[event]
        for i, repo in enumerate(data.get(key) or []):
            _object(f"{key}[{i}]", repo)
            _name(f"{key}[{i}].full_name", repo.get("full_name"))
