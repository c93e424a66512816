"""Which repo paths a patch may not touch (policy `paths.deny`), seen through symlinks.

A path is denied when it matches a glob such as `.github/workflows/**`, or when it only *looks* harmless but
resolves, through a symlink in the base checkout or one the patch itself adds, into a denied path. A symlink
whose target lies in a denied path, contains one (a link to `.github` or to the repo root), or leaves the
repository is refused too: it would let the next edit of an innocent-looking file change a workflow.

Pure functions over repo-relative POSIX paths; the only I/O is `os.readlink` under a given base checkout.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "DEFAULT_DENIED",
    "is_denied",
    "normalize",
    "path_problem",
    "resolve",
    "symlink_problem",
]

#: Denied by default: CI workflows and the composite actions they run, both of which execute with the
#: repository's secrets once merged.
DEFAULT_DENIED: tuple[str, ...] = (".github/workflows/**", ".github/actions/**")

_MAX_LINK_HOPS = 40  # what Linux allows (ELOOP) before giving up on a chain of symlinks
_GLOB_CHARS = re.compile(r"[*?\[]")


def normalize(path: str) -> str | None:
    """`path` as a clean repo-relative POSIX path ("" is the root); None when it is absolute or escapes."""
    if not path or path.startswith("/") or "\x00" in path:
        return None
    norm = posixpath.normpath(path)
    if norm == ".":
        return ""
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


def is_denied(path: str, patterns: Sequence[str]) -> bool:
    """True when a repo-relative path matches a denied glob; `dir/**` also covers `dir` itself."""
    norm = normalize(path)
    if norm is None:
        return False
    for pattern in patterns:
        stem = pattern.rstrip("*").rstrip("/")
        if fnmatch.fnmatchcase(norm, pattern) or fnmatch.fnmatchcase(norm, stem + "/*"):
            return True
        if pattern.endswith("/**") and fnmatch.fnmatchcase(norm, stem):
            return True
    return False


def _contains_denied(directory: str, patterns: Sequence[str]) -> bool:
    """True when a denied path lies at or below `directory` (the root contains every path)."""
    if directory == "":
        return True
    for pattern in patterns:
        literal = _GLOB_CHARS.split(pattern, 1)[0].rstrip("/")
        if literal == directory or literal.startswith(directory + "/"):
            return True
    return False


def resolve(
    path: str,
    *,
    base: Path | None = None,
    links: Mapping[str, str | None] | None = None,
    follow_last: bool = True,
) -> str | None:
    """Where `path` really lands: every symlink on the way followed, repo-relative; None if it leaves the repo.

    Symlinks come from `links` first (path → target for links a patch adds; None for a link the patch turns
    into something else), then from the checkout at `base`. A loop or an over-long chain also gives None.
    With `follow_last=False` a symlink in the last component is not followed (the link itself is meant).
    """
    norm = normalize(path)
    if norm is None:
        return None
    links = links or {}
    pending = [p for p in norm.split("/") if p]
    done: list[str] = []
    hops = 0
    while pending:
        part = pending.pop(0)
        if part == ".":
            continue
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        done.append(part)
        current = "/".join(done)
        if not pending and not follow_last:
            break
        target = links[current] if current in links else _readlink(base, current)
        if target is None:
            continue
        hops += 1
        if hops > _MAX_LINK_HOPS or target.startswith("/"):
            return None
        done.pop()
        pending = [p for p in target.split("/") if p] + pending
    return "/".join(done)


def _readlink(base: Path | None, rel: str) -> str | None:
    if base is None:
        return None
    try:
        return os.readlink(base / rel)
    except OSError:  # not a symlink, or does not exist: an ordinary path component
        return None


def path_problem(
    path: str,
    patterns: Sequence[str],
    *,
    base: Path | None = None,
    links: Mapping[str, str | None] | None = None,
    follow_last: bool = True,
) -> str | None:
    """Why writing `path` is refused, or None: it is denied, or it resolves through a symlink into a denied path.

    `follow_last=False` is for changes to a symlink itself: its own target is judged by `symlink_problem`.
    """
    if is_denied(path, patterns):
        return f"{path} matches a denied path ({', '.join(patterns)})"
    real = resolve(path, base=base, links=links, follow_last=follow_last)
    if real is None:
        return f"{path} resolves outside the repository"
    if real != normalize(path) and is_denied(real, patterns):
        return f"{path} resolves through a symlink to {real}, a denied path ({', '.join(patterns)})"
    return None


def symlink_problem(
    link: str,
    target: str,
    patterns: Sequence[str],
    *,
    base: Path | None = None,
    links: Mapping[str, str | None] | None = None,
) -> str | None:
    """Why a symlink at `link` pointing to `target` is refused, or None when its target is harmless."""
    if target.startswith("/"):
        return f"symlink {link} points outside the repository ({target})"
    real = resolve(posixpath.join(posixpath.dirname(link), target), base=base, links=links)
    if real is None:
        return f"symlink {link} points outside the repository ({target})"
    if is_denied(real, patterns) or _contains_denied(real, patterns):
        shown = real or "the repository root"
        return f"symlink {link} points into a denied path ({shown}; denied: {', '.join(patterns)})"
    return None
