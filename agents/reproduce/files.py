"""Input files a report describes as a folder listing, so the synthesized test can create them first.

The pattern: the user's snippet reads a folder (`load('site')`, `render('tpl')`) and the report shows that
folder as an indented tree, one entry per line, with a one-line content after a file name:

    site/
      config.json        {"name": "demo"}
      hooks/
        build.sh         (executable) echo built

Without those files the snippet fails for another reason (the folder does not exist) and never reaches
the bug. The listing is read only when its top folder is named in the snippet.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from agents.reproduce.types import ListedFile

#: Box-drawing prefixes of `tree` output ("├── ", "│   ", "└── ") count as indentation.
_TREE_DRAWING = re.compile(r"[│├└─┬┼|`\\+-]+\s")
_ENTRY = re.compile(r"^(?P<name>\S+)(?:\s{2,}(?P<content>\S.*))?$")
_EXECUTABLE = re.compile(r"^\((?:executable|chmod \+x|\+x)\)\s*", re.I)
_SCRIPT_SUFFIXES = frozenset({".sh", ".bash"})


def listed_files(block: str) -> tuple[ListedFile, ...]:
    """Files of a folder listing (empty when the block is not one).

    Every non-blank line must be an entry: a name ending in "/" is a folder and later, deeper entries are
    inside it; any other name is a file whose text is what follows after two or more spaces. A shell
    script given as one line gets a `#!/bin/sh` line, since only the shell can run it as a program.
    """
    stack: list[tuple[int, str]] = []
    files: list[ListedFile] = []
    folders = 0
    for raw in block.split("\n"):
        if not raw.strip():
            continue
        depth, line = _depth(raw)
        m = _ENTRY.match(line)
        if m is None or not _plausible_name(m.group("name")):
            return ()
        while stack and stack[-1][0] >= depth:
            stack.pop()
        path = "/".join([*(stack[-1][1:] if stack else ()), m.group("name").rstrip("/")])
        if m.group("name").endswith("/"):
            if m.group("content"):
                return ()
            stack.append((depth, path))
            folders += 1
            continue
        files.append(_file(path, m.group("content") or ""))
    if folders == 0 or len(files) < 2 or any(".." in PurePosixPath(f.path).parts for f in files):
        return ()
    return tuple(files)


def _depth(raw: str) -> tuple[int, str]:
    line = raw.rstrip()
    depth = len(line) - len(line.lstrip())
    rest = line.lstrip()
    while (m := _TREE_DRAWING.match(rest)) is not None:
        depth += m.end()
        rest = rest[m.end() :].lstrip()
    return depth, rest


def _plausible_name(name: str) -> bool:
    """A path-like name: no quotes, parentheses or operators that would make it code or prose."""
    return bool(name) and not re.search(r"[()'\",;=<>]", name) and not name.startswith(("#", "$", ">"))


def _file(path: str, content: str) -> ListedFile:
    executable = bool(_EXECUTABLE.match(content))
    text = _EXECUTABLE.sub("", content)
    if PurePosixPath(path).suffix in _SCRIPT_SUFFIXES and not text.startswith("#!"):
        text = "#!/bin/sh\n" + text
        executable = True
    return ListedFile(path, text + "\n" if text else "", executable)


def files_for_program(blocks: tuple[str, ...], program: str) -> tuple[ListedFile, ...]:
    """The first listing whose top folder the program names as a string (e.g. `'tpl'`)."""
    for block in blocks:
        files = listed_files(block)
        if not files:
            continue
        top = PurePosixPath(files[0].path).parts[0]
        if re.search(r"""['"]""" + re.escape(top) + r"""(?:/[^'"]*)?['"]""", program):
            return files
    return ()


def write_lines(files: tuple[ListedFile, ...]) -> list[str]:
    """Test-body lines that create the files under tmp_path and make it the working folder."""
    lines = [
        "# The files the report lists, created where the snippet expects them.",
        f"listed_files = {{{', '.join(f'{f.path!r}: {f.text!r}' for f in files)}}}",
        "for name, text in listed_files.items():",
        "    target = tmp_path / name",
        "    target.parent.mkdir(parents=True, exist_ok=True)",
        "    target.write_text(text)",
    ]
    lines += [f"(tmp_path / {f.path!r}).chmod(0o755)" for f in files if f.executable]
    lines += ["monkeypatch.chdir(tmp_path)", 'monkeypatch.setenv("HOME", str(tmp_path))']
    return lines
