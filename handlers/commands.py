"""Slash-command grammar (/reproduce, /fix, /reprobot help|status|cancel) and the permission rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sandboxes.text import clean_text

#: Associations that may run commands when the policy says nothing else.
DEFAULT_ALLOWED = ("OWNER", "MEMBER", "COLLABORATOR")
STRATEGIES = ("freeform", "tdd", "tld", "fix-only", "brt-only")
_PERMISSION_RANK = {"none": 0, "read": 1, "triage": 1, "write": 2, "maintain": 2, "admin": 3}
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
]


class CommandError(ValueError):
    """A command was recognised but its arguments are wrong; the message says how to write it."""


@dataclass(frozen=True)
class Command:
    """One parsed command: name is reproduce, fix, help, status or cancel."""

    name: str
    options: dict[str, str | int] = field(default_factory=dict)

    @property
    def starts_job(self) -> bool:
        """True for the commands that run the pipeline."""
        return self.name in ("reproduce", "fix")


HELP_TEXT = """reprobot commands (on their own line in a comment):

- `/reproduce`: write a test that reproduces this report and post it here
- `/fix [strategy=freeform|tdd|tld|fix-only|brt-only] [trajectories=N]`: open a pull request with a fix and a test
- `/reprobot status`: what reprobot is doing on this issue
- `/reprobot cancel`: stop the running job
- `/reprobot help`: this text
"""


def _parse_fix_options(words: Sequence[str]) -> dict[str, str | int]:
    options: dict[str, str | int] = {}
    for word in words:
        name, eq, value = word.partition("=")
        if not eq or name not in _FIX_OPTIONS:
            raise CommandError(f"`/fix` does not understand `{word}`; it takes strategy=… and trajectories=…")
        if name == "strategy":
            if value not in STRATEGIES:
                raise CommandError(f"strategy `{value}` is not one of {', '.join(STRATEGIES)}")
            options["strategy"] = value
        else:
            if not value.isdigit() or not 1 <= int(value) <= 32:
                raise CommandError(f"trajectories must be a whole number from 1 to 32, not `{value}`")
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
                raise CommandError(f"`/reprobot {sub}` is not a command; try `/reprobot help`")
            return Command(sub)
    return None


def association_allows(association: str, allowed: Sequence[str] = DEFAULT_ALLOWED) -> bool:
    """Whether the comment's author_association alone grants commands."""
    return association.upper() in {a.upper() for a in allowed}


def permission_allows(permission: str, needed: str = "write") -> bool:
    """Whether a collaborator permission from the API reaches the needed level."""
    if needed == "none":
        return True
    return _PERMISSION_RANK.get(permission, 0) >= _PERMISSION_RANK[needed]


def polite_text(user: str) -> str:
    """The one reply to a person who may not run commands."""
    return f"@{user} thanks! Only people with write access can run reprobot commands on this repository."


def polite_key(repo: str, number: object) -> str:
    """Dedupe key of the polite reply: at most one per issue."""
    return f"polite:{repo}#{number}"
