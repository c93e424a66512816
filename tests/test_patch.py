"""Tests for the patch model, test-file classification and fix normalization."""

from __future__ import annotations

import builtins
import difflib
import keyword

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patch_selectors.classify import DEFAULT_CLASSIFIER, TestClassifier, glob_to_regex
from patch_selectors.normalize import _OTHER_KEEP, fix_hash, normalize_patch, patch_hash
from patch_selectors.patch import FilePatch, Hunk, Patch, PatchParseError, split_test_and_fix


def git_diff(path: str, old: str | None, new: str | None) -> str:
    """A git-style diff of one file, built with difflib (old=None: new file, new=None: deletion)."""
    a = old.splitlines() if old else []
    b = new.splitlines() if new else []
    head = [f"diff --git a/{path} b/{path}"]
    if old is None:
        head.append("new file mode 100644")
    if new is None:
        head.append("deleted file mode 100644")
    head.append("index 0123456..89abcde 100644" if old is not None and new is not None else "index 0000000..1")
    src = "/dev/null" if old is None else f"a/{path}"
    dst = "/dev/null" if new is None else f"b/{path}"
    body = list(difflib.unified_diff(a, b, src, dst, lineterm=""))
    return "\n".join(head + body) + "\n"


BASE = "def mean(values):\n    total = sum(values)\n    count = len(values)\n    return total / count\n"
FIXED = BASE.replace("    return", "    if count == 0:\n        return 0.0\n    return")
TEST = "from stats import mean\n\n\ndef test_empty():\n    assert mean([]) == 0.0\n"

# ---------------------------------------------------------------- parsing and rendering


def test_round_trip_modify_new_and_delete() -> None:
    text = (
        git_diff("src/stats.py", BASE, FIXED)
        + git_diff("tests/test_stats.py", None, TEST)
        + git_diff("src/old.py", "x = 1\n", None)
    )
    patch = Patch.parse(text)
    assert patch.render() == text
    mod, new, gone = patch.files
    assert (mod.old_path, mod.new_path, mod.is_new, mod.is_deleted) == (
        "src/stats.py",
        "src/stats.py",
        False,
        False,
    )
    assert mod.lines_added == 2 and mod.lines_removed == 0
    assert mod.hunks[0].added == ("    if count == 0:", "        return 0.0")
    assert new.is_new and new.old_path is None and new.new_path == "tests/test_stats.py"
    assert new.new_mode == "100644" and new.lines_changed == 5
    assert gone.is_deleted and gone.new_path is None and gone.path == "src/old.py"
    assert patch.lines_changed == 2 + 5 + 1


def test_rename_mode_and_binary_files() -> None:
    text = (
        "diff --git a/lib/old name.py b/lib/new name.py\n"
        "similarity index 91%\n"
        "rename from lib/old name.py\n"
        "rename to lib/new name.py\n"
        "index 1111111..2222222 100644\n"
        "--- a/lib/old name.py\t\n"
        "+++ b/lib/new name.py\t\n"
        "@@ -1 +1 @@\n"
        "-a = 1\n"
        "+a = 2\n"
        "diff --git a/run.sh b/run.sh\n"
        "old mode 100644\n"
        "new mode 100755\n"
        "diff --git a/logo.png b/logo.png\n"
        "index 3333333..4444444 100644\n"
        "Binary files a/logo.png and b/logo.png differ\n"
        "diff --git a/icon.bin b/icon.bin\n"
        "new file mode 100644\n"
        "index 0000000..5555555\n"
        "GIT binary patch\n"
        "literal 4\n"
        "LcmZQzWMT#Y01f~L\n"
        "\n"
        "literal 0\n"
        "HcmV?d00001\n"
        "\n"
    )
    patch = Patch.parse(text)
    assert patch.render() == text
    ren, mode, png, icon = patch.files
    assert ren.is_rename and (ren.old_path, ren.new_path) == ("lib/old name.py", "lib/new name.py")
    assert ren.lines_changed == 2
    assert (mode.old_mode, mode.new_mode, mode.path, mode.hunks) == ("100644", "100755", "run.sh", ())
    assert png.is_binary and png.path == "logo.png" and not png.is_new
    assert icon.is_binary and icon.is_new and icon.path == "icon.bin"
    # A binary payload change is a different change, even though no text lines moved.
    other = text.replace("LcmZQzWMT#Y01f~L", "LcmZQzWMT#Y01f~M")
    assert patch_hash(Patch.parse(other)) != patch_hash(patch)


def test_round_trip_preamble_no_newline_marker_and_no_final_newline() -> None:
    text = (
        "From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n\n---\n src/a.c | 2 +-\n\n"
        "diff --git a/src/a.c b/src/a.c\n--- a/src/a.c\n+++ b/src/a.c\n"
        "@@ -1,2 +1,2 @@ int main()\n int x;\n-return 1;\n\\ No newline at end of file\n+return 0;\n"
        "\\ No newline at end of file\n-- \n2.43.0"
    )
    patch = Patch.parse(text)
    assert patch.render() == text
    assert patch.preamble[1] == "Subject: [PATCH] fix"
    (f,) = patch.files
    assert f.hunks[0].section == " int main()"
    assert f.trailer_lines == ("-- ", "2.43.0")
    assert (f.lines_added, f.lines_removed) == (1, 1)


def test_plain_unified_diff_and_quoted_paths() -> None:
    plain = "--- a/x.txt\t2024-01-01\n+++ b/x.txt\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n"
    (f,) = Patch.parse(plain).files
    assert (f.old_path, f.new_path) == ("x.txt", "x.txt")
    quoted = 'diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\nnew file mode 100644\nindex 0000000..1\n'
    (q,) = Patch.parse(quoted).files
    assert q.path == "café.py" and q.is_new
    assert Patch.parse(quoted).render() == quoted


def test_empty_and_malformed_input() -> None:
    assert Patch.parse("").render() == "" and Patch.parse("").is_empty
    with pytest.raises(PatchParseError, match="truncated"):
        Patch.parse("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n")
    with pytest.raises(PatchParseError):
        Patch.parse("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n?junk\n")


def test_synthesized_render_reparses_to_the_same_files() -> None:
    hunk = Hunk(3, 1, 3, 2, (" keep", "+added"), section=" def f():")
    files = (
        FilePatch("src/a.py", "src/a.py", (hunk,)),
        FilePatch(None, "tests/test_a.py", (Hunk(0, 0, 1, 1, ("+x = 1",)),), is_new=True),
        FilePatch("a.txt", "b.txt", is_rename=True),
        FilePatch("gone.bin", None, is_deleted=True, is_binary=True),
    )
    reparsed = Patch.parse(Patch(files).render())
    for got, want in zip(reparsed.files, files, strict=True):
        assert (got.old_path, got.new_path, got.is_new, got.is_deleted, got.is_rename, got.is_binary) == (
            want.old_path,
            want.new_path,
            want.is_new,
            want.is_deleted,
            want.is_rename,
            want.is_binary,
        )
        assert [h.lines for h in got.hunks] == [h.lines for h in want.hunks]
    assert reparsed.files[0].hunks[0].header == "@@ -3 +3,2 @@ def f():"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text("abcxyz =+()_.\t", max_size=12),
            st.sampled_from([" ", "-", "+"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_round_trip_property(rows: list[tuple[str, str]]) -> None:
    old = [t for t, m in rows if m in " -"]
    new = [t for t, m in rows if m in " +"]
    lines = [m + t for t, m in rows]
    text = f"diff --git a/p.py b/p.py\n--- a/p.py\n+++ b/p.py\n@@ -1,{len(old)} +1,{len(new)} @@\n"
    text += "\n".join(lines) + "\n"
    assert Patch.parse(text).render() == text


# ---------------------------------------------------------------- classification


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_stats.py",
        "pkg/tests/helpers.py",
        "src/test_parser.py",
        "src/parser_test.py",
        "conftest.py",
        "pkg/sub/conftest.py",
        "server/handler_test.go",
        "core/src/test/java/org/x/Foo.java",
        "app/src/main/java/org/x/ParserTest.java",
        "app/src/main/java/org/x/ParserTests.java",
        "lib/src/androidTest/kotlin/MainScreenTest.kt",
        "web/src/button.spec.ts",
        "web/src/button.test.tsx",
        "web/src/util.test.js",
        "web/src/util.spec.jsx",
        "web/src/__tests__/util.js",
        "spec/models/user_spec.rb",
        "spec/spec_helper.rb",
        "crates/foo/tests/integration.rs",
        "base/strings/split_unittest.cc",
        "Sources/AppTests/LoginTests.swift",
        "lib/widget_test.dart",
        "./tests/data.json",
    ],
)
def test_classifies_test_paths(path: str) -> None:
    assert DEFAULT_CLASSIFIER.is_test(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/stats.py",
        "src/testing_utils.py",
        "src/contest.py",
        "main.go",
        "app/src/main/java/org/x/Parser.java",
        "app/src/main/java/org/x/Testable.java",
        "web/src/button.tsx",
        "lib/user.rb",
        "spec/openapi.yaml",
        "crates/foo/src/lib.rs",
        "README.md",
        "latest/notes.txt",
    ],
)
def test_classifies_non_test_paths(path: str) -> None:
    assert not DEFAULT_CLASSIFIER.is_test(path)


def test_policy_override_adds_and_removes_test_globs() -> None:
    clf = DEFAULT_CLASSIFIER.with_overrides(
        extra_test_globs=["qa/**", "*_check.py"], extra_non_test_globs=["src/test/fixtures_lib/**"]
    )
    assert clf.is_test("qa/smoke.py") and clf.is_test("lib/io_check.py")
    assert not clf.is_test("src/test/fixtures_lib/builders.py")
    assert clf.is_test("src/test/java/FooTest.java")
    assert not DEFAULT_CLASSIFIER.is_test("qa/smoke.py")  # the default is untouched
    only = TestClassifier(test_globs=("checks/",))
    assert only.is_test("a/checks/x.py") and not only.is_test("tests/test_x.py")


def test_glob_rules() -> None:
    assert glob_to_regex("*.py") == glob_to_regex("**/*.py")
    assert TestClassifier(test_globs=("docs/*.md",)).is_test("docs/a.md")
    assert not TestClassifier(test_globs=("docs/*.md",)).is_test("x/docs/a.md")  # "/" anchors at the root
    assert TestClassifier(test_globs=("t?st_[ab].{c,h}",)).is_test("x/test_a.h")


def test_split_test_and_fix_uses_the_classifier() -> None:
    patch = Patch.parse(git_diff("src/stats.py", BASE, FIXED) + git_diff("tests/test_stats.py", None, TEST))
    test_part, fix_part = split_test_and_fix(patch)
    assert test_part.paths == ("tests/test_stats.py",) and fix_part.paths == ("src/stats.py",)
    assert Patch.parse(test_part.render()).paths == ("tests/test_stats.py",)
    everything_fix = TestClassifier(test_globs=())
    assert split_test_and_fix(patch, everything_fix)[0].is_empty
    assert fix_hash(patch) == patch_hash(fix_part) != patch_hash(patch)
    assert fix_hash(patch, everything_fix) == patch_hash(patch)


# ---------------------------------------------------------------- normalization


def fix_hash_of(path: str, old: str, new: str) -> str:
    return patch_hash(Patch.parse(git_diff(path, old, new)))


def test_normalization_ignores_comments_blank_lines_and_spacing() -> None:
    variant = BASE.replace("    return", "    if count==0 :   # empty input\n\n        return 0.0  \n    return")
    assert fix_hash_of("src/stats.py", BASE, FIXED) == fix_hash_of("src/stats.py", BASE, variant)
    assert "|4| if v0 == 0 : |8| return 0.0" in normalize_patch(Patch.parse(git_diff("s.py", BASE, FIXED)))


def test_normalization_keeps_builtins_and_python_indentation() -> None:
    a = BASE.replace("total / count", "total / max(count, 1)")
    b = BASE.replace("total / count", "total / min(count, 1)")
    assert fix_hash_of("s.py", BASE, a) != fix_hash_of("s.py", BASE, b)
    inside = FIXED.replace("        return 0.0", "        total = 0\n        return 0.0")
    after = FIXED.replace("        return 0.0", "        return 0.0\n    total = 0")
    assert fix_hash_of("s.py", BASE, inside) != fix_hash_of("s.py", BASE, after)


def test_normalization_depends_on_position_and_file() -> None:
    early = BASE.replace("    count =", "    assert values\n    count =")
    late = BASE.replace("    return", "    assert values\n    return")
    assert fix_hash_of("s.py", BASE, early) != fix_hash_of("s.py", BASE, late)
    assert fix_hash_of("a.py", BASE, FIXED) != fix_hash_of("b.py", BASE, FIXED)


KEEP = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | _OTHER_KEEP  # never renamed by design
names = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(lambda s: s not in KEEP)
OPS = ["+", "-", "*", "/", "%"]


@st.composite
def programs(draw: st.DrawFn) -> list[tuple[str, ...]]:
    """Small straight-line snippets: statements as token tuples over 2-4 fresh identifiers."""
    idents = draw(st.lists(names, min_size=2, max_size=4, unique=True))
    stmts = []
    for _ in range(draw(st.integers(1, 4))):
        x, y = draw(st.sampled_from(idents)), draw(st.sampled_from(idents))
        op, k = draw(st.sampled_from(OPS)), str(draw(st.integers(1, 99)))
        stmts.append(draw(st.sampled_from([("=", x, y, op, k), ("if", x, op, k), ("call", x, y, k)])))
    return stmts


def render_py(stmts: list[tuple[str, ...]], gap: str, trailing: str, comment: bool, blank: bool) -> str:
    out = []
    for s in stmts:
        if s[0] == "=":
            line = f"    {s[1]}{gap}={gap}{s[2]}{gap}{s[3]}{gap}{s[4]}"
        elif s[0] == "if":
            line = f"    if {s[1]}{gap}{s[2]}{gap}{s[3]}{gap}:\n        pass"
        else:
            line = f"    {s[1]}{gap}({gap}{s[2]},{gap}{s[3]}{gap})"
        out.append(line + (f"  # note {s[0]}" if comment else "") + trailing)
        if blank:
            out.append("")
    return "\n".join(out) + "\n"


def with_snippet(snippet: str) -> str:
    return BASE.replace("    return", snippet + "    return")


@settings(max_examples=80, deadline=None)
@given(programs(), st.data())
def test_hash_invariant_under_renaming(stmts: list[tuple[str, ...]], data: st.DataObject) -> None:
    idents = sorted({t for s in stmts for t in s[1:] if t[0].isalpha()})
    fresh = data.draw(st.lists(names, min_size=len(idents), max_size=len(idents), unique=True))
    ren = dict(zip(idents, fresh, strict=True))
    renamed = [(s[0], *(ren.get(t, t) for t in s[1:])) for s in stmts]
    a = fix_hash_of("m.py", BASE, with_snippet(render_py(stmts, " ", "", False, False)))
    b = fix_hash_of("m.py", BASE, with_snippet(render_py(renamed, " ", "", False, False)))
    assert a == b


@settings(max_examples=80, deadline=None)
@given(
    programs(),
    st.sampled_from(["", " ", "  ", "\t"]),
    st.sampled_from(["", " ", "\t "]),
    st.booleans(),
    st.booleans(),
)
def test_hash_invariant_under_whitespace_and_comments(
    stmts: list[tuple[str, ...]], gap: str, trailing: str, comment: bool, blank: bool
) -> None:
    plain = fix_hash_of("m.py", BASE, with_snippet(render_py(stmts, " ", "", False, False)))
    noisy = fix_hash_of("m.py", BASE, with_snippet(render_py(stmts, gap, trailing, comment, blank)))
    assert plain == noisy


@settings(max_examples=80, deadline=None)
@given(programs(), st.data())
def test_hash_changes_with_operator_or_constant(stmts: list[tuple[str, ...]], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(stmts) - 1))
    s = list(stmts[i])
    op_at = next(j for j, t in enumerate(s) if t in OPS) if any(t in OPS for t in s) else None
    if op_at is not None and data.draw(st.booleans()):
        s[op_at] = data.draw(st.sampled_from([o for o in OPS if o != s[op_at]]))
    else:
        s[-1] = str(int(s[-1]) + data.draw(st.integers(1, 5)))
    mutated = [*stmts[:i], tuple(s), *stmts[i + 1 :]]
    a = fix_hash_of("m.py", BASE, with_snippet(render_py(stmts, " ", "", False, False)))
    b = fix_hash_of("m.py", BASE, with_snippet(render_py(mutated, " ", "", False, False)))
    assert a != b


GO_BASE = "func mean(v []float64) float64 {\n\ttotal := sum(v)\n\treturn total / float64(len(v))\n}\n"


@settings(max_examples=50, deadline=None)
@given(programs(), st.data())
def test_brace_language_renaming_whitespace_and_mutation(stmts: list[tuple[str, ...]], data: st.DataObject) -> None:
    def go(ss: list[tuple[str, ...]], gap: str, indent: str, comment: bool) -> str:
        lines = []
        for s in ss:
            if s[0] == "if":
                head = f"{indent}if {s[1]}{gap}{s[2]}{gap}{s[3]} {{ /* c */"
                lines.append(f"{head}\n{indent}{indent}return 0\n{indent}}}")
            elif s[0] == "=":
                lines.append(f"{indent}{s[1]}{gap}={gap}{s[2]}{gap}{s[3]}{gap}{s[4]}")
            else:
                lines.append(f"{indent}{s[1]}({s[2]},{gap}{s[3]})")
            lines[-1] += " // why" if comment else ""
        return GO_BASE.replace("\treturn", "\n".join(lines) + "\n\treturn")

    idents = sorted({t for s in stmts for t in s[1:] if t[0].isalpha()})
    fresh = data.draw(st.lists(names, min_size=len(idents), max_size=len(idents), unique=True))
    ren = dict(zip(idents, fresh, strict=True))
    renamed = [(s[0], *(ren.get(t, t) for t in s[1:])) for s in stmts]
    base = fix_hash_of("m.go", GO_BASE, go(stmts, " ", "\t", False))
    assert base == fix_hash_of("m.go", GO_BASE, go(renamed, "", "  ", True))
    bumped = [(*s[:-1], str(int(s[-1]) + 1)) for s in stmts]
    assert base != fix_hash_of("m.go", GO_BASE, go(bumped, " ", "\t", False))
