"""Runner tenancy (issue 28): whose job a runner job is, and which jobs a runner's scope lets it take.

A runner job belongs to one tenant: `github:<installation id>` for a GitHub App installation, `jira:<site URL>`
for a Jira site, or no tenant at all for the deployment's own jobs (a Mojira report, a probe). A runner is
registered for a scope: a set of tenants, or `deployment` (every job, its own included), which the operator
names explicitly. A runner takes only jobs whose tenant is in its scope.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.settings.jira_mapping import normalize_site

__all__ = [
    "DEPLOYMENT",
    "MAX_SCOPE",
    "github_tenant",
    "in_scope",
    "jira_tenant",
    "parse_scope",
    "scope_within",
    "tenant_of",
]

#: The scope of a runner the operator allows every job of the deployment, whatever its tenant.
DEPLOYMENT = "deployment"
#: The most tenants one scope names (a scope is stored and checked on every claim).
MAX_SCOPE = 100
#: The largest integer the store keeps (SQLite and PostgreSQL BIGINT): larger ids name nothing.
_MAX_ID = 2**63 - 1


def github_tenant(installation_id: int) -> str:
    """The tenant of a GitHub App installation."""
    return f"github:{int(installation_id)}"


def jira_tenant(site: str) -> str:
    """The tenant of a Jira site (its base URL in one spelling)."""
    return f"jira:{normalize_site(site)}"


def tenant_of(payload: Mapping[str, Any]) -> str | None:
    """The tenant of a forge job's payload: its GitHub installation, else its Jira site; None: the deployment's.

    A Jira job whose code lives on GitHub is the Jira site's: the report, and whoever asked, came from there.
    """
    site = payload.get("site")
    if isinstance(site, str) and site:
        try:
            return jira_tenant(site)
        except ValueError:
            return None
    installation = payload.get("installation_id")
    if isinstance(installation, int) and not isinstance(installation, bool) and 0 < installation <= _MAX_ID:
        return github_tenant(installation)
    return None


def _one(item: object) -> str:
    """One tenant of a scope in its stored spelling; ValueError says what is wrong with it."""
    if not isinstance(item, str):
        raise ValueError(f"{item!r} is not a tenant (github:<installation id>, jira:<site URL> or deployment)")
    if item == DEPLOYMENT:
        return item
    kind, _, rest = item.partition(":")
    if kind == "github":
        if not rest.isascii() or not rest.isdigit() or not 0 < int(rest) <= _MAX_ID:
            raise ValueError(f"{item!r}: expected github:<installation id>, a positive integer")
        return github_tenant(int(rest))
    if kind == "jira":
        try:
            return jira_tenant(rest)
        except ValueError:
            raise ValueError(f"{item!r}: expected jira:<site URL>, e.g. jira:https://acme.atlassian.net") from None
    raise ValueError(f"{item!r} is not a tenant (github:<installation id>, jira:<site URL> or deployment)")


def parse_scope(value: object) -> list[str]:
    """A runner's scope from a request or the command line, sorted; ValueError says what is wrong with it.

    `"deployment"` (or a list holding it) is every job; otherwise a list of 1 to MAX_SCOPE tenants.
    """
    items: Sequence[object]
    if isinstance(value, str):
        items = [value]
    elif isinstance(value, list):
        items = value
    else:
        raise ValueError('expected "deployment" or a list of tenants (github:<installation id>, jira:<site URL>)')
    if not items or len(items) > MAX_SCOPE:
        raise ValueError(f"expected 1 to {MAX_SCOPE} tenants (an empty scope would get no job)")
    tenants = sorted({_one(item) for item in items})
    # "deployment" covers every tenant: keeping others beside it would only suggest a limit that is not there.
    return [DEPLOYMENT] if DEPLOYMENT in tenants else tenants


def in_scope(scope: Sequence[str] | None, tenant: str | None) -> bool:
    """True when a runner with `scope` may take a job of `tenant` (None: the deployment's own job)."""
    if not scope:
        return False  # a runner registered before scopes existed takes nothing until it registers again
    return DEPLOYMENT in scope or (tenant is not None and tenant in scope)


def scope_within(requested: Sequence[str], granted: Sequence[str]) -> bool:
    """True when `requested` asks for nothing beyond `granted` (a scoped registration token's scope)."""
    if DEPLOYMENT in granted:
        return True
    return DEPLOYMENT not in requested and set(requested) <= set(granted)
