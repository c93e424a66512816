"""Differences between two sequences (lines, AST tokens) that stay fast on whole files.

difflib's SequenceMatcher without its junk heuristic is quadratic in the worst case, and the token stream of a
parsed module is that worst case: a handful of tokens (`(`, `)`, `Name`, `Load`) repeat tens of thousands of
times. Matching a 3,500-line module's two versions took about a minute. A fix changes a small region, so the
common head and tail are set aside first (they are equal by definition) and only the span between them is
matched: the same opcodes for a single edited region, in milliseconds.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence

__all__ = ["Opcode", "edit_opcodes"]

#: difflib's (tag, i1, i2, j1, j2), with tag one of "replace", "delete", "insert".
Opcode = tuple[str, int, int, int, int]


def edit_opcodes(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Opcode]:
    """The non-equal opcodes turning `a` into `b`, in `a`'s and `b`'s own indexes."""
    limit = min(len(a), len(b))
    head = 0
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False)
    return [
        (tag, i1 + head, i2 + head, j1 + head, j2 + head)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]
