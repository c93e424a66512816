"""How one REPROBOT_* value is read: the parsers and range rules the settings table (bot/settings/table.py) names.

Each parser takes the variable's name and its raw text and returns the field's value, or raises SettingsError
naming the variable; the messages are the ones the settings have always given (tests check them).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.settings.jira_mapping import normalize_site
from sandboxes.quota import MIN_QUOTA_BYTES, parse_size

__all__ = [
    "CREDENTIAL",
    "DATABASE_URL",
    "FLAG",
    "FLOAT",
    "HOST_PORT",
    "INT",
    "KEY_FILE",
    "LABELS",
    "MOJIRA_SINK",
    "PATH",
    "QUOTA",
    "SITE_SECRETS",
    "SIZE",
    "SWITCH",
    "TEXT",
    "UNIT_INTERVAL",
    "URL",
    "USER_PATH",
    "Kind",
    "Rule",
    "SettingsError",
    "above_up_to",
    "at_least",
    "bounded",
    "choice",
    "names",
    "not_below",
    "parse_site_secrets",
    "positive",
    "whole",
]


class SettingsError(ValueError):
    """A REPROBOT_* variable has a value that cannot be used."""


@dataclass(frozen=True)
class Kind:
    """How a raw value becomes a field's value (`parse(env_name, raw)`), and what the docs call it."""

    doc: str
    parse: Callable[[str, str], Any]


@dataclass(frozen=True)
class Rule:
    """A check on the parsed value: when `ok` says no, the error is "<variable> must be <text>"."""

    text: str
    ok: Callable[[Any], bool]


_TRUE = ("1", "true", "yes")
_FLAG_WORDS = ("0", "1", "true", "false", "yes", "no")
_SWITCH_WORDS = ("1", "0", "true", "false", "yes", "no", "on", "off")


def _text(env: str, raw: str) -> str:
    return raw


def _url(env: str, raw: str) -> str:
    # The Mojira client joins paths onto the base: one trailing slash would double.
    return raw.rstrip("/")


def _path(env: str, raw: str) -> Path:
    return Path(raw)


def _user_path(env: str, raw: str) -> Path:
    return Path(raw).expanduser()


def _flag(env: str, raw: str) -> bool:
    if raw.strip().lower() not in _FLAG_WORDS:
        raise SettingsError(f"{env} must be 1/0, true/false or yes/no, not {raw!r}")
    return raw.strip().lower() in _TRUE


def _switch(env: str, raw: str) -> bool:
    if raw.strip().lower() not in _SWITCH_WORDS:
        raise SettingsError(f"{env}={raw!r}: expected true or false")
    return raw.strip().lower() in (*_TRUE, "on")


def _int(env: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise SettingsError(f"{env}={raw!r}: expected an integer") from None


def _float(env: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise SettingsError(f"{env}={raw!r}: expected a number") from None


def _size(env: str, raw: str) -> int:
    try:
        return parse_size(raw)
    except ValueError:
        raise SettingsError(f"{env}={raw!r}: expected a size such as 2G, 512M or a byte count (0: none)") from None


def _database_url(env: str, raw: str) -> str:
    scheme = raw.split(":", 1)[0]
    if scheme not in ("postgresql", "postgres"):
        raise SettingsError(f"{env}: expected a postgresql:// URL, got scheme {scheme!r}")
    return raw


def _labels(env: str, raw: str) -> tuple[str, ...]:
    labels = tuple(x.strip() for x in raw.split(",") if x.strip())
    if not labels or not all(re.fullmatch(r"[\w.:+-]{1,64}", x) for x in labels):
        raise SettingsError(f"{env}={raw!r}: expected a comma list of labels")
    return labels


def _host_port(env: str, raw: str) -> str:
    host, _, port = raw.rpartition(":")
    if not host or not port.isdigit():
        raise SettingsError(f"{env}={raw!r}: expected host:port")
    return raw


def _mojira_sink(env: str, raw: str) -> str:
    sink, _, target = raw.partition(":")
    github = re.fullmatch(r"[\w.-]+/[\w.-]+(?:#\d+)?", target) is not None
    if not (raw == "store" or (sink == "github" and github) or (sink == "jira" and target)):
        raise SettingsError(f"{env}={raw!r}: expected store, github:owner/repo, github:owner/repo#N or jira:PROJECT")
    return raw


def _site_secrets(env: str, raw: str) -> tuple[tuple[str | None, str], ...]:
    return parse_site_secrets(raw)


def _key_file(env: str, raw: str) -> str:
    try:
        return Path(raw).read_text()
    except OSError as exc:
        raise SettingsError(f"{env}={raw!r}: {exc.strerror}") from None


def parse_site_secrets(value: str) -> tuple[tuple[str | None, str], ...]:
    """`secret`, or `https://a.example=s1 https://b.example=s2`: (site or None, secret) pairs, sites normalized."""
    items = [item for item in value.replace(",", " ").split() if item]
    if len(items) == 1 and not items[0].startswith(("http://", "https://")):
        return ((None, items[0]),)
    pairs: list[tuple[str | None, str]] = []
    for item in items:
        # A secret may itself contain "=" (base64): split at the first "=" after the URL's host instead.
        scheme, _, rest = item.partition("://")
        host_path, sep, secret = rest.partition("=")
        site = f"{scheme}://{host_path}"
        if not sep or not secret or scheme not in ("http", "https") or not host_path:
            raise SettingsError(
                "REPROBOT_JIRA_WEBHOOK_SECRET: expected one secret, or `https://site=secret` pairs "
                f"separated by spaces or commas; cannot read item {len(pairs) + 1}"
            )
        pairs.append((normalize_site(site), secret))
    return tuple(pairs)


def names(known: tuple[str, ...]) -> Kind:
    """A comma-separated list of some of `known` (duplicates dropped, order kept)."""

    def parse(env: str, raw: str) -> tuple[str, ...]:
        found = tuple(dict.fromkeys(v.strip() for v in raw.split(",") if v.strip()))
        if not found or any(n not in known for n in found):
            raise SettingsError(f"{env}={raw!r}: expected a comma-separated list of {', '.join(known)}")
        return found

    return Kind(f"comma list of {', '.join(known)}", parse)


def choice(*choices: str) -> Kind:
    """One of `choices`, as written."""
    listed = f"{', '.join(choices[:-1])} or {choices[-1]}"

    def parse(env: str, raw: str) -> str:
        if raw not in choices:
            raise SettingsError(f"{env}={raw!r}: expected {listed}")
        return raw

    return Kind(" | ".join(choices), parse)


def bounded(kind: type[int] | type[float], low: int, high: int) -> Kind:
    """A number from `low` to `high`; a bad number and one out of range get the same message."""

    def parse(env: str, raw: str) -> int | float:
        try:
            value = kind(raw)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise SettingsError(f"{env}={raw!r}: expected a number from {low} to {high}")
        return value

    return Kind(f"{'integer' if kind is int else 'number'} from {low} to {high}", parse)


def whole(low: int) -> Kind:
    """A whole number (digits only) of at least `low`."""

    def parse(env: str, raw: str) -> int:
        if not raw.strip().isdigit() or int(raw) < low:
            raise SettingsError(f"{env}={raw!r}: expected a whole number >= {low}")
        return int(raw)

    return Kind(f"whole number >= {low}", parse)


TEXT = Kind("text", _text)
URL = Kind("URL", _url)
PATH = Kind("path", _path)
USER_PATH = Kind("path (~ expanded)", _user_path)
FLAG = Kind("1/0, true/false, yes/no", _flag)
SWITCH = Kind("1/0, true/false, yes/no, on/off", _switch)
INT = Kind("integer", _int)
FLOAT = Kind("number", _float)
SIZE = Kind("size (2G, 512M, bytes)", _size)
DATABASE_URL = Kind("postgresql:// URL", _database_url)
LABELS = Kind("comma list of labels", _labels)
HOST_PORT = Kind("host:port", _host_port)
MOJIRA_SINK = Kind("store | github:owner/repo[#N] | jira:PROJECT", _mojira_sink)
SITE_SECRETS = Kind("secret, or site=secret pairs", _site_secrets)
KEY_FILE = Kind("path of a PEM file", _key_file)
CREDENTIAL = Kind("token or user:token", _text)


def positive(what: str) -> Rule:
    """More than 0 (NaN fails too): "must be a positive <what>"."""
    return Rule(f"a positive {what}", lambda v: v > 0)


def at_least(low: float, text: str) -> Rule:
    """`low` or more (NaN fails too)."""
    return Rule(text, lambda v: v >= low)


def not_below(low: float, text: str) -> Rule:
    """Not below `low`; unlike at_least, NaN passes (these two settings have always let it through)."""
    return Rule(text, lambda v: not v < low)


def above_up_to(high: float, text: str) -> Rule:
    """More than 0 and at most `high`."""
    return Rule(text, lambda v: 0 < v <= high)


QUOTA = Rule(f"0 (no quota) or at least {MIN_QUOTA_BYTES // 1024**2}M", lambda v: not 0 < v < MIN_QUOTA_BYTES)
UNIT_INTERVAL = Rule("between 0 and 1", lambda v: 0.0 <= v <= 1.0)
