"""Sequence differences on whole files: the common head and tail are set aside, the opcodes stay difflib's."""

from __future__ import annotations

import difflib
import random

from patch_selectors.assessment import deletes_only, semantic_size
from sandboxes.seqdiff import edit_opcodes


def _apply(a: list[str], b: list[str], ops: list[tuple[str, int, int, int, int]]) -> list[str]:
    out, at = [], 0
    for _tag, i1, i2, j1, j2 in ops:
        out += a[at:i1] + b[j1:j2]
        at = i2
    return out + a[at:]


def test_the_opcodes_rebuild_the_new_sequence_and_match_difflib_on_one_edited_region() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("()NL,x") for _ in range(rng.randint(0, 60))]
        i = rng.randint(0, len(a))
        j = rng.randint(i, min(len(a), i + 4))
        b = a[:i] + [rng.choice("()NLy") for _ in range(rng.randint(0, 4))] + a[j:]
        ops = edit_opcodes(a, b)
        assert _apply(a, b, ops) == b
        full = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
        assert sum(max(i2 - i1, j2 - j1) for _t, i1, i2, j1, j2 in ops) <= sum(
            max(i2 - i1, j2 - j1) for _t, i1, i2, j1, j2 in full
        )


def test_equal_and_empty_sequences() -> None:
    assert edit_opcodes([], []) == [] and edit_opcodes(list("abc"), list("abc")) == []
    assert edit_opcodes([], ["a"]) == [("insert", 0, 0, 0, 1)]
    assert edit_opcodes(["a", "a"], ["a"]) == [("delete", 1, 2, 1, 1)]


def test_a_one_token_fix_in_a_large_module_is_one_token() -> None:
    """The shape that took a minute: thousands of near-identical functions, one constant changed."""
    old = "".join(f"def f{n}(x):\n    return g(x, [1, 2], {{'k': (x, x)}})\n\n" for n in range(1500))
    new = old.replace("def f700(x):\n    return g(x, [1, 2]", "def f700(x):\n    return g(x, [1, 3]")
    assert semantic_size({"m.py": old}, {"m.py": new}) == 1
    assert not deletes_only({"m.py": old}, {"m.py": new})
    dropped = old.replace("def f700(x):\n    return g(x, [1, 2]", "def f700(x):\n    return g(x, [1]")
    assert deletes_only({"m.py": old}, {"m.py": dropped})
