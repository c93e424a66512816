"""Git-style unified diffs: parse into files and hunks, render back exactly, split into test and fix parts."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from patch_selectors.classify import DEFAULT_CLASSIFIER, TestClassifier

__all__ = [
    "DEFAULT_CLASSIFIER",
    "FilePatch",
    "Hunk",
    "Patch",
    "PatchParseError",
    "TestClassifier",
    "split_test_and_fix",
]

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
_DEV_NULL = "/dev/null"
# Extended header lines git writes between "diff --git" and the first hunk.
_EXT_PREFIXES = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "copy from ",
    "copy to ",
    "rename from ",
    "rename to ",
    "similarity index ",
    "dissimilarity index ",
    "index ",
)
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class PatchParseError(ValueError):
    """The text is not a unified diff this parser understands (e.g. a truncated hunk)."""


def _unquote(s: str) -> str:
    """Decode git's C-style quoted path (``"a/caf\\303\\251"``); unquoted input is returned unchanged."""
    if not (len(s) >= 2 and s[0] == '"' and s[-1] == '"'):
        return s
    out = bytearray()
    i, body = 0, s[1:-1]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            octal = body[i + 1 : i + 4]
            if len(octal) == 3 and all(c in "01234567" for c in octal):
                out.append(int(octal, 8) & 0xFF)
                i += 4
                continue
            out.append(_C_ESCAPES.get(nxt, ord(nxt)) if ord(nxt) < 128 else ord("?"))
            i += 2
            continue
        out.extend(ch.encode("utf-8"))
        i += 1
    return out.decode("utf-8", errors="replace")


def _quote(path: str) -> str:
    """Quote a path the way git does when it holds characters that would break the header."""
    if not any(c in path for c in '"\\\t\n') and all(ord(c) >= 32 for c in path):
        return path
    rev = {chr(v): k for k, v in _C_ESCAPES.items()}
    return '"' + "".join("\\" + rev[c] if c in rev else c for c in path) + '"'


def _split_git_line(rest: str) -> tuple[str, str]:
    """Split the two paths of a ``diff --git`` line (used only when no better source of paths exists)."""
    if rest.startswith('"'):
        end = rest.index('"', 1)
        while rest[end - 1] == "\\":
            end = rest.index('"', end + 1)
        return rest[: end + 1], rest[end + 2 :]
    spaces = [i for i, c in enumerate(rest) if c == " "]
    # Same path on both sides is the common case and the only unambiguous one when paths contain spaces.
    for i in spaces:
        a, b = rest[:i], rest[i + 1 :]
        if a.partition("/")[2] == b.partition("/")[2]:
            return a, b
    i = rest.find(" b/")
    return (rest[:i], rest[i + 1 :]) if i >= 0 else (rest.partition(" ")[0], rest.partition(" ")[2])


def _strip_prefix(path: str, prefix: str) -> str:
    return path[len(prefix) :] if prefix and path.startswith(prefix) else path


def _header_path(value: str) -> str | None:
    """Path from a ``---``/``+++`` line value: quoted or cut at a tab; ``/dev/null`` becomes None."""
    value = _unquote(value) if value.startswith('"') else value.split("\t", 1)[0]
    return None if value == _DEV_NULL else value


def _range(start: int, count: int) -> str:
    return str(start) if count == 1 else f"{start},{count}"


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` hunk. ``lines`` keep their ``' '``/``'+'``/``'-'``/``'\\'`` markers and no newline."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[str, ...]
    section: str = ""  # text after the closing "@@" (git's function context), used when synthesizing
    raw_header: str = ""  # the header as parsed, so rendering is byte-exact

    @property
    def header(self) -> str:
        """The ``@@ -a,b +c,d @@`` line."""
        if self.raw_header:
            return self.raw_header
        old, new = _range(self.old_start, self.old_count), _range(self.new_start, self.new_count)
        return f"@@ -{old} +{new} @@{self.section}"

    @property
    def added(self) -> tuple[str, ...]:
        """Added lines without their ``+`` marker."""
        return tuple(line[1:] for line in self.lines if line.startswith("+"))

    @property
    def removed(self) -> tuple[str, ...]:
        """Removed lines without their ``-`` marker."""
        return tuple(line[1:] for line in self.lines if line.startswith("-"))

    @property
    def new_lines(self) -> tuple[str, ...]:
        """The hunk's resulting text: context plus added lines."""
        return tuple(line[1:] for line in self.lines if line[:1] in (" ", "+", ""))


@dataclass(frozen=True)
class FilePatch:
    """Changes to one file. ``old_path`` is None for a new file, ``new_path`` is None for a deleted one."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...] = ()
    is_new: bool = False
    is_deleted: bool = False
    is_rename: bool = False
    is_binary: bool = False
    # Verbatim lines before the first hunk (diff --git, index, modes, rename, ---/+++, binary data) and any
    # stray lines after the last one; empty header_lines means "synthesize a git header when rendering".
    header_lines: tuple[str, ...] = ()
    trailer_lines: tuple[str, ...] = ()
    old_mode: str | None = None
    new_mode: str | None = None

    def __post_init__(self) -> None:
        if self.old_path is None and self.new_path is None:
            raise ValueError("a FilePatch needs old_path or new_path")

    @property
    def path(self) -> str:
        """The path the change lands on: the new path, or the old one for a deletion."""
        return self.new_path if self.new_path is not None else str(self.old_path)

    @property
    def lines_added(self) -> int:
        """Number of ``+`` lines."""
        return sum(1 for h in self.hunks for line in h.lines if line.startswith("+"))

    @property
    def lines_removed(self) -> int:
        """Number of ``-`` lines."""
        return sum(1 for h in self.hunks for line in h.lines if line.startswith("-"))

    @property
    def lines_changed(self) -> int:
        """Added plus removed lines (binary files and pure renames count 0)."""
        return self.lines_added + self.lines_removed

    def _synth_header(self) -> list[str]:
        old = self.old_path if self.old_path is not None else self.path
        new = self.new_path if self.new_path is not None else self.path
        out = [f"diff --git {_quote('a/' + old)} {_quote('b/' + new)}"]
        if self.is_new:
            out.append(f"new file mode {self.new_mode or '100644'}")
        elif self.is_deleted:
            out.append(f"deleted file mode {self.old_mode or '100644'}")
        elif self.old_mode and self.new_mode and self.old_mode != self.new_mode:
            out += [f"old mode {self.old_mode}", f"new mode {self.new_mode}"]
        if self.is_rename:
            out += [f"rename from {_quote(old)}", f"rename to {_quote(new)}"]
        a = _DEV_NULL if self.is_new else _quote("a/" + old)
        b = _DEV_NULL if self.is_deleted else _quote("b/" + new)
        if self.is_binary and not self.hunks:
            out.append(f"Binary files {a} and {b} differ")
        elif self.hunks:
            out += [f"--- {a}", f"+++ {b}"]
        return out

    def render_lines(self) -> list[str]:
        """This file's diff as lines without newlines."""
        out = list(self.header_lines) if self.header_lines else self._synth_header()
        for h in self.hunks:
            out.append(h.header)
            out.extend(h.lines)
        out.extend(self.trailer_lines)
        return out


@dataclass(frozen=True)
class Patch:
    """A whole diff: leading text (e.g. a commit message), the per-file changes, and the final newline."""

    files: tuple[FilePatch, ...] = ()
    preamble: tuple[str, ...] = ()
    final_newline: bool = True

    @classmethod
    def parse(cls, text: str) -> Patch:
        """Parse git-style (or plain) unified diff text; raises PatchParseError on malformed hunks."""
        return _Parser(text).parse()

    def render(self) -> str:
        """Render back to diff text; ``Patch.parse(t).render() == t`` for any text the parser accepts."""
        lines = list(self.preamble)
        for f in self.files:
            lines.extend(f.render_lines())
        if not lines:
            return ""
        return "\n".join(lines) + ("\n" if self.final_newline else "")

    @property
    def paths(self) -> tuple[str, ...]:
        """Each file's resulting path, in diff order."""
        return tuple(f.path for f in self.files)

    @property
    def touched_paths(self) -> tuple[str, ...]:
        """Every path the diff changes, once each: both sides of a rename or copy, the old path of a deletion."""
        both = (p for f in self.files for p in (f.old_path, f.new_path) if p is not None)
        return tuple(dict.fromkeys(both))

    @property
    def is_empty(self) -> bool:
        """True if the diff touches no file."""
        return not self.files

    @property
    def lines_changed(self) -> int:
        """Added plus removed lines over all files; the size used for tie-breaks."""
        return sum(f.lines_changed for f in self.files)

    def filter(self, keep: Callable[[FilePatch], bool]) -> Patch:
        """A patch with only the files ``keep`` accepts (no preamble)."""
        return Patch(files=tuple(f for f in self.files if keep(f)))


def split_test_and_fix(patch: Patch, classifier: Callable[[str], bool] = DEFAULT_CLASSIFIER) -> tuple[Patch, Patch]:
    """Split ``patch`` into ``(test_part, fix_part)``.

    A file is test code if the classifier accepts its resulting path or, for a deletion or a rename out of a
    test directory, its old path.
    """

    def is_test(f: FilePatch) -> bool:
        return any(p is not None and classifier(p) for p in (f.new_path, f.old_path))

    return patch.filter(is_test), patch.filter(lambda f: not is_test(f))


class _Parser:
    """Line-oriented state machine over ``text.split("\\n")`` so that rendering can be exact."""

    def __init__(self, text: str) -> None:
        self.final_newline = text.endswith("\n")
        lines = text.split("\n")
        if self.final_newline or text == "":
            lines.pop()
        self.lines = lines
        self.i = 0

    def _at(self, k: int) -> str | None:
        return self.lines[k] if k < len(self.lines) else None

    def _file_start(self, k: int) -> bool:
        line = self.lines[k]
        if line.startswith("diff --git "):
            return True
        # A plain "diff -u" file: ---/+++ followed by a hunk (guards against "---" in commit messages).
        nxt, hunk = self._at(k + 1), self._at(k + 2)
        return (
            line.startswith("--- ")
            and nxt is not None
            and nxt.startswith("+++ ")
            and hunk is not None
            and hunk.startswith("@@ ")
        )

    def parse(self) -> Patch:
        preamble: list[str] = []
        while self.i < len(self.lines) and not self._file_start(self.i):
            preamble.append(self.lines[self.i])
            self.i += 1
        files: list[FilePatch] = []
        while self.i < len(self.lines):
            files.append(self._file())
        return Patch(tuple(files), tuple(preamble), self.final_newline)

    def _file(self) -> FilePatch:
        start = self.i
        header: list[str] = []
        meta: dict[str, str] = {}
        prefixes = ("", "")
        is_binary = False
        first = self.lines[self.i]
        git = first.startswith("diff --git ")
        if git:
            a, b = (_unquote(p) for p in _split_git_line(first[len("diff --git ") :]))
            if re.match(r"^[a-z]/", a) and re.match(r"^[a-z]/", b):
                prefixes = (a[:2], b[:2])
            meta["git_old"], meta["git_new"] = _strip_prefix(a, prefixes[0]), _strip_prefix(b, prefixes[1])
            header.append(first)
            self.i += 1
            while (line := self._at(self.i)) is not None and line.startswith(_EXT_PREFIXES):
                prefix = next(p for p in _EXT_PREFIXES if line.startswith(p))
                meta[prefix.strip()] = line[len(prefix) :]
                header.append(line)
                self.i += 1
            line = self._at(self.i)
            if line is not None and line.startswith("Binary files ") and line.endswith(" differ"):
                is_binary = True
                header.append(line)
                self.i += 1
            elif line == "GIT binary patch":
                is_binary = True
                # The base85 payload runs until the next file; keep it verbatim.
                while (line := self._at(self.i)) is not None and not line.startswith("diff --git "):
                    header.append(line)
                    self.i += 1
        old_hdr = new_hdr = None
        line, nxt = self._at(self.i), self._at(self.i + 1)
        if line is not None and nxt is not None and line.startswith("--- ") and nxt.startswith("+++ "):
            old_hdr, new_hdr = _header_path(line[4:]), _header_path(nxt[4:])
            if not git and (old_hdr or "a/").startswith("a/") and (new_hdr or "b/").startswith("b/"):
                prefixes = ("a/", "b/")
            header += [line, nxt]
            meta["has_headers"] = "1"
            self.i += 2
        hunks, trailer = self._hunks()
        if not header and not hunks:
            raise PatchParseError(f"line {start + 1}: expected a file header")

        is_new = "new file mode" in meta or (meta.get("has_headers") == "1" and old_hdr is None)
        is_deleted = "deleted file mode" in meta or (meta.get("has_headers") == "1" and new_hdr is None)
        is_rename = "rename from" in meta or "rename to" in meta
        old_path: str | None = meta.get("rename from", meta.get("copy from"))
        new_path: str | None = meta.get("rename to", meta.get("copy to"))
        old_path = _unquote(old_path) if old_path else _strip_prefix(old_hdr or "", prefixes[0]) or None
        new_path = _unquote(new_path) if new_path else _strip_prefix(new_hdr or "", prefixes[1]) or None
        if old_path is None and not is_new:
            old_path = meta.get("git_old")
        if new_path is None and not is_deleted:
            new_path = meta.get("git_new")
        if old_path is None and new_path is None:
            raise PatchParseError(f"line {start + 1}: cannot tell which file this diff changes")
        return FilePatch(
            old_path=None if is_new else old_path,
            new_path=None if is_deleted else new_path,
            hunks=hunks,
            is_new=is_new,
            is_deleted=is_deleted,
            is_rename=is_rename,
            is_binary=is_binary,
            header_lines=tuple(header),
            trailer_lines=trailer,
            old_mode=meta.get("old mode", meta.get("deleted file mode")),
            new_mode=meta.get("new mode", meta.get("new file mode")),
        )

    def _hunks(self) -> tuple[tuple[Hunk, ...], tuple[str, ...]]:
        hunks: list[Hunk] = []
        while (line := self._at(self.i)) is not None and line.startswith("@@ "):
            hunks.append(self._hunk())
        # Anything up to the next file is kept as this file's trailer (e.g. a format-patch signature).
        stray: list[str] = []
        k = self.i
        while k < len(self.lines) and not self._file_start(k) and not self.lines[k].startswith("@@ "):
            stray.append(self.lines[k])
            k += 1
        if k < len(self.lines) and self.lines[k].startswith("@@ "):
            raise PatchParseError(f"line {self.i + 1}: unexpected text between hunks: {stray[0]!r}")
        self.i = k
        return tuple(hunks), tuple(stray)

    def _hunk(self) -> Hunk:
        header = self.lines[self.i]
        m = _HUNK_RE.match(header)
        if m is None:
            raise PatchParseError(f"line {self.i + 1}: bad hunk header {header!r}")
        old_start, new_start = int(m.group(1)), int(m.group(3))
        old_count = int(m.group(2)) if m.group(2) is not None else 1
        new_count = int(m.group(4)) if m.group(4) is not None else 1
        self.i += 1
        body: list[str] = []
        old_left, new_left = old_count, new_count
        while (old_left or new_left) and self.i < len(self.lines):
            line = self.lines[self.i]
            marker = line[:1]
            # An empty line is a context line whose single space was stripped (git apply accepts it too).
            if marker in (" ", "") and old_left > 0 and new_left > 0:
                old_left, new_left = old_left - 1, new_left - 1
            elif marker == "-" and old_left > 0:
                old_left -= 1
            elif marker == "+" and new_left > 0:
                new_left -= 1
            elif marker != "\\":
                raise PatchParseError(f"line {self.i + 1}: line does not fit hunk {header!r}: {line!r}")
            body.append(line)
            self.i += 1
        if old_left or new_left:
            raise PatchParseError(f"line {self.i + 1}: truncated hunk {header!r}")
        while (after := self._at(self.i)) is not None and after.startswith("\\"):
            body.append(after)  # "\ No newline at end of file" after the last line
            self.i += 1
        return Hunk(old_start, old_count, new_start, new_count, tuple(body), m.group(5), header)
