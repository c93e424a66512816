"""Slash-command grammar (/reproduce, /fix, /reprobot help|status|cancel); the permission rules live in the core."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.jobs.permissions import (
    DEFAULT_ALLOWED,
    HELP_TEXT,
    association_allows,
    permission_allows,
    polite_key,
    polite_text,
)
from bot.render.inert import md_code
from sandboxes.text import clean_text

STRATEGIES = ("freeform", "tdd", "tld", "fix-only", "brt-only")
_FIX_OPTIONS = {"strategy", "trajectories"}

__all__ = [
    "DEFAULT_ALLOWED",
    "HELP_TEXT",
    "Command",
    "CommandError",
    "association_allows",
    "clean_text",
    "parse_command",
    "permission_allows",
    "polite_key",
    "polite_text",
]


class CommandError(ValueError):
    """A command was recognised but its arguments are wrong; the message says how to write it.

    The message is posted as a reply: the commenter's words in it are code spans no backtick of theirs can close.
    """


@dataclass(frozen=True)
class Command:
    """One parsed command: name is reproduce, fix, help, status or cancel."""

    name: str
    options: dict[str, str | int] = field(default_factory=dict)

    @property
    def starts_job(self) -> bool:
        """True for the commands that run the pipeline."""
        return self.name in ("reproduce", "fix")


def _parse_fix_options(words: Sequence[str]) -> dict[str, str | int]:
    options: dict[str, str | int] = {}
    for word in words:
        name, eq, value = word.partition("=")
        if not eq or name not in _FIX_OPTIONS:
            raise CommandError(f"`/fix` does not understand {md_code(word)}; it takes strategy=… and trajectories=…")
        if name == "strategy":
            if value not in STRATEGIES:
                raise CommandError(f"strategy {md_code(value)} is not one of {', '.join(STRATEGIES)}")
            options["strategy"] = value
        else:
            if not value.isdigit() or not 1 <= int(value) <= 32:
                raise CommandError(f"trajectories must be a whole number from 1 to 32, not {md_code(value)}")
            options["trajectories"] = int(value)
    return options


def parse_command(body: str) -> Command | None:
    """The first command in a comment (a line starting with the command), or None when there is none.

    Raises CommandError for a recognised command with bad arguments.
    """
    for raw in clean_text(body).splitlines():
        words = raw.strip().split()
        if not words:
            continue
        head = words[0].lower()
        if head == "/reproduce":
            if len(words) > 1:
                raise CommandError("`/reproduce` takes no arguments")
            return Command("reproduce")
        if head == "/fix":
            return Command("fix", _parse_fix_options(words[1:]))
        if head == "/reprobot":
            sub = words[1].lower() if len(words) > 1 else "help"
            if sub not in ("help", "status", "cancel"):
                raise CommandError(f"{md_code('/reprobot ' + sub)} is not a command; try `/reprobot help`")
            return Command(sub)
    return None
