"""Decide which changed files are tests, from per-language naming conventions expressed as globs."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

# Extensions shared by several conventions; kept in one place so the globs stay readable.
_JS = "{js,jsx,mjs,cjs,ts,tsx,mts,cts}"
_JVM = "{java,kt,kts,scala,groovy}"
_CPP = "{c,cc,cpp,cxx,h,hh,hpp,hxx}"

#: Globs that mark a path as test code. Grouped by ecosystem; a path is a test if any glob matches.
DEFAULT_TEST_GLOBS: tuple[str, ...] = (
    # Test directories, at any depth (Python, Rust integration tests, Maven/Gradle src/test, Dart, ...).
    "**/test/**",
    "**/tests/**",
    "**/__tests__/**",
    "**/__mocks__/**",
    "**/testdata/**",
    # Gradle/Android source sets such as src/androidTest, src/integrationTest, src/testFixtures.
    "**/src/*Test/**",
    "**/src/testFixtures/**",
    # Xcode and .NET test targets: FooTests/, Foo.Tests/, Foo.UnitTests/.
    "**/*Tests/**",
    # Python.
    "test_*.py",
    "*_test.py",
    "*_tests.py",
    "tests.py",
    "conftest.py",
    # Go.
    "*_test.go",
    # JVM languages.
    f"*Test.{_JVM}",
    f"*Tests.{_JVM}",
    f"*TestCase.{_JVM}",
    f"*IT.{_JVM}",
    "*Spec.{scala,groovy,kt}",
    # JavaScript / TypeScript.
    f"*.test.{_JS}",
    f"*.spec.{_JS}",
    f"*.e2e-spec.{_JS}",
    # Ruby: RSpec lives under spec/, minitest uses *_test.rb / test_*.rb.
    "**/spec/**/*.rb",
    "*_spec.rb",
    "*_test.rb",
    "test_*.rb",
    # Rust: tests/ is covered above; unit tests are often split into tests.rs / *_tests.rs.
    "tests.rs",
    "*_tests.rs",
    # C and C++ (GoogleTest and Chromium conventions).
    f"*_test.{_CPP}",
    f"*_unittest.{_CPP}",
    f"*_tests.{_CPP}",
    "*Test.{cpp,cc}",
    # Other ecosystems.
    "*Tests.cs",
    "*Test.cs",
    "*Tests.swift",
    "*Test.swift",
    "*Test.php",
    "*_test.dart",
    "*_test.exs",
    "*Spec.hs",
    "*.bats",
)


def _translate(glob: str) -> str:
    """Translate one glob fragment to a regex fragment (no anchoring)."""
    out: list[str] = []
    i = 0
    n = len(glob)
    while i < n:
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")  # zero or more whole directories
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and "]" in glob[i + 1 :]:
            end = glob.index("]", i + 1)
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif glob[i] == "{" and "}" in glob[i + 1 :]:
            end = glob.index("}", i + 1)
            alternatives = glob[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def glob_to_regex(glob: str) -> str:
    """Return an anchored regex for ``glob``.

    Rules (close to .gitignore): a glob without ``/`` matches the file name at any depth; a glob with ``/`` is
    anchored at the repository root unless it starts with ``**/``; a trailing ``/`` means "anything inside a
    directory of that name"; ``**`` spans directories, ``*`` and ``?`` stay within one path segment, and
    ``{a,b}`` is alternation.
    """
    g = glob.strip()
    if g.endswith("/"):
        g = g.rstrip("/") + "/**"
        if "/" not in g[:-3]:
            g = "**/" + g
    if g.startswith("/"):
        g = g[1:]
    elif "/" not in g:
        g = "**/" + g
    return "^" + _translate(g) + "$"


def _compile(globs: Iterable[str]) -> re.Pattern[str] | None:
    parts = [glob_to_regex(g) for g in globs if g.strip()]
    # One alternation per list keeps classification to a single regex call per list.
    return re.compile("|".join(f"(?:{p})" for p in parts)) if parts else None


def normalize_path(path: str) -> str:
    """Make a repository path comparable: forward slashes, no leading ``./`` or ``/``."""
    p = path.replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p.lstrip("/")


@dataclass(frozen=True)
class TestClassifier:
    """Classifies repository paths as test or non-test code.

    ``non_test_globs`` win over ``test_globs``: a policy uses them to carve exceptions out of the conventions
    (say, a shipped ``mypkg/testing/`` helper library or a ``test/`` directory that is product code).
    """

    __test__: ClassVar[bool] = False  # keep pytest from collecting this class because of its name

    test_globs: tuple[str, ...] = DEFAULT_TEST_GLOBS
    non_test_globs: tuple[str, ...] = ()
    _test_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False, default=None)
    _non_test_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "test_globs", tuple(self.test_globs))
        object.__setattr__(self, "non_test_globs", tuple(self.non_test_globs))
        object.__setattr__(self, "_test_re", _compile(self.test_globs))
        object.__setattr__(self, "_non_test_re", _compile(self.non_test_globs))

    def with_overrides(
        self, extra_test_globs: Iterable[str] = (), extra_non_test_globs: Iterable[str] = ()
    ) -> TestClassifier:
        """Return a classifier with a policy's extra test globs and extra non-test globs added."""
        return TestClassifier(
            test_globs=self.test_globs + tuple(extra_test_globs),
            non_test_globs=self.non_test_globs + tuple(extra_non_test_globs),
        )

    def is_test(self, path: str) -> bool:
        """True if ``path`` is test code under these globs."""
        p = normalize_path(path)
        if self._non_test_re is not None and self._non_test_re.match(p):
            return False
        return self._test_re is not None and self._test_re.match(p) is not None

    def __call__(self, path: str) -> bool:
        return self.is_test(path)


DEFAULT_CLASSIFIER = TestClassifier()
