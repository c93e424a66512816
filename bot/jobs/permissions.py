"""Who may run reprobot commands, and what reprobot answers otherwise: rules shared by the webhook and the jobs.

They live in the core (not in handlers/) because a job re-checks a command whose permission the webhook could not
verify in time, and the core never imports handlers.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Associations that may run commands when the policy says nothing else.
DEFAULT_ALLOWED = ("OWNER", "MEMBER", "COLLABORATOR")
_PERMISSION_RANK = {"none": 0, "read": 1, "triage": 1, "write": 2, "maintain": 2, "admin": 3}

HELP_TEXT = """reprobot commands (on their own line in a comment):

- `/reproduce`: write a test that reproduces this report and post it here
- `/fix [strategy=freeform|tdd|tld|fix-only|brt-only] [trajectories=N]`: open a pull request with a fix and a test
- `/reprobot status`: what reprobot is doing on this issue
- `/reprobot cancel`: stop the running job
- `/reprobot help`: this text
"""


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
