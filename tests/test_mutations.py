"""Mutation templates: each family fixes a small hand-written bug early; every candidate is a clean splice."""

from __future__ import annotations

import ast
import difflib
import random
import signal
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agents.repair.mutation.templates import (
    OPERATOR_TIERS,
    Candidate,
    build_context,
    estimate_count,
    generate_candidates,
)

SHARED = Path(__file__).resolve().parents[2] / "shared"


class _Timeout(Exception):
    pass


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Some mutants loop forever; interrupt them (tests run in the main thread)."""

    def fire(signum: int, frame: object) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _passes(source: str, check: Callable[[dict[str, Any]], bool]) -> bool:
    namespace: dict[str, Any] = {}
    try:
        with _time_limit(0.5):
            exec(compile(source, "<mutant>", "exec"), namespace)
            return bool(check(namespace))
    except Exception:  # a wrong mutant may raise anything
        return False


def _bug_line(source: str) -> int:
    return next(i for i, text in enumerate(source.splitlines(), 1) if "# BUG" in text)


# (id, buggy source with the faulty line marked "# BUG", check that passes once fixed, expected operator,
#  the fix must be among the first N candidates)
CASES: list[tuple[str, str, Callable[[dict[str, Any]], bool], str, int]] = [
    (
        "binop",
        """
        def average(xs):
            return sum(xs) * len(xs)  # BUG
        """,
        lambda ns: ns["average"]([1, 2, 6]) == 3,
        "binop",
        5,
    ),
    (
        "augop",
        """
        def total_cost(prices):
            total = 0
            for price in prices:
                total -= price  # BUG
            return total
        """,
        lambda ns: ns["total_cost"]([2, 3]) == 5,
        "augop",
        5,
    ),
    (
        "cmpop",
        """
        def is_adult(age):
            return age > 18  # BUG
        """,
        lambda ns: ns["is_adult"](18) and not ns["is_adult"](17),
        "cmpop",
        3,
    ),
    (
        "membership",
        """
        def missing(required, given):
            return [name for name in required if name in given]  # BUG
        """,
        lambda ns: ns["missing"](["a", "b"], {"a"}) == ["b"],
        "cmpop",
        3,
    ),
    (
        "boolop",
        """
        def in_range(x, lo, hi):
            return lo <= x or x <= hi  # BUG
        """,
        lambda ns: ns["in_range"](3, 1, 5) and not ns["in_range"](9, 1, 5) and not ns["in_range"](0, 1, 5),
        "boolop",
        8,
    ),
    (
        "negate_insert",
        """
        class Session:
            def __init__(self, authenticated):
                self.authenticated = authenticated

        def needs_login(session):
            if session.authenticated:  # BUG
                return True
            return False
        """,
        lambda ns: ns["needs_login"](ns["Session"](False)) and not ns["needs_login"](ns["Session"](True)),
        "negate",
        12,
    ),
    (
        "negate_remove",
        """
        def has_errors(levels):
            return not any(level == "error" for level in levels)  # BUG
        """,
        lambda ns: ns["has_errors"](["info", "error"]) and not ns["has_errors"](["info"]),
        "negate",
        3,
    ),
    (
        "off_by_one_range",
        """
        def window_sums(xs, k):
            return [sum(xs[i:i + k]) for i in range(len(xs) - k)]  # BUG
        """,
        lambda ns: ns["window_sums"]([1, 2, 3], 2) == [3, 5],
        "off_by_one",
        16,
    ),
    (
        "off_by_one_constant",
        """
        def countdown(n):
            return list(range(n, 1, -1))  # BUG
        """,
        lambda ns: ns["countdown"](3) == [3, 2, 1],
        "off_by_one",
        8,
    ),
    (
        "constant_nested_empty",
        """
        def cartesian(lists):
            combos = []  # BUG
            for options in lists:
                combos = [combo + [x] for combo in combos for x in options]
            return combos
        """,
        lambda ns: ns["cartesian"]([[1, 2], [3]]) == [[1, 3], [2, 3]],
        "constant",
        3,
    ),
    (
        "constant_bool",
        """
        def parse_flag(text):
            if text.strip().lower() in ("yes", "on"):
                return False  # BUG
            return False
        """,
        lambda ns: ns["parse_flag"](" Yes ") is True and ns["parse_flag"]("no") is False,
        "constant",
        3,
    ),
    (
        "term_removal",
        """
        def distance(a, b):
            return abs(a - b) + 1  # BUG
        """,
        lambda ns: ns["distance"](2, 5) == 3,
        "term_removal",
        8,
    ),
    (
        "name",
        """
        def scale(points, factor):
            return [(x * factor, x * factor) for x, y in points]  # BUG
        """,
        lambda ns: ns["scale"]([(1, 2)], 3) == [(3, 6)],
        "name",
        20,
    ),
    (
        "attribute",
        """
        class Rect:
            def __init__(self, width, height):
                self.width = width
                self.height = height

        def area(rect):
            return rect.width * rect.width  # BUG
        """,
        lambda ns: ns["area"](ns["Rect"](2, 5)) == 10,
        "attribute",
        25,
    ),
    (
        "swap_args",
        """
        def power_mod(base, exponent, modulus):
            return pow(exponent, base, modulus)  # BUG
        """,
        lambda ns: ns["power_mod"](3, 4, 7) == 81 % 7,
        "swap",
        15,
    ),
    (
        "sibling_shape",
        """
        def common_prefix_len(a, b):
            if not a or not b or a[0] != b[0]:
                return 0
            return 1 + common_prefix_len(a[1:], b)  # BUG
        """,
        lambda ns: ns["common_prefix_len"]("abcx", "abcy") == 3,
        "similar",
        20,
    ),
    (
        "builtin",
        """
        def all_positive(xs):
            return any(x > 0 for x in xs)  # BUG
        """,
        lambda ns: ns["all_positive"]([1, 2]) and not ns["all_positive"]([1, -2]),
        "builtin",
        6,
    ),
    (
        "unwrap_call",
        """
        def signed_delta(a, b):
            return abs(b - a)  # BUG
        """,
        lambda ns: ns["signed_delta"](5, 2) == -3,
        "builtin",
        15,
    ),
    (
        "wrap_len",
        """
        def indices(xs):
            return list(range(xs))  # BUG
        """,
        lambda ns: ns["indices"](["a", "b"]) == [0, 1],
        "builtin",
        15,
    ),
    (
        "none_guard",
        """
        class User:
            def __init__(self, name):
                self.name = name

        def display_name(user):
            if user.name is None:  # BUG
                return "anonymous"
            return user.name
        """,
        lambda ns: ns["display_name"](None) == "anonymous" and ns["display_name"](ns["User"]("bo")) == "bo",
        "none_guard",
        6,
    ),
    (
        "statement_guard",
        """
        def total_size(files):
            total = 0
            for f in files:
                total += f.size  # BUG
            return total
        """,
        lambda ns: ns["total_size"]([type("F", (), {"size": 3})(), None]) == 3,
        "none_guard",
        10,
    ),
    (
        "return_list",
        """
        def as_list(value):
            if isinstance(value, list):
                return value
            return value  # BUG
        """,
        lambda ns: ns["as_list"](3) == [3] and ns["as_list"]([4]) == [4],
        "return",
        3,
    ),
    (
        "cmp_const",
        """
        def trivially_sorted(xs):
            return len(xs) == 0  # BUG
        """,
        lambda ns: ns["trivially_sorted"]([]) and ns["trivially_sorted"]([5]) and not ns["trivially_sorted"]([2, 1]),
        "cmp_const",
        15,
    ),
    (
        "use_local",
        """
        def centered(values):
            mean = sum(values) / len(values)
            return [v - len(values) for v in values]  # BUG
        """,
        lambda ns: ns["centered"]([1, 5]) == [-2, 2],
        "use_local",
        25,
    ),
    (
        "term_addition",
        """
        def budget_left(limit, spent):
            return max(limit, 0)  # BUG
        """,
        lambda ns: ns["budget_left"](10, 4) == 6 and ns["budget_left"](3, 5) == 0,
        "term_addition",
        15,
    ),
    (
        "slice_complement",
        """
        def tail_sum(xs, k):
            head = xs[:k]
            if not head:
                return sum(xs)
            return sum(xs)  # BUG
        """,
        lambda ns: ns["tail_sum"]([1, 2, 3, 4], 1) == 9 and ns["tail_sum"]([5, 1, 1], 2) == 1,
        "similar",
        15,
    ),
    (
        "insert_loop_update",
        """
        def count_increases(readings):
            previous = readings[0]
            increases = 0
            for reading in readings:
                if reading > previous:  # BUG
                    increases += 1
            return increases
        """,
        lambda ns: ns["count_increases"]([1, 2, 2, 3, 1]) == 2,
        "insert_update",
        20,
    ),
    (
        "insert_counter",
        """
        def first_negative(xs):
            i = 0
            while i < len(xs):
                if xs[i] < 0:  # BUG
                    return i
            return -1
        """,
        lambda ns: ns["first_negative"]([3, -1]) == 1 and ns["first_negative"]([1]) == -1,
        "insert_update",
        30,
    ),
    (
        "accumulate",
        """
        def longest_run(flags):
            best = 0
            run = 0
            for flag in flags:
                run = run + 1 if flag else 0
                best = run  # BUG
            return best
        """,
        lambda ns: ns["longest_run"]([1, 1, 1, 0, 1]) == 3,
        "accumulate",
        20,
    ),
    (
        "container_update",
        """
        def unique(items):
            seen = set()
            out = []
            for item in items:
                if item not in seen:
                    out.append(item)  # BUG
            return out
        """,
        lambda ns: ns["unique"]([1, 2, 1, 3, 2]) == [1, 2, 3],
        "insert_update",
        20,
    ),
    (
        "delete",
        """
        def doubled(xs):
            out = []
            for x in xs:
                out.append(x * 2)
                out.append(x * 2)  # BUG
            return out
        """,
        lambda ns: ns["doubled"]([1, 2]) == [2, 4],
        "delete",
        25,
    ),
    (
        "empty_guard",
        """
        def report_mean(scores, out):
            out.append(sum(scores) / len(scores))  # BUG
            return out
        """,
        lambda ns: ns["report_mean"]([], []) == [] and ns["report_mean"]([2, 4], []) == [3],
        "empty_guard",
        150,
    ),
    (
        "regex_quantifier",
        """
        import re

        def words(text):
            return re.findall(r"[a-z]*", text)  # BUG
        """,
        lambda ns: ns["words"]("ab cd") == ["ab", "cd"],
        "regex",
        40,
    ),
    (
        "regex_class",
        """
        import re

        def slug_ok(slug):
            return re.fullmatch(r"[a-z0-9]+", slug) is not None  # BUG
        """,
        lambda ns: ns["slug_ok"]("my-post") and not ns["slug_ok"]("My post"),
        "regex",
        40,
    ),
    (
        "regex_delimiter",
        """
        import re

        def strip_tags(html):
            return re.sub(r"<[^>]*>", "", html)  # BUG
        """,
        lambda ns: ns["strip_tags"]("a < b <i>x</i>") == "a < b x" and ns["strip_tags"]("<b>y</b>") == "y",
        "regex",
        40,
    ),
    (
        "early_return_empty",
        """
        def header_args(headers, name):
            value = headers.get(name)
            args = ["-H", name + ": " + value]  # BUG
            return args
        """,
        lambda ns: ns["header_args"]({}, "X") == [] and ns["header_args"]({"X": "1"}, "X") == ["-H", "X: 1"],
        "early_return",
        60,
    ),
    (
        "early_return_pass_through",
        """
        def parse_size(text):
            text = text.strip().lower()  # BUG
            if text.endswith("k"):
                return int(text[:-1]) * 1024
            return int(text)
        """,
        lambda ns: ns["parse_size"](2048) == 2048 and ns["parse_size"](" 2K ") == 2048,
        "early_return",
        60,
    ),
    (
        "call_args_drop",
        """
        def clip(value, low, high):
            return max(low, min(value, high))

        def percent(x):
            return clip(x, 0, 100, 1)  # BUG
        """,
        lambda ns: ns["percent"](150) == 100 and ns["percent"](-3) == 0,
        "call_args",
        200,
    ),
    (
        "call_args_move",
        """
        def between(low, high, value):
            return low <= value <= high

        def valid_month(m):
            return between(m, 1, 12)  # BUG
        """,
        lambda ns: ns["valid_month"](5) and not ns["valid_month"](13) and not ns["valid_month"](0),
        "call_args",
        200,
    ),
    (
        "rename2",
        """
        def area_delta(w1, h1, w2, h2):
            first = w1 * h1
            second = w1 * h1  # BUG
            return second - first
        """,
        lambda ns: ns["area_delta"](1, 2, 3, 4) == 10 and ns["area_delta"](2, 5, 3, 3) == -1,
        "rename2",
        400,
    ),
]


def _fix_by(
    source: str, check: Callable[[dict[str, Any]], bool], operator: str, limit: int
) -> tuple[int, Candidate] | None:
    """The first of the first `limit` candidates that comes from `operator` and passes the check."""
    for index, candidate in enumerate(generate_candidates(source, _bug_line(source))):
        if index >= limit:
            return None
        if candidate.operator == operator and _passes(candidate.new_source, check):
            return index, candidate
    return None


@pytest.mark.parametrize(("source", "check", "operator", "limit"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_family_fixes_its_bug_early(
    source: str, check: Callable[[dict[str, Any]], bool], operator: str, limit: int
) -> None:
    source = textwrap.dedent(source).lstrip("\n")
    assert not _passes(source, check), "the example must be buggy"
    found = _fix_by(source, check, operator, limit)
    assert found is not None, f"no {operator} fix among the first {limit} candidates"
    _, candidate = found
    # The splice keeps the rest of the faulty line, comment included (unless the line was deleted).
    assert ("# BUG" in candidate.new_source) != (operator == "delete")
    assert candidate.operator in OPERATOR_TIERS


def _changed_region_ok(original: str, candidate: Candidate, start: int, end: int) -> bool:
    """Lines outside [start, end] are untouched; statement insertions add whole lines and nothing else."""
    old, new = original.split("\n"), candidate.new_source.split("\n")
    if candidate.operator == "insert_update":
        opcodes = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
        return all(tag in ("equal", "insert") for tag, *_ in opcodes)
    tail = len(old) - end
    return (
        len(new) >= start - 1 + tail
        and new[: start - 1] == old[: start - 1]
        and new[len(new) - tail :] == old[len(old) - tail :]
    )


def _corpus() -> list[str]:
    sources = [textwrap.dedent(c[1]).lstrip("\n") for c in CASES]
    sources.append(
        textwrap.dedent(
            '''
            import math

            LIMIT = 10  # module constant


            def bucket(values, width=2):
                """Histogram with a multi-line call and an f-string."""
                counts = {}
                for v in values:
                    key = math.floor(v / width)
                    counts[key] = counts.get(key, 0) + 1
                label = f"{len(values)} values, width {width!r}"
                total = sum(
                    counts[k] * (k + 1)
                    for k in counts if k < LIMIT
                )
                while total > 0 and not counts: total -= 1
                a = 1; b = a + 2
                return (label, total) if total else ("é", b)
            '''
        ).lstrip("\n")
    )
    return sources


@pytest.mark.parametrize("index", range(len(_corpus())))
def test_every_candidate_parses_and_stays_in_its_statement(index: int) -> None:
    source = _corpus()[index]
    tree = ast.parse(source)
    context = build_context(source)
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    for line in range(1, source.count("\n") + 2):
        covering = [s for s in statements if s.lineno <= line <= (s.end_lineno or s.lineno)]
        candidates = list(generate_candidates(source, line, context=context))
        assert len({c.new_source for c in candidates}) == len(candidates), "duplicates"
        assert len(candidates) <= estimate_count(source, line, context=context)
        for candidate in candidates:
            ast.parse(candidate.new_source)
            assert candidate.new_source != source
            assert candidate.tier in OPERATOR_TIERS[candidate.operator], candidate
            # The edited statement is one of those covering the line; loops may receive insertions.
            spans = [(s.lineno, s.end_lineno or s.lineno) for s in covering]
            assert any(_changed_region_ok(source, candidate, a, b) for a, b in spans), candidate.description


def test_splice_keeps_formatting_of_untouched_code() -> None:
    source = 'def f(a, b):\n    return g("x",  a) + h(b)   # note\n'
    candidates = list(generate_candidates(source, 2))
    swapped = [c for c in candidates if c.operator == "binop" and "-" in c.new_source]
    assert swapped[0].new_source == 'def f(a, b):\n    return g("x",  a) - h(b)   # note\n'


def test_multiline_statement_changes_only_the_subexpression() -> None:
    source = "def f(a, b):\n    return max(\n        a + 1,\n        b,\n    )\n"
    fixed = [c for c in generate_candidates(source, 2) if c.new_source.endswith("        a - 1,\n        b,\n    )\n")]
    assert fixed and fixed[0].new_source.count("\n") == source.count("\n")


def test_header_of_compound_statement_mutates_only_the_header() -> None:
    source = "def f(xs):\n    for x in xs[1:]:\n        print(x)\n"
    for candidate in generate_candidates(source, 2):
        if candidate.operator not in ("insert_update", "delete"):
            assert candidate.new_source.splitlines()[2] == "        print(x)"
            assert candidate.new_source.splitlines()[1].startswith("    for x in ")


def test_order_is_by_tier_and_seeds_shuffle_within_tiers() -> None:
    source = textwrap.dedent(CASES[0][1]).lstrip("\n") + "\ndef g(a, b, c):\n    return a * b + c - (a < b)\n"
    plain = list(generate_candidates(source, 5))
    tiers = [c.tier for c in plain]
    assert tiers == sorted(tiers)
    orders = {tuple(c.new_source for c in generate_candidates(source, 5, rng=random.Random(s))) for s in range(4)}
    assert len(orders) > 1
    assert all(sorted(o) == sorted(c.new_source for c in plain) for o in orders)
    again = [c.new_source for c in generate_candidates(source, 5, rng=random.Random(1))]
    assert tuple(again) in orders


def test_no_candidates_for_blank_lines_defs_or_unparsable_source() -> None:
    source = "def f(x):\n\n    return x\n"
    assert list(generate_candidates(source, 2)) == []
    assert list(generate_candidates("def broken(:\n", 1)) == []
    assert list(generate_candidates(source, 99)) == []


def test_context_from_another_source_is_ignored() -> None:
    source = "def f(x):\n    return x.a\n"
    stale = build_context("class C:\n    b = 1\n")
    assert [c.new_source for c in generate_candidates(source, 2, context=stale)] == [
        c.new_source for c in generate_candidates(source, 2)
    ]


@pytest.mark.shared
def test_bench_programs_smoke() -> None:
    """Development check: generation never crashes or emits unparsable code on the bench programs.

    Reads only repo/<case>.py of each case (never oracle/); reports statements with candidates.
    """
    bench = SHARED / "bench" / "quixbugs"
    if not bench.is_dir():
        pytest.skip(f"{bench} is absent (shared bench cases are needed for this development check)")
    report = []
    for case in sorted(p for p in bench.iterdir() if p.is_dir()):
        program = case / "repo" / f"{case.name}.py"
        if not program.is_file():
            continue
        source = program.read_text()
        context = build_context(source)
        starts = sorted({n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.stmt)})
        productive = 0
        for line in starts:
            candidates = list(generate_candidates(source, line, context=context))
            productive += bool(candidates)
            for candidate in candidates:
                ast.parse(candidate.new_source)
                assert candidate.tier in OPERATOR_TIERS[candidate.operator], candidate
        report.append(f"{case.name}: {productive}/{len(starts)} statements with candidates")
        assert productive > 0, case.name
    print("\n".join(report))


_PROTOCOL_SOURCE = textwrap.dedent(
    """
    class Playlist:
        \"\"\"Songs in play order.\"\"\"

        def __init__(self, title):
            self.title = title
            self.songs = []

        def add(self, song):
            self.songs.append(song)


    def summary(playlist):
        return f"{playlist.title}: {len(playlist)} songs"
    """
).lstrip("\n")


@pytest.mark.parametrize(
    ("error", "check"),
    [
        (
            "E       TypeError: object of type 'Playlist' has no len()",
            lambda ns: ns["summary"](_playlist(ns, "a", "b")) == "mix: 2 songs",
        ),
        (
            "E       TypeError: 'Playlist' object is not iterable",
            lambda ns: list(_playlist(ns, "a", "b")) == ["a", "b"] and "b" in _playlist(ns, "b"),
        ),
        (
            "AttributeError: 'Playlist' object has no attribute '__bool__'",
            lambda ns: _playlist(ns, "a").__bool__() and not _playlist(ns).__bool__(),
        ),
    ],
    ids=["len", "iter", "bool"],
)
def test_special_method_named_by_the_error_is_added(error: str, check: Callable[[dict[str, Any]], bool]) -> None:
    from agents.repair.mutation.protocols import special_method_candidates

    assert not _passes(_PROTOCOL_SOURCE, check), "the example must be buggy"
    candidates = special_method_candidates(_PROTOCOL_SOURCE, error)
    assert candidates, "no candidate for the named special method"
    assert any(_passes(c.new_source, check) for c in candidates)
    for candidate in candidates:
        # Only lines are added, after the class's last statement; the rest of the file is untouched.
        old, new = _PROTOCOL_SOURCE.split("\n"), candidate.new_source.split("\n")
        ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
        assert all(tag in ("equal", "insert") for tag, *_ in ops)


def _playlist(ns: dict[str, Any], *songs: str) -> Any:
    playlist = ns["Playlist"]("mix")
    for song in songs:
        playlist.add(song)
    return playlist


def test_special_method_needs_a_named_class_of_the_file() -> None:
    from agents.repair.mutation.protocols import missing_protocols, special_method_candidates

    # A built-in type in the message is a wrong argument, not a class lacking a method.
    assert missing_protocols("TypeError: object of type 'int' has no len()") == []
    assert missing_protocols("TypeError: 'NoneType' object is not iterable") == []
    assert special_method_candidates(_PROTOCOL_SOURCE, "TypeError: object of type 'Album' has no len()") == []
    assert special_method_candidates(_PROTOCOL_SOURCE, "AssertionError: assert 1 == 2") == []
    # A class that already has the method gets no second one.
    sized = _PROTOCOL_SOURCE.replace("    def add(", "    def __len__(self):\n        return 0\n\n    def add(")
    assert special_method_candidates(sized, "TypeError: object of type 'Playlist' has no len()") == []


def test_search_tries_each_suspicious_file_whole_first_when_the_failure_names_a_special_method() -> None:
    from types import SimpleNamespace

    from agents.localize.ranking import Location
    from agents.repair.classic.search import ClassicSearch, SearchLimits
    from agents.reproduce.brt import Reproduction

    ranked = [Location("lib/shelf.py", 9, 0.9, ("ochiai",)), Location("lib/util.py", 3, 0.5, ("ochiai",))]

    def plan(output: str) -> list[tuple[str, int]]:
        before = SimpleNamespace(result=SimpleNamespace(output=output))
        repro = Reproduction(brt=None, before=before, locations=ranked)  # type: ignore[arg-type]
        search = ClassicSearch(repro, None, None, None, SearchLimits())  # type: ignore[arg-type]
        return [(loc.file, loc.line) for loc in search._search_plan(0)]

    assert plan("E   TypeError: object of type 'Shelf' has no len()") == [
        ("lib/shelf.py", 0),
        ("lib/util.py", 0),
        ("lib/shelf.py", 9),
        ("lib/util.py", 3),
    ]
    assert plan("E   assert 3 == 4") == [("lib/shelf.py", 9), ("lib/util.py", 3)]


def test_a_negated_class_learns_the_patterns_delimiters_not_its_group_syntax() -> None:
    from agents.repair.mutation.exprs import regex_variants

    variants = regex_variants(r"(?P<key>[^=]+)=(?:\w+);")
    assert r"(?P<key>[^;=]+)=(?:\w+);" in variants  # `;` is matched literally elsewhere in the pattern
    assert not any("[^<" in v or "[^>" in v or "[^:" in v or "[^?" in v for v in variants)
    # A class that is not negated is left to the generic widenings.
    assert r"&([&;]+;)" not in regex_variants(r"&([;]+;)")


def test_early_exits_only_for_values_that_may_be_absent_or_of_another_type() -> None:
    source = textwrap.dedent(
        """
        def label(items, sep, prefix=None):
            first = items[0]
            name = sep.join(items)
            return prefix + name
        """
    ).lstrip("\n")
    guards = {c.description for c in generate_candidates(source, 3) if c.operator == "early_return"}
    # `sep` is a parameter the line uses as a string; `items` and `first` are neither absent nor parsed.
    assert guards == {"insert `if not isinstance(sep, str): return sep` before line 3"}
    guards = {c.description for c in generate_candidates(source, 4) if c.operator == "early_return"}
    assert "insert `if prefix is None: return None` before line 4" in guards
    assert not any("name is None" in g for g in guards)
