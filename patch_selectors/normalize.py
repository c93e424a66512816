"""Normalize a patch so that fixes differing only in identifier names, whitespace or comments hash alike."""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import re
import tokenize
from collections.abc import Callable, Iterator

from patch_selectors.classify import DEFAULT_CLASSIFIER
from patch_selectors.patch import FilePatch, Hunk, Patch, split_test_and_fix

# What is hashed, per file (files sorted by path): a line naming the file and how it changes (new, deleted,
# renamed, mode, binary payload), then for every run of consecutive removed or added lines, the run's
# position in the *old* file and its tokens. Context lines are left out on purpose: the old-file position
# already says where a change lands, while context length and hunk merging vary with unrelated edits
# nearby (an extra blank line would otherwise change the hash). Runs whose tokens are empty (blank lines,
# comment-only lines) are dropped, so adding or removing such lines does not change the hash.
#
# Tokens: Python files use the tokenize module; other languages use a regex tokenizer with that language's
# comment syntax. Comments are dropped and all whitespace collapses to single separators, except
# that the indentation of a Python logical line is kept because it is semantic there. Each distinct
# identifier is replaced by ``v0``, ``v1``, ... in order of first use across the whole patch. Keywords
# and Python builtins stay as they are: ``min`` versus ``max`` is a different fix, not a renaming.

_PY_EXTS = (".py", ".pyi", ".pyw")
_PY_KEEP = frozenset(keyword.kwlist) | frozenset(dir(builtins))
_PY_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
_PY_SKIP.add(tokenize.ENDMARKER)

# Keywords and literal names common to C-family, JVM, JS/TS, Go, Rust, Ruby, Swift, Dart and shell; they
# carry meaning, so they are never renamed.
_OTHER_KEEP_WORDS = """
    abstract and as async await auto bool boolean break byte case catch char class const constexpr continue
    def default defer delete do double elif else elsif end enum esac except export extends extern false fi
    final finally float fn for foreach func function go goto if impl implements import in instanceof int
    interface internal is let long loop match mod module move mut namespace new nil not null nullptr object
    operator or override package private protected pub public raise readonly ref rescue return select
    self short signed sizeof static struct super switch synchronized template then this throw throws trait
    true try type typedef typeof undefined union unless unsigned until use using val var virtual void
    volatile when where while with yield
"""
_OTHER_KEEP = frozenset(_OTHER_KEEP_WORDS.split())

_COMMENT_STYLES: dict[str, tuple[str, ...]] = {
    "c": (r"//[^\n]*", r"/\*.*?(?:\*/|\Z)"),
    "hash": (r"\#[^\n]*",),
    "c+hash": (r"//[^\n]*", r"/\*.*?(?:\*/|\Z)", r"\#[^\n]*"),
    "dash": (r"--[^\n]*",),
    "none": (),
}
_EXT_STYLE: dict[str, str] = {
    **dict.fromkeys(("rb", "sh", "bash", "zsh", "pl", "r", "yaml", "yml", "toml", "cfg", "ini"), "hash"),
    **dict.fromkeys(("cmake", "bzl", "bazel", "star", "nix", "tf", "ex", "exs", "jl", "mk"), "hash"),
    "php": "c+hash",
    **dict.fromkeys(("sql", "lua", "hs", "elm", "ada"), "dash"),
    **dict.fromkeys(("md", "txt", "rst", "json", "csv", "html", "xml"), "none"),
}
_TOKEN_PARTS = (
    r"(?P<str>\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)",
    r"(?P<num>\.?\d(?:[\w.]|[eE][-+])*)",
    r"(?P<name>[A-Za-z_$][\w$]*)",
    r"(?P<op>>>>=|<<=|>>=|\*\*=|\.\.\.|===|!==|->|=>|::|\+\+|--|&&|\|\||<<|>>|[-+*/%&|^!=<>]=|\S)",
)
_TOKEN_RES: dict[str, re.Pattern[str]] = {
    style: re.compile("|".join((r"(?P<ws>\s+)", *(f"(?:{c})" for c in comments), *_TOKEN_PARTS)), re.DOTALL)
    for style, comments in _COMMENT_STYLES.items()
}
# Integer groups of the compiled patterns, looked up once (the 'ws' and comment alternatives yield nothing).
_GROUP_NAMES = ("str", "num", "name", "op")


class _Names:
    """Maps identifiers to ``v0``, ``v1``, ... in order of first use."""

    def __init__(self) -> None:
        self.index: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        found = self.index.get(name)
        if found is None:
            found = self.index[name] = f"v{len(self.index)}"
        return found


# A raw token is (text, renamable); renaming happens only once a whole run tokenized, so a run that falls
# back to the regex tokenizer half-way has not already claimed indices for its first identifiers.
_Raw = list[tuple[str, bool]]


def _python_tokens(lines: list[str]) -> _Raw | None:
    """Tokens of Python source lines, with ``|N|`` marking each logical line indented N columns.

    Returns None when ``tokenize`` cannot handle the fragment (e.g. half of a triple-quoted string).
    """
    indents = [len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip()) for line in lines]
    # Lines are fed left-aligned so a fragment never trips over INDENT/DEDENT bookkeeping.
    source = "".join(line.strip() + "\n" for line in lines)
    out: _Raw = []
    at_line_start = True
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NEWLINE:
                at_line_start = True
            if tok.type in _PY_SKIP or (tok.type == tokenize.ERRORTOKEN and not tok.string.strip()):
                continue
            if at_line_start:
                out.append((f"|{indents[tok.start[0] - 1]}|", False))
                at_line_start = False
            out.append((tok.string, tok.type == tokenize.NAME and tok.string not in _PY_KEEP))
    except (tokenize.TokenError, SyntaxError):
        return None
    return out


def _regex_tokens(lines: list[str], style: str) -> _Raw:
    """Tokens of non-Python lines, with comments and whitespace dropped."""
    out: _Raw = []
    for m in _TOKEN_RES[style].finditer("\n".join(lines)):
        kind = m.lastgroup
        if kind is None or kind not in _GROUP_NAMES:
            continue
        text = m.group()
        out.append((text, kind == "name" and text not in _OTHER_KEEP))
    return out


def _style(path: str) -> str:
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return "py" if path.endswith(_PY_EXTS) else _EXT_STYLE.get(ext, "c")


def _runs(hunk: Hunk) -> Iterator[tuple[int, str, list[str]]]:
    """Yield ``(old_line, sign, lines)`` for each run of consecutive ``-`` or ``+`` lines."""
    old_line = hunk.old_start if hunk.old_count else hunk.old_start + 1
    sign, start, run = "", 0, []  # type: str, int, list[str]
    for line in hunk.lines:
        marker = line[:1]
        if marker == "\\":
            continue  # "\ No newline at end of file" does not change the code
        if marker != sign and run:
            yield start, sign, run
            run = []
        if marker in ("-", "+"):
            if not run:
                sign, start = marker, old_line
            run.append(line[1:])
        else:
            sign = ""
        if marker != "+":
            old_line += 1
    if run:
        yield start, sign, run


def _file_lines(f: FilePatch, names: _Names) -> list[str]:
    if f.is_new:
        kind = f"new {f.path}"
    elif f.is_deleted:
        kind = f"deleted {f.path}"
    elif f.is_rename:
        kind = f"renamed {f.old_path} -> {f.new_path}"
    else:
        kind = f"modified {f.path}"
    out = [f"file {kind}"]
    if f.old_mode != f.new_mode and not (f.is_new or f.is_deleted):
        out.append(f"mode {f.old_mode} -> {f.new_mode}")
    if f.is_binary:
        # The payload (if git included one) is all we know about a binary change; hash it verbatim.
        payload = (
            "\n".join(f.header_lines[f.header_lines.index("GIT binary patch") :])
            if ("GIT binary patch" in f.header_lines)
            else ""
        )
        out.append("binary " + hashlib.sha256(payload.encode()).hexdigest())
    style = _style(f.path)
    for hunk in f.hunks:
        for old_line, sign, lines in _runs(hunk):
            raw = _python_tokens(lines) if style == "py" else None
            if raw is None:
                raw = _regex_tokens(lines, "hash" if style == "py" else style)
            if raw:
                out.append(f"@{old_line} {sign} " + " ".join(names(t) if r else t for t, r in raw))
    return out


def normalize_patch(patch: Patch) -> str:
    """The normalized text of ``patch`` (see the module docstring); equal texts mean "same change"."""
    names = _Names()
    out: list[str] = []
    for f in sorted(patch.files, key=lambda f: (f.path, f.old_path or "")):
        out.extend(_file_lines(f, names))
    return "\n".join(out)


def patch_hash(patch: Patch) -> str:
    """sha256 hex digest of :func:`normalize_patch`."""
    return hashlib.sha256(normalize_patch(patch).encode("utf-8")).hexdigest()


def fix_hash(patch: Patch, classifier: Callable[[str], bool] = DEFAULT_CLASSIFIER) -> str:
    """:func:`patch_hash` of the fix part (non-test files) of ``patch``."""
    return patch_hash(split_test_and_fix(patch, classifier)[1])
