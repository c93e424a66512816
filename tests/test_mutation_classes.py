"""Edit classes added from mining small real fixes (bench/edit_classes.py): callee swaps, keyword
arguments, loop exits. Each is checked on a made-up bug its edit fixes, and on a neutral function where it
must stay quiet or bounded. Also the miner's classifier on made-up before/after pairs."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agents.repair.mutation import build_context
from agents.repair.mutation.templates import OPERATOR_TIERS, Candidate, generate_candidates

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import edit_classes


def _candidates(source: str, marker: str = "# BUG") -> list[Candidate]:
    line = next(i for i, text in enumerate(source.splitlines(), 1) if marker in text)
    return list(generate_candidates(source, line))


def _fixing(source: str, check: Callable[[dict[str, Any]], bool], operator: str) -> list[Candidate]:
    """Candidates of `operator` whose program passes the check."""
    fixed = []
    for candidate in _candidates(source):
        if candidate.operator != operator:
            continue
        namespace: dict[str, Any] = {}
        try:
            exec(compile(candidate.new_source, "<mutant>", "exec"), namespace)
            ok = bool(check(namespace))
        except Exception:  # a wrong mutant may raise anything
            ok = False
        if ok:
            fixed.append(candidate)
    return fixed


CALLEE_BUG = textwrap.dedent(
    """
    def celsius(f):
        return (f - 32) * 5 / 9

    def fahrenheit(c):
        return c * 9 / 5 + 32

    def warmest_in_f(readings_c):
        return max(celsius(r) for r in readings_c)  # BUG
    """
)


def test_callee_swap_fixes_a_call_to_the_wrong_function() -> None:
    fixed = _fixing(CALLEE_BUG, lambda ns: ns["warmest_in_f"]([0, 100]) == 212, "callee")
    assert [c.description for c in fixed] == ["line 9: `celsius` -> `fahrenheit`"]
    assert fixed[0].tier in OPERATOR_TIERS["callee"]


METHOD_BUG = textwrap.dedent(
    """
    class Basket:
        def __init__(self):
            self.items = []

        def add(self, item):
            self.items.append(item)

        def remove_all(self, item):
            self.items = [i for i in self.items if i != item]

        def add_many(self, items):
            for item in items:
                self.remove_all(item)  # BUG
            return self
    """
)


def test_callee_swap_fixes_a_call_to_the_wrong_method_of_the_class() -> None:
    fixed = _fixing(METHOD_BUG, lambda ns: ns["Basket"]().add_many([1, 2]).items == [1, 2], "callee")
    assert "`self.remove_all` -> `self.add`" in fixed[0].description


def test_callee_swap_respects_arity_and_kind() -> None:
    source = textwrap.dedent(
        """
        def one(a):
            return a

        def two(a, b):
            return a + b

        class Box:
            def __init__(self, a):
                self.a = a

        def use(x):
            return one(x)  # BUG
        """
    )
    callees = [c.description for c in _candidates(source) if c.operator == "callee"]
    # two() needs two arguments and Box is a class: neither replaces a one-argument function call.
    assert callees == []


KEYWORD_BUG = textwrap.dedent(
    """
    def tokens(text, lowercase=False):
        words = text.split()
        return [w.lower() for w in words] if lowercase else words

    def unique_tokens(text, lowercase=False):
        return sorted(set(tokens(text)))  # BUG
    """
)


def test_keyword_forwarding_fixes_a_dropped_parameter() -> None:
    fixed = _fixing(KEYWORD_BUG, lambda ns: ns["unique_tokens"]("A a b", lowercase=True) == ["a", "b"], "keyword")
    assert [c.description for c in fixed] == ["line 7: `tokens(text)` -> `tokens(text, lowercase=lowercase)`"]


def test_keyword_drop_fixes_an_extra_keyword() -> None:
    source = textwrap.dedent(
        """
        def pad(text, width, fill=" "):
            return text.rjust(width, fill)

        def money(cents):
            return pad(str(cents), 6, fill="0")  # BUG
        """
    )
    fixed = _fixing(source, lambda ns: ns["money"](42) == "    42", "keyword")
    assert [c.description for c in fixed] == ["line 6: `pad(str(cents), 6, fill='0')` -> `pad(str(cents), 6)`"]


LOOP_EXIT_BUG = textwrap.dedent(
    """
    def total_valid(amounts):
        total = 0
        for amount in amounts:
            if amount is not None and amount < 0:
                raise ValueError(amount)
            total += amount  # BUG
        return total
    """
)


def test_loop_exit_skips_an_item_with_a_condition_of_the_function() -> None:
    fixed = _fixing(LOOP_EXIT_BUG, lambda ns: ns["total_valid"]([1, None, 2]) == 3, "loop_exit")
    assert fixed, "no loop exit fixed the missing skip"
    assert all("continue" in c.description for c in fixed)


def test_loop_exit_is_bounded_and_quiet_outside_loops() -> None:
    neutral = textwrap.dedent(
        """
        def describe(x, y):
            if x > y:
                label = "up"
            else:
                label = "down"
            return label + str(x - y)  # BUG
        """
    )
    assert [c for c in _candidates(neutral) if c.operator == "loop_exit"] == []
    looped = textwrap.dedent(
        """
        def scan(rows, a, b, c, d, e):
            out = []
            for row in rows:
                out.append(row)  # BUG
            if a: pass
            if b: pass
            if c: pass
            if d: pass
            if e: pass
            return out
        """
    )
    exits = [c for c in _candidates(looped) if c.operator == "loop_exit"]
    # At most four conditions, each as continue/break and negated.
    assert 0 < len(exits) <= 16


def test_new_classes_stay_quiet_on_a_neutral_function() -> None:
    neutral = textwrap.dedent(
        """
        import math

        def hypotenuse(a, b):
            return math.sqrt(a * a + b * b)  # BUG
        """
    )
    new = [c for c in _candidates(neutral) if c.operator in ("callee", "keyword", "loop_exit")]
    assert new == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("def f(x):\n    return g(x)\n", "def f(x):\n    return h(x)\n", ["callee change"]),
        ("def f(x):\n    return g(x)\n", "def f(x):\n    return x\n", ["call unwrap"]),
        ("def f(x):\n    return x\n", "def f(x):\n    return str(x)\n", ["call wrap"]),
        ("def f(x):\n    return g(x)\n", "def f(x):\n    return g(x, 1)\n", ["argument added/removed"]),
        ("def f(x):\n    return g(x)\n", "def f(x):\n    return g(x, k=1)\n", ["keyword argument added/removed"]),
        ("def f(x):\n    return x.pop()\n", "def f(x):\n    return x.popleft()\n", ["method swap"]),
        (
            "def f(a, b, c):\n    return a < b < c\n",
            "def f(a, b, c):\n    return a < b <= c\n",
            ["comparison chain change"],
        ),
        ("def f(a, b, c):\n    return a < b < c\n", "def f(a, b, c):\n    return a < b\n", ["comparison chain change"]),
        ("def f(a):\n    return a + 1\n", "def f(a):\n    return a - 1\n", ["operator swap"]),
        (
            "def f(s):\n    return s[0] == 1 and s[1] == 2\n",
            "def f(s):\n    return s[0] == 1 and len(s) > 1 and s[1] == 2\n",
            ["condition term added/removed"],
        ),
        (
            "def f(xs):\n    for x in xs:\n        g(x)\n",
            "def f(xs):\n    for x in xs:\n        if x is None:\n            continue\n        g(x)\n",
            ["guard inserted"],
        ),
        (
            "def f(xs):\n    for x in xs:\n        g(x)\n",
            "def f(xs):\n    for x in xs:\n        g(x)\n        break\n",
            ["continue/break inserted"],
        ),
        ("def f(x):\n    g(x)\n    return x\n", "def f(x):\n    return x\n", ["statement deleted"]),
        ("def f(k):\n    return '%r' % k\n", "def f(k):\n    return '%r' % (k,)\n", ["value wrapped in a 1-tuple"]),
        (
            "def f(d, k):\n    v = d[k]\n    return v\n",
            "def f(d, k):\n    try:\n        v = d[k]\n    except KeyError:\n        v = None\n    return v\n",
            ["statement wrapped in try/unwrapped"],
        ),
        (
            "def f(x):\n    return isinstance(x, str)\n",
            "def f(x):\n    return isinstance(x, (str, bytes))\n",
            ["isinstance type widened/narrowed"],
        ),
        (
            "def f(x):\n    return isinstance(x, (int, bool))\n",
            "def f(x):\n    return isinstance(x, int)\n",
            ["isinstance type widened/narrowed"],
        ),
        ("def f(s):\n    return s[1:]\n", "def f(s):\n    return s[:-1]\n", ["slice taken from the other end"]),
        ("def f(s, n):\n    return s[-n:]\n", "def f(s, n):\n    return s[:n]\n", ["slice taken from the other end"]),
        ("def f(s):\n    return s[1:]\n", "def f(s):\n    return s[2:]\n", ["constant change"]),
        (
            "def f(a, b):\n    a = b\n    b = a + b\n    return a\n",
            "def f(a, b):\n    a, b = b, a + b\n    return a\n",
            ["assignments made simultaneous/sequential"],
        ),
        (
            'def f(x):\n    """Doc."""\n    return x\n',
            'def f(x):\n    """Docs."""\n    return x\n',
            [edit_classes.NON_CODE],
        ),
    ],
)
def test_classifier_on_made_up_edits(old: str, new: str, expected: list[str]) -> None:
    assert sorted(edit_classes.classify_sources(old, new)) == sorted(expected)


def test_apply_diff_rebuilds_the_new_source() -> None:
    old = "a\nb\nc\nd\n"
    diff = "--- a/x.py\n+++ b/x.py\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n"
    assert edit_classes.apply_diff(old, diff) == "a\nb\nC\nd\n"


HELPER_BUG = textwrap.dedent(
    """
    _TABLE = {}

    def _normalize(name):
        return name.strip().lower()

    def register(name, value):
        _TABLE[_normalize(name)] = value

    def lookup(name):
        return _TABLE[name]  # BUG
    """
)


def test_helper_wrap_passes_a_value_through_the_modules_own_converter() -> None:
    def check(ns: dict[str, Any]) -> bool:
        ns["register"]("  Colour ", 1)
        return ns["lookup"]("COLOUR") == 1

    fixed = _fixing(HELPER_BUG, check, "helper_wrap")
    assert [c.description for c in fixed] == ["line 11: `name` -> `_normalize(name)`"]
    assert fixed[0].tier in OPERATOR_TIERS["helper_wrap"]
    # The subscripted table is the object of the subscript, not a value to convert.
    assert not any("_normalize(_TABLE)" in c.new_source for c in _candidates(HELPER_BUG))


def test_helper_wrap_needs_a_helper_the_module_applies_to_one_value() -> None:
    source = textwrap.dedent(
        """
        def _pair(a, b):
            return (a, b)

        def _unused(a):
            return a

        def _twice(a):
            return _twice(a) if a > 9 else a * 2

        def use(x, y):
            return _pair(x, y)  # BUG
        """
    )
    wraps = [c.description for c in _candidates(source) if c.operator == "helper_wrap"]
    # `_pair` takes two values and `_unused` is never applied: neither is a converter. `_twice` is applied to
    # one value (by itself), so it may wrap an operand of another function.
    assert sorted(wraps) == ["line 12: `x` -> `_twice(x)`", "line 12: `y` -> `_twice(y)`"]


LENGTH_BUG = textwrap.dedent(
    """
    def is_version_prefix(text):
        return text[0] == "v" and text[1].isdigit()  # BUG
    """
)


def test_length_guard_checks_the_length_before_the_index_that_runs_past_the_end() -> None:
    def check(ns: dict[str, Any]) -> bool:
        f = ns["is_version_prefix"]
        return f("v2") is True and f("v") is False and f("x1") is False

    fixed = _fixing(LENGTH_BUG, check, "length_guard")
    # One term per sequence, for its farthest index, before the first operand that indexes it.
    assert [c.new_source.splitlines()[2].strip() for c in fixed] == [
        'return len(text) > 1 and text[0] == "v" and text[1].isdigit()  # BUG'
    ]
    assert fixed[0].tier in OPERATOR_TIERS["length_guard"]


def test_length_guard_covers_the_guarded_body_and_offsets_from_a_name() -> None:
    source = textwrap.dedent(
        """
        def first_pair(rows, mode, i):
            if mode == "header":  # BUG
                return rows[0], rows[-2]
            while rows[i + 1] > 0:
                i += 1
            return None
        """
    )
    guards = sorted(c.new_source.splitlines()[2].strip() for c in _candidates(source) if c.operator == "length_guard")
    # Only the body indexes `rows`, so the term goes last; one guard per sequence, for its farthest index
    # (`rows[-2]` needs two items).
    assert guards == ['if mode == "header" and len(rows) > 1:  # BUG']
    offsets = [
        c.new_source.splitlines()[4].strip() for c in _candidates(source, "while") if c.operator == "length_guard"
    ]
    assert offsets == ["while len(rows) > i + 1 and rows[i + 1] > 0:"]


def test_length_guard_stays_quiet_when_the_condition_measures_the_sequence() -> None:
    source = textwrap.dedent(
        """
        def tail_is_blank(parts, key):
            return len(parts) > 1 and parts[1] == "" and key[key.index("x")] == 1  # BUG
        """
    )
    assert [c for c in _candidates(source) if c.operator == "length_guard"] == []


RAISE_BUG = textwrap.dedent(
    """
    class SlugError(ValueError):
        pass

    def slug(title):
        return title.strip().lower().replace(" ", "-")  # BUG
    """
)


def _with_raises(source: str, *raises: str) -> list[Candidate]:
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "# BUG" in text)
    context = replace(build_context(source), raises=raises)
    return list(generate_candidates(source, line, context=context))


def test_raise_guard_rejects_the_input_the_test_expects_to_raise() -> None:
    def rejects(ns: dict[str, Any], exc: type[BaseException]) -> bool:
        try:
            ns["slug"](42)
        except exc:
            return ns["slug"](" Hello World") == "hello-world"
        except Exception:  # a wrong mutant may raise anything else
            return False
        return False

    for name, exc in (("TypeError", TypeError), ("SlugError", ValueError)):
        fixed = []
        for cand in _with_raises(RAISE_BUG, name):
            namespace: dict[str, Any] = {}
            if cand.operator != "raise_guard":
                continue
            exec(compile(cand.new_source, "<mutant>", "exec"), namespace)
            if rejects(namespace, exc):
                fixed.append(cand.new_source.splitlines()[5].strip())
        assert fixed == ["if not isinstance(title, str):"], name
        assert f"raise {name}(f'invalid title: {{title!r}}')" in "\n".join(
            c.new_source for c in _with_raises(RAISE_BUG, name)
        )


def test_raise_guard_needs_an_expected_exception_the_module_can_name() -> None:
    assert [c for c in _candidates(RAISE_BUG) if c.operator == "raise_guard"] == []
    # `ParseError` is neither a builtin nor a name of the module: raising it would be a NameError.
    assert [c for c in _with_raises(RAISE_BUG, "ParseError") if c.operator == "raise_guard"] == []
    # A builtin that is not an exception (`int`) is not raised either.
    assert [c for c in _with_raises(RAISE_BUG, "int") if c.operator == "raise_guard"] == []


def test_format_tuple_formats_a_tuple_value_whole() -> None:
    source = textwrap.dedent(
        """
        def describe(key):
            return "unknown key %r" % key  # BUG
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        f = ns["describe"]
        return f(("a", 1)) == "unknown key ('a', 1)" and f("b") == "unknown key 'b'"

    fixed = _fixing(source, check, "format_tuple")
    assert [c.new_source.splitlines()[2].strip() for c in fixed] == ['return "unknown key %r" % (key,)  # BUG']
    assert fixed[0].tier in OPERATOR_TIERS["format_tuple"]


@pytest.mark.parametrize(
    "expression",
    [
        '"%s and %s" % pair',  # two conversions: the value must already be a tuple
        '"%(name)s" % fields',  # a mapping template
        '"%*d" % width',  # a `*` width takes a value of its own
        '"%s" % (key,)',  # already wrapped
        '"%s" % {"a": 1}',  # a literal that is never a tuple
        "template % key",  # not a literal template: its conversions are unknown
        '"100%%" % ()',  # no conversion at all
    ],
)
def test_format_tuple_stays_quiet_where_the_value_cannot_be_spread(expression: str) -> None:
    source = f"def show(pair, fields, width, key, template):\n    return {expression}  # BUG\n"
    assert [c for c in _candidates(source) if c.operator == "format_tuple"] == []


def test_isinstance_type_widens_to_a_sibling_builtin_type() -> None:
    source = textwrap.dedent(
        """
        def as_text(value):
            if isinstance(value, str):  # BUG
                return value.strip()
            return None
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        f = ns["as_text"]
        return f(b" x ") == b"x" and f(" y ") == "y" and f(3) is None

    fixed = _fixing(source, check, "isinstance_type")
    assert [c.new_source.splitlines()[2].strip() for c in fixed] == ["if isinstance(value, (str, bytes)):  # BUG"]
    assert fixed[0].tier in OPERATOR_TIERS["isinstance_type"]


def test_isinstance_type_takes_slices_in_item_methods_and_narrows_tuples() -> None:
    source = textwrap.dedent(
        """
        class Row:
            def __init__(self, cells):
                self.cells = cells

            def __getitem__(self, item):
                if isinstance(item, int):  # BUG
                    return self.cells[item]
                return None
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        row = ns["Row"]([1, 2, 3])
        return row[1:] == [2, 3] and row[0] == 1 and row["x"] is None

    fixed = _fixing(source, check, "isinstance_type")
    assert [c.new_source.splitlines()[6].strip() for c in fixed] == ["if isinstance(item, (int, slice)):  # BUG"]
    counting = "def count(x):\n    return 1 if isinstance(x, (int, bool, float)) else 0  # BUG\n"
    narrowed = {c.new_source.splitlines()[1].strip() for c in _candidates(counting) if c.operator == "isinstance_type"}
    assert {
        "return 1 if isinstance(x, (int, float)) else 0  # BUG",
        "return 1 if isinstance(x, (bool, float)) else 0  # BUG",
        "return 1 if isinstance(x, (int, bool)) else 0  # BUG",
    } <= narrowed
    # `slice` only where the subscript protocol passes one.
    plain = "def pick(item):\n    return isinstance(item, int)  # BUG\n"
    assert not any("slice" in c.new_source for c in _candidates(plain))


def test_slice_mirror_takes_the_slice_from_the_other_end() -> None:
    source = textwrap.dedent(
        """
        def drop_extension(name):
            parts = name.split(".")
            return ".".join(parts[1:])  # BUG
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        f = ns["drop_extension"]
        return f("report.final.pdf") == "report.final" and f("a.b") == "a"

    fixed = _fixing(source, check, "slice_mirror")
    assert [c.new_source.splitlines()[3].strip() for c in fixed] == ['return ".".join(parts[:-1])  # BUG']
    assert fixed[0].tier in OPERATOR_TIERS["slice_mirror"]
    tail = "def tail(xs, n):\n    return xs[-n:]  # BUG\n"
    # `xs[n:]` comes from the unary-minus removal already; each source is tried once.
    assert [c.description for c in _candidates(tail) if c.operator == "slice_mirror"] == [
        "line 2: `xs[-n:]` -> `xs[:n]`"
    ]
    last = "def last(items, n):\n    return items[n:] if n else []  # BUG\n"
    kept = _fixing(last, lambda ns: ns["last"]([1, 2, 3], 2) == [2, 3] and ns["last"]([1], 0) == [], "slice_mirror")
    assert [c.new_source.splitlines()[1].strip() for c in kept] == ["return items[-n:] if n else []  # BUG"]
    quiet = "def f(xs, i, j):\n    return xs[0:] + xs[i:j] + xs[::2] + xs[:]  # BUG\n"
    assert [c for c in _candidates(quiet) if c.operator == "slice_mirror"] == []


def test_swap_exchanges_the_indices_of_a_nested_subscript() -> None:
    source = textwrap.dedent(
        """
        def column(grid, c):
            return [grid[c][r] for r in range(len(grid))]  # BUG
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["column"]([[1, 2, 3], [4, 5, 6]], 2) == [3, 6]

    fixed = _fixing(source, check, "swap")
    assert [c.new_source.splitlines()[2].strip() for c in fixed] == [
        "return [grid[r][c] for r in range(len(grid))]  # BUG"
    ]
    table = "def cell(rows):\n    return rows[0][1] + rows[-1][2]  # BUG\n"
    assert not [c for c in _candidates(table) if c.operator == "swap" and "rows[1]" in c.new_source]


def test_accumulator_keeps_a_running_extreme_in_an_element_or_attribute() -> None:
    source = textwrap.dedent(
        """
        def longest_runs(words):
            best = {}
            for word in words:
                best.setdefault(word[0], 0)
                best[word[0]] = len(word)  # BUG
            return best
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["longest_runs"](["apple", "ant", "bee"]) == {"a": 5, "b": 3}

    fixed = _fixing(source, check, "accumulate")
    assert [c.new_source.splitlines()[5].strip() for c in fixed] == [
        "best[word[0]] = max(best[word[0]], len(word))  # BUG"
    ]


def test_simultaneous_assignment_replaces_a_sequential_swap() -> None:
    source = textwrap.dedent(
        """
        def lucas(n):
            a, b = 2, 1
            for _ in range(n):
                a = b  # BUG
                b = a + b
            return a
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return [ns["lucas"](n) for n in range(6)] == [2, 1, 3, 4, 7, 11]

    fixed = _fixing(source, check, "simultaneous")
    assert len(fixed) == 1 and fixed[0].tier in OPERATOR_TIERS["simultaneous"]
    assert fixed[0].new_source.splitlines()[4].strip() == "a, b = b, a + b"
    assert fixed[0].description == "lines 5-6: `a = b; b = a + b` -> `a, b = b, a + b`"
    # A computation that builds on the first result (the first value does not read the second target).
    chained = "def area(w):\n    h = w * 2  # BUG\n    s = h * w\n    return s\n"
    assert [c for c in _candidates(chained) if c.operator == "simultaneous"] == []
    same_line = "def swap(xs):\n    xs[0] = xs[1]; xs[1] = xs[0]  # BUG\n    return xs\n"
    assert [c for c in _candidates(same_line) if c.operator == "simultaneous"] == []


def test_order_wrap_passes_a_list_through_reversed_or_sorted() -> None:
    source = textwrap.dedent(
        """
        def to_octal(n):
            digits = []
            while n:
                digits.append(str(n % 8))
                n //= 8
            return "".join(digits) or "0"  # BUG
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["to_octal"](64) == "100" and ns["to_octal"](83) == "123" and ns["to_octal"](0) == "0"

    fixed = _fixing(source, check, "order_wrap")
    assert [c.new_source.splitlines()[6].strip() for c in fixed] == ['return "".join(reversed(digits)) or "0"  # BUG']
    assert fixed[0].tier in OPERATOR_TIERS["order_wrap"]
    scalar = "def f(n, name):\n    total = 0\n    return str(n) + name.upper() + str(total)  # BUG\n"
    assert [c for c in _candidates(scalar) if c.operator == "order_wrap"] == []


def test_loop_counters_and_pairwise_assignments_are_numbers() -> None:
    import ast

    from agents.repair.mutation.scope import variable_kinds

    source = textwrap.dedent(
        """
        def scale(grid, names):
            rows, cols = len(grid), len(grid[0])
            for i in range(rows):
                for j, name in enumerate(names):
                    grid[i][j] = name
            return grid
        """
    )
    kinds = variable_kinds(ast.parse(source).body[0])
    assert {k: kinds.get(k) for k in ("rows", "cols", "i", "j", "grid")} == {
        "rows": "num", "cols": "num", "i": "num", "j": "num", "grid": "seq"
    }  # fmt: skip
    assert "name" not in kinds  # an enumerate item: no evidence either way
    # A number swapped for a list is a long shot (tier 3), so the search reaches other families first.
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "grid[i][j] = name" in text)
    tiers = {c.description: c.tier for c in generate_candidates(source, line) if c.operator == "name"}
    assert tiers["line 6: `i` -> `grid`"] == 3 and tiers["line 6: `i` -> `j`"] == 1


def test_term_addition_reaches_slice_bounds_and_indices() -> None:
    source = textwrap.dedent(
        """
        def page(items, offset, count):
            return items[offset:count]  # BUG
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["page"](list("abcdef"), 2, 3) == ["c", "d", "e"] and ns["page"]([], 0, 5) == []

    fixed = _fixing(source, check, "term_addition")
    assert {c.new_source.splitlines()[2].strip() for c in fixed} == {"return items[offset:count + offset]  # BUG"}


def test_length_guard_checks_a_counter_against_the_sequence_it_indexes() -> None:
    source = textwrap.dedent(
        """
        def interleave(a, b):
            out = []
            i = j = 0
            while i < len(a):  # BUG
                out.append(a[i])
                out.append(b[j])
                i += 1
                j += 1
            return out + a[i:] + b[j:]
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["interleave"]([1, 2, 3], [9]) == [1, 9, 2, 3] and ns["interleave"]([1], [7, 8]) == [1, 7, 8]

    fixed = _fixing(source, check, "length_guard")
    assert [c.new_source.splitlines()[4].strip() for c in fixed] == ["while i < len(a) and len(b) > j:  # BUG"]
    lookup = "def total(prices, key):\n    if prices[key] > 0:  # BUG\n        return prices[key]\n    return 0\n"
    assert [c for c in _candidates(lookup) if c.operator == "length_guard"] == []  # a key, not a position


def test_augmented_product_where_the_function_starts_at_one() -> None:
    source = textwrap.dedent(
        """
        def factorial(n):
            result = 1
            for k in range(2, n + 1):
                result = k  # BUG
            return result
        """
    )
    tiers = {c.description: c.tier for c in _candidates(source) if c.operator == "augop"}
    assert tiers["line 5: `result = k` -> `result *= k`"] == 2
    summing = source.replace("result = 1", "result = 0")
    tiers = {c.description: c.tier for c in _candidates(summing) if c.operator == "augop"}
    assert tiers["line 5: `result = k` -> `result *= k`"] == 3 and tiers["line 5: `result = k` -> `result += k`"] == 2


def test_order_wrap_sorts_a_value_stored_as_a_sequence() -> None:
    source = textwrap.dedent(
        """
        def lowest_two(values):
            ordered = values  # BUG
            return ordered[:2]
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["lowest_two"]([5, 1, 3]) == [1, 3]

    fixed = _fixing(source, check, "order_wrap")
    assert [c.new_source.splitlines()[2].strip() for c in fixed] == ["ordered = sorted(values)  # BUG"]


def test_flag_reset_clears_a_flag_in_the_branch_it_enables() -> None:
    source = textwrap.dedent(
        """
        def join_words(words):
            out = ""
            first = True
            for word in words:
                if not first:
                    out += ", "
                if first and word:
                    out += word.upper()  # BUG
                else:
                    out += word
            return out
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["join_words"](["a", "b", "c"]) == "A, b, c" and ns["join_words"]([]) == ""

    fixed = _fixing(source, check, "flag_reset")
    assert [c.description for c in fixed] == ["insert `first = False` after line 9"]
    assert fixed[0].tier in OPERATOR_TIERS["flag_reset"]
    # A branch that already clears the flag, or a name that is no bool flag, gets nothing.
    cleared = source.replace("out += word.upper()  # BUG", "out += word.upper()  # BUG\n            first = False")
    assert [c for c in _candidates(cleared) if c.operator == "flag_reset"] == []
    counted = "def f(xs, limit):\n    for x in xs:\n        if limit and x:\n            print(x)  # BUG\n"
    assert [c for c in _candidates(counted) if c.operator == "flag_reset"] == []


def test_early_return_guards_a_divisor_that_may_be_zero() -> None:
    source = textwrap.dedent(
        """
        def share(part, whole):
            if part is None:
                return None
            return part / whole  # BUG
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["share"](1, 4) == 0.25 and ns["share"](3, 0) is None and ns["share"](None, 2) is None

    fixed = _fixing(source, check, "early_return")
    assert [c.description for c in fixed] == ["insert `if not whole: return None` before line 5"]
    constant = "def half(x):\n    return x / 2  # BUG\n"
    assert not [c for c in _candidates(constant) if c.operator == "early_return" and "not" in c.description]


def test_missing_step_copies_the_divmod_partner_of_a_step_the_function_takes() -> None:
    source = textwrap.dedent(
        """
        def feet_inches(length):
            return [length // 12, length]  # BUG
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["feet_inches"](30) == [2, 6] and ns["feet_inches"](12) == [1, 0]

    fixed = _fixing(source, check, "missing_step")
    assert [c.description for c in fixed] == ["line 3: `length` -> `length % 12`"]
    assert fixed[0].tier in OPERATOR_TIERS["missing_step"]


def test_missing_step_halves_a_sum_that_should_be_a_midpoint() -> None:
    source = textwrap.dedent(
        """
        def bisect_sqrt(n):
            lo, hi = 0, n + 1
            while hi - lo > 1:
                mid = lo + hi  # BUG
                if mid * mid <= n:
                    lo = mid
                else:
                    hi = mid
            return lo
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return [ns["bisect_sqrt"](n) for n in (0, 1, 8, 9, 26)] == [0, 1, 2, 3, 5]

    fixed = _fixing(source, check, "missing_step")
    assert [c.new_source.splitlines()[4].strip() for c in fixed] == ["mid = (lo + hi) // 2  # BUG"]


def test_missing_step_leaves_stepped_terms_and_non_numbers_alone() -> None:
    source = textwrap.dedent(
        """
        def label(parts, count):
            total = count % 7
            return parts + [total // 2]  # BUG
        """
    )
    steps = [c.description for c in _candidates(source) if c.operator == "missing_step"]
    # `total // 2` is stepped already and `parts` is a list: neither gets a step; nothing else is a site here.
    assert steps == []


def test_builtin_wrap_counts_distinct_items_and_measures_distances() -> None:
    distinct = textwrap.dedent(
        """
        def visited_cities(trips):
            stops = [city for trip in trips for city in trip]
            return len(stops)  # BUG
        """
    )
    fixed = _fixing(distinct, lambda ns: ns["visited_cities"]([["a", "b"], ["b", "c"]]) == 3, "builtin_wrap")
    assert [c.description for c in fixed] == ["line 4: `stops` -> `set(stops)`"]
    assert fixed[0].tier in OPERATOR_TIERS["builtin_wrap"]
    distance = "def close_enough(a, b, tolerance):\n    return a - b <= tolerance  # BUG\n"

    def check(ns: dict[str, Any]) -> bool:
        return [ns["close_enough"](*args) for args in ((1, 5, 2), (5, 4, 2), (4, 5, 2))] == [False, True, True]

    fixed = _fixing(distance, check, "builtin_wrap")
    assert [c.description for c in fixed] == ["line 2: `a - b` -> `abs(a - b)`"]


def test_builtin_wrap_turns_a_container_into_its_size_and_a_number_into_text() -> None:
    size = "def spare(seats, booked):\n    booked = list(booked)\n    return seats - booked  # BUG\n"
    fixed = _fixing(size, lambda ns: ns["spare"](5, ["x", "y"]) == 3, "builtin_wrap")
    assert [c.description for c in fixed] == ["line 3: `booked` -> `len(booked)`"]
    text = "def tag(n):\n    n = n + 1\n    return 'v' + n  # BUG\n"
    fixed = _fixing(text, lambda ns: ns["tag"](1) == "v2", "builtin_wrap")
    assert [c.description for c in fixed] == ["line 3: `n` -> `str(n)`"]
    shadowed = "def count(xs, set):\n    return len(xs)  # BUG\n"
    assert [c for c in _candidates(shadowed) if c.operator == "builtin_wrap"] == []


def test_a_method_of_the_same_family_replaces_a_confused_one() -> None:
    casing = "def headline(words):\n    return ' '.join(w.upper() for w in words)  # BUG\n"
    fixed = _fixing(casing, lambda ns: ns["headline"](["big", "news"]) == "Big News", "attribute")
    assert [c.description for c in fixed] == ["line 2: `w.upper` -> `w.capitalize`", "line 2: `w.upper` -> `w.title`"]
    by_value = "def drop(items, unwanted):\n    items = list(items)\n    items.pop(unwanted)  # BUG\n    return items\n"
    fixed = _fixing(by_value, lambda ns: ns["drop"]([5, 7, 9], 9) == [5, 7], "attribute")
    assert [c.description for c in fixed] == ["line 3: `items.pop` -> `items.remove`"]


def test_slice_mirror_also_trims_the_other_end() -> None:
    source = "def inner(text):\n    return text[1:]  # BUG\n"
    fixed = _fixing(source, lambda ns: ns["inner"]("[ab]") == "ab" and ns["inner"]("<>") == "", "slice_mirror")
    assert [c.description for c in fixed] == ["line 2: `text[1:]` -> `text[1:-1]`"]


def test_early_return_guards_the_first_item_of_a_sequence_that_may_be_empty() -> None:
    source = textwrap.dedent(
        """
        def initials(name):
            name = name.strip()
            first = name[0].upper()  # BUG
            if " " not in name:
                return first
            return first + name.split()[-1][0].upper()
        """
    )

    def check(ns: dict[str, Any]) -> bool:
        return ns["initials"]("  ") is None and ns["initials"]("ada lovelace") == "AL"

    fixed = _fixing(source, check, "early_return")
    assert [c.description for c in fixed] == ["insert `if not name: return None` before line 4"]
    assert fixed[0].tier in OPERATOR_TIERS["early_return"]


def test_swap_exchanges_the_components_of_a_tuple_value() -> None:
    source = "def ranking(votes):\n    return sorted(votes.items(), key=lambda kv: (kv[0], -kv[1]))  # BUG\n"

    def check(ns: dict[str, Any]) -> bool:
        return ns["ranking"]({"x": 1, "y": 4, "z": 4}) == [("y", 4), ("z", 4), ("x", 1)]

    fixed = _fixing(source, check, "swap")
    assert [c.description for c in fixed] == ["line 2: `(kv[0], -kv[1])` -> `(-kv[1], kv[0])`"]
    # A subscript's index tuple and a tuple of literals are not values to reorder here.
    table = "def cell(grid, r, c):\n    pair = (1, 2)\n    return grid[r, c], pair  # BUG\n"
    swaps = [c.description for c in _candidates(table) if c.operator == "swap"]
    assert "line 3: `(grid[r, c], pair)` -> `(pair, grid[r, c])`" in swaps
    assert all("(1, 2)" not in s for s in swaps)


def test_builtin_wrap_turns_a_value_added_to_built_text_into_text() -> None:
    source = "def span(lo, hi):\n    return str(lo) + '..' + hi  # BUG\n"
    fixed = _fixing(source, lambda ns: ns["span"](1, 5) == "1..5", "builtin_wrap")
    assert [c.description for c in fixed] == ["line 2: `hi` -> `str(hi)`"]
