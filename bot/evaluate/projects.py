"""Benchmark cases grouped by project: which project a case belongs to, held-out selection, per-project rows.

A change tuned while looking at some projects is judged on a project it was not tuned on: `--leave-out P` runs
only P's cases (the held-out check), `--all-but P` runs every other project (the development run).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

#: `<project>-<commit>` (mined cases: the fix commit, abbreviated) or `<project>-<n>` (BugsInPy bug numbers).
_NAMED_BY_COMMIT = re.compile(r"^(?P<project>.+?)-(?:[0-9a-f]{7,40}|\d+)$")


def case_project(name: str, meta: Mapping[str, Any]) -> str:
    """The project a case belongs to.

    In order: `project` in case.toml; the case folder's `<project>-<commit>` or `<project>-<bug number>`; the
    name of the upstream repository in `[source].repo` (every QuixBugs program is one project, QuixBugs); the
    suite; the case's own name.
    """
    explicit = meta.get("project")
    if isinstance(explicit, str) and explicit.strip():
        return explicit.strip()
    named = _NAMED_BY_COMMIT.match(name)
    if named:
        return named["project"]
    source = meta.get("source")
    repo = source.get("repo") if isinstance(source, Mapping) else None
    if isinstance(repo, str) and repo.strip("/ "):
        tail = repo.rstrip("/ ").rsplit("/", 1)[-1].lower()
        return tail.removesuffix(".git")
    suite = meta.get("suite")
    return suite if isinstance(suite, str) and suite else name


@dataclass(frozen=True)
class ProjectSelection:
    """Which projects a run covers: all, only a held-out one, or all but one."""

    leave_out: str | None = None
    all_but: str | None = None

    def __post_init__(self) -> None:
        if self.leave_out is not None and self.all_but is not None:
            raise ValueError("--leave-out and --all-but cannot be combined: one runs the project, the other skips it")

    def keeps(self, project: str) -> bool:
        """Whether a case of `project` is run."""
        if self.leave_out is not None:
            return project == self.leave_out
        return project != self.all_but

    def check(self, projects: Iterable[str]) -> None:
        """ValueError when the named project has no case in the bench (a typo would silently run nothing or all)."""
        named = self.leave_out if self.leave_out is not None else self.all_but
        known = sorted(set(projects))
        if named is not None and named not in known:
            raise ValueError(f"no case of project {named!r} in the bench; its projects are: {', '.join(known)}")

    def to_json(self) -> dict[str, Any]:
        """How the run was selected, for results.json and the report."""
        if self.leave_out is not None:
            return {"held_out": self.leave_out, "runs": "the held-out project only"}
        if self.all_but is not None:
            return {"held_out": self.all_but, "runs": "every project but the held-out one"}
        return {"held_out": None, "runs": "every project"}


class ScoredCase(Protocol):
    """What a per-project row is computed from (a CaseResult)."""

    name: str
    project: str
    status: str
    picked: str | None
    reproduction_brt: bool | None

    def picked_plausible(self) -> bool:
        """Whether the patch the job published or suggested is a plausible fix by the oracle."""
        ...


def project_rows(results: Iterable[ScoredCase]) -> dict[str, dict[str, Any]]:
    """Per project: cases, plausible fix, plausible BRT, published, published wrong (and their cases).

    plausible fix: the patch the job delivered (PR or suggestion) passes the oracle. plausible BRT: the test the
    job delivered fails on the buggy code and passes with the oracle fix. published: status fixed (a PR).
    published wrong: published although the oracle says the patch is not a plausible fix.
    """
    rows: dict[str, dict[str, Any]] = {}
    for r in results:
        row = rows.setdefault(
            r.project,
            {"cases": 0, "plausible_fix": 0, "plausible_brt": 0, "published": 0, "published_wrong": []},
        )
        plausible = r.picked_plausible()
        row["cases"] += 1
        row["plausible_fix"] += plausible
        row["plausible_brt"] += bool(r.reproduction_brt)
        if r.status == "fixed":
            row["published"] += 1
            if not plausible:
                row["published_wrong"].append(r.name)
    return dict(sorted(rows.items()))
