"""The path policy over a whole patch: a rename touches both paths, and symlinks are followed.

The rules per path live in `sandboxes.pathpolicy` (the LLM edit tool uses them too); this module reads what
a git diff says about each file (old and new path, symlink modes, a link's target) and applies them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from patch_selectors.patch import FilePatch, Patch, PatchParseError
from sandboxes.pathpolicy import path_problem, symlink_problem

__all__ = ["SYMLINK_MODE", "denied_path_problems", "diff_path_problems"]

#: The git file mode of a symbolic link.
SYMLINK_MODE = "120000"


def _index_mode(f: FilePatch) -> str | None:
    # "index abc..def 120000": git puts the mode here when it did not change.
    for line in f.header_lines:
        if line.startswith("index "):
            parts = line.split()
            return parts[2] if len(parts) == 3 else None
    return None


def _base_link(base: Path | None, rel: str | None) -> str | None:
    if base is None or rel is None:
        return None
    try:
        return os.readlink(base / rel)
    except OSError:  # not a symlink in the base checkout
        return None


def _old_is_link(f: FilePatch, base: Path | None) -> bool:
    if f.is_new or f.old_path is None:
        return False
    mode = f.old_mode or _index_mode(f)
    return mode == SYMLINK_MODE if mode else _base_link(base, f.old_path) is not None


def _new_link_target(f: FilePatch, base: Path | None) -> str | None:
    """The target of the symlink this file becomes, or None when it does not become a symlink."""
    if f.is_deleted or f.new_path is None:
        return None
    mode = f.new_mode or _index_mode(f)
    if mode and mode != SYMLINK_MODE:
        return None
    if mode is None:
        # A pure rename (100% similar) shows no mode and no content: the link keeps its base target.
        return _base_link(base, f.old_path) if f.is_rename and not f.hunks else None
    if not f.hunks:
        return _base_link(base, f.old_path)
    # A link's blob is its target, one line without a newline.
    return "\n".join(line for h in f.hunks for line in h.added)


def denied_path_problems(patch: Patch, patterns: Sequence[str], *, base: Path | None = None) -> list[str]:
    """Every reason the patch breaks the path policy (empty when it does not).

    Both paths of a rename or copy count, the old path of a deletion counts, a path that resolves through a
    symlink (in `base`, the checkout the patch applies to, or added by the patch) into a denied path counts,
    and so does a symlink the patch adds or retargets into a denied path or out of the repository.
    """
    # What the patch makes of each path: a symlink (its target) or, for a file it creates, renames or retypes,
    # a plain file (None). Paths it edits in place keep what the base checkout says, so an edit *through* a
    # symlink already there is followed.
    links: dict[str, str | None] = {}
    targets: dict[int, str] = {}
    for i, f in enumerate(patch.files):
        target = _new_link_target(f, base)
        if target is not None and f.new_path is not None:
            links[f.new_path] = targets[i] = target
        elif f.new_path is not None and (f.is_new or f.is_rename or f.old_mode != f.new_mode):
            links[f.new_path] = None
    problems: list[str] = []
    for i, f in enumerate(patch.files):
        old_link = _old_is_link(f, base)
        for path in dict.fromkeys(p for p in (f.old_path, f.new_path) if p is not None):
            own_link = (path == f.new_path and i in targets) or (path == f.old_path and old_link)
            problem = path_problem(path, patterns, base=base, links=links, follow_last=not own_link)
            if problem is not None:
                problems.append(problem)
        if i in targets and f.new_path is not None:
            problem = symlink_problem(f.new_path, targets[i], patterns, base=base, links=links)
            if problem is not None:
                problems.append(problem)
    return list(dict.fromkeys(problems))


def diff_path_problems(diff: str, patterns: Sequence[str], *, base: Path | None = None) -> list[str]:
    """`denied_path_problems` for diff text about to be published; a diff that cannot be parsed is refused."""
    try:
        patch = Patch.parse(diff)
    except PatchParseError as exc:
        return [f"the patch cannot be checked against the path policy: {exc}"]
    return denied_path_problems(patch, patterns, base=base)
