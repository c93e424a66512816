"""The Jira mapping: which git repository (and policy) serves a Jira site's project, read from a deployment file.

```yaml
projects:
  - site: https://example.atlassian.net   # the Jira base URL, as issue links carry it
    project: SHOP                          # project key
    component: Backend                     # optional: only issues with this component
    github: octo/shop                      # a GitHub repo through the App ...
    installation: 123                      #   ... and the App's installation id on it
    # git: https://git.example.com/shop.git  # ... or any git URL
    # credential: SHOP_GIT                   #   with REPROBOT_GIT_CREDENTIAL_SHOP_GIT (token or user:token)
    # branch: main                           #   the base branch of a plain git repo
    on_create: none                        # none | reproduce | fix, for every new issue
    labels: {fix: reprobot-fix, reproduce: reprobot-reproduce}
    transitions: {pr_opened: In Review, pr_merged: Done}
    issue_labels: [reprobot]               # Jira labels added when a fix is proposed
    commands: {roles: [Developers, Administrators], allow: [alice]}
```

The most specific entry wins: one with a matching component before the project's entry without one. Nothing here
does I/O except `load_mapping`, which reads the file once; errors name the key (`projects[1].labels.fix`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

__all__ = ["JiraMapping", "MappingError", "ProjectMapping", "load_mapping", "normalize_site", "parse_mapping"]

MODES = ("none", "reproduce", "fix")


class MappingError(ValueError):
    """The mapping file is invalid; the message names the key and the problem."""

    def __init__(self, key: str, problem: str, source: str = "mapping") -> None:
        super().__init__(f"{source}: `{key}`: {problem}")
        self.key = key
        self.problem = problem


def normalize_site(url: str) -> str:
    """A site's base URL in one spelling: lowercase scheme and host, no trailing slash, no query."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


@dataclass(frozen=True)
class ProjectMapping:
    """One (site, project, component) → repository entry with its policy."""

    site: str
    project: str
    component: str | None
    #: `owner/name` on GitHub (through the App), or None for a plain git URL.
    github: str | None
    installation: int | None
    git: str | None
    credential: str | None
    branch: str
    on_create: str
    labels: Mapping[str, str]
    transitions: Mapping[str, str]
    issue_labels: tuple[str, ...]
    roles: tuple[str, ...]
    allow: tuple[str, ...]
    index: int

    @property
    def repo(self) -> str:
        """The repository as the store and the policy loader name it."""
        return self.github or self.git or ""

    def mode_for_labels(self, labels: Sequence[str]) -> str | None:
        """`fix` or `reproduce` when one of `labels` is that trigger label (fix wins), else None."""
        for mode in ("fix", "reproduce"):
            if self.labels.get(mode) in labels:
                return mode
        return None


@dataclass(frozen=True)
class JiraMapping:
    """Every entry of the deployment's mapping file."""

    projects: tuple[ProjectMapping, ...] = ()

    def resolve(self, site: str, project: str, components: Sequence[str] = ()) -> ProjectMapping | None:
        """The entry for an issue: a component match first, then the project's entry without a component."""
        try:
            site = normalize_site(site)
        except ValueError:
            return None
        candidates = [p for p in self.projects if p.site == site and p.project == project]
        for entry in candidates:
            if entry.component is not None and entry.component in components:
                return entry
        for entry in candidates:
            if entry.component is None:
                return entry
        return None

    def entry(self, index: int) -> ProjectMapping:
        """The entry a job names by its index (IndexError when the file changed under it)."""
        return self.projects[index]


_KEYS = {
    "site",
    "project",
    "component",
    "github",
    "installation",
    "git",
    "credential",
    "branch",
    "on_create",
    "labels",
    "transitions",
    "issue_labels",
    "commands",
}


def _str(where: str, value: object, source: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise MappingError(where, f"must be a non-empty string, not {value!r}", source)
    return value.strip()


def _str_list(where: str, value: object, source: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise MappingError(where, f"must be a list of strings, not {value!r}", source)
    return tuple(str(_str(f"{where}[{i}]", v, source)) for i, v in enumerate(value))


def _str_map(where: str, value: object, allowed: tuple[str, ...], source: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MappingError(where, f"must be a mapping with keys {', '.join(allowed)}", source)
    out: dict[str, str] = {}
    for k, v in value.items():
        if k not in allowed:
            raise MappingError(f"{where}.{k}", f"unknown key (expected one of {', '.join(allowed)})", source)
        out[str(k)] = str(_str(f"{where}.{k}", v, source))
    return out


def _entry(i: int, raw: object, source: str) -> ProjectMapping:
    where = f"projects[{i}]"
    if not isinstance(raw, Mapping):
        raise MappingError(where, "must be a mapping", source)
    for key in raw:
        if key not in _KEYS:
            raise MappingError(f"{where}.{key}", f"unknown key (expected one of {', '.join(sorted(_KEYS))})", source)
    site_text = _str(f"{where}.site", raw.get("site"), source)
    try:
        site = normalize_site(str(site_text))
    except ValueError as exc:
        raise MappingError(f"{where}.site", str(exc), source) from None
    project = str(_str(f"{where}.project", raw.get("project"), source))
    if not project.replace("_", "").isalnum() or not project[0].isalpha() or project.upper() != project:
        raise MappingError(f"{where}.project", f"must be a Jira project key such as SHOP, not {project!r}", source)
    github = _str(f"{where}.github", raw.get("github"), source, optional=True)
    git = _str(f"{where}.git", raw.get("git"), source, optional=True)
    if (github is None) == (git is None):
        raise MappingError(where, "needs exactly one of `github` (owner/name) or `git` (a git URL)", source)
    installation = raw.get("installation")
    if github is not None:
        if github.count("/") != 1 or not all(github.split("/")):
            raise MappingError(f"{where}.github", f"must be owner/name, not {github!r}", source)
        if not isinstance(installation, int) or isinstance(installation, bool) or installation < 1:
            raise MappingError(f"{where}.installation", "a GitHub repo needs the App's installation id", source)
    elif installation is not None:
        raise MappingError(f"{where}.installation", "only a `github` repo has an installation", source)
    if git is not None and urlsplit(git).scheme not in ("https", "http", "file", "ssh"):
        raise MappingError(f"{where}.git", f"must be an https, ssh or file URL, not {git!r}", source)
    credential = _str(f"{where}.credential", raw.get("credential"), source, optional=True)
    if credential is not None and github is not None:
        raise MappingError(f"{where}.credential", "a GitHub repo uses the App's token, not a credential", source)
    on_create = raw.get("on_create", "none")
    if on_create not in MODES:
        raise MappingError(f"{where}.on_create", f"must be one of {', '.join(MODES)}, not {on_create!r}", source)
    labels = {"fix": "reprobot-fix", "reproduce": "reprobot-reproduce"}
    labels |= _str_map(f"{where}.labels", raw.get("labels"), ("fix", "reproduce"), source)
    for mode, label in labels.items():
        if any(c.isspace() for c in label):
            raise MappingError(f"{where}.labels.{mode}", "a Jira label has no spaces", source)
    commands = raw.get("commands") or {}
    if not isinstance(commands, Mapping):
        raise MappingError(f"{where}.commands", "must be a mapping with keys roles, allow", source)
    for key in commands:
        if key not in ("roles", "allow"):
            raise MappingError(f"{where}.commands.{key}", "unknown key (expected roles or allow)", source)
    roles = _str_list(f"{where}.commands.roles", commands.get("roles", ["Administrators", "Developers"]), source)
    return ProjectMapping(
        site=site,
        project=project,
        component=_str(f"{where}.component", raw.get("component"), source, optional=True),
        github=github,
        installation=installation if github is not None else None,
        git=git,
        credential=credential,
        branch=str(_str(f"{where}.branch", raw.get("branch", "main"), source)),
        on_create=str(on_create),
        labels=labels,
        transitions=_str_map(f"{where}.transitions", raw.get("transitions"), ("pr_opened", "pr_merged"), source),
        issue_labels=_str_list(f"{where}.issue_labels", raw.get("issue_labels"), source),
        roles=roles,
        allow=_str_list(f"{where}.commands.allow", commands.get("allow"), source),
        index=i,
    )


def parse_mapping(text: str, source: str = "mapping") -> JiraMapping:
    """Validate a mapping file's YAML text; MappingError names the first bad key."""
    try:
        tree: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MappingError("(file)", f"not valid YAML: {exc}", source) from None
    if tree is None:
        return JiraMapping()
    if not isinstance(tree, Mapping):
        raise MappingError("(file)", "must be a mapping with a `projects` list", source)
    for key in tree:
        if key != "projects":
            raise MappingError(str(key), "unknown key (expected `projects`)", source)
    projects = tree.get("projects")
    projects = [] if projects is None else projects
    if not isinstance(projects, list):
        raise MappingError("projects", "must be a list", source)
    entries = tuple(_entry(i, raw, source) for i, raw in enumerate(projects))
    seen: dict[tuple[str, str, str | None], int] = {}
    for e in entries:
        scope = (e.site, e.project, e.component)
        if scope in seen:
            raise MappingError(f"projects[{e.index}]", f"maps the same scope as projects[{seen[scope]}]", source)
        seen[scope] = e.index
    return JiraMapping(entries)


def load_mapping(path: Path | None) -> JiraMapping:
    """The mapping file at `path` (an empty mapping when None); MappingError when unreadable or invalid."""
    if path is None:
        return JiraMapping()
    try:
        text = path.read_text()
    except OSError as exc:
        raise MappingError("(file)", f"cannot be read: {exc.strerror}", str(path)) from None
    return parse_mapping(text, str(path))
