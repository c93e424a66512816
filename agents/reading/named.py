"""Files a report gives by name: a code block introduced by its file name, and what `cat` shows in a shell session.

Users who report a command-line problem show the files the command reads: "`tool.py`:" above the script
they run with `python tool.py sync`, or `$ cat notes.txt` and its contents before `$ tool notes.txt`. A test
that replays the command needs those files, under those names.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from agents.reading.markdown import CodeBlock, console_runs

#: A prose line that names the block after it: just the name, or a sentence ending in the name and a colon.
_NAME_AT_END = re.compile(
    r"[`*_'\"]*(?P<name>[\w./~-]*[\w-]\.[A-Za-z][A-Za-z0-9]{0,7})[`*_'\"]*[ \t]*(?P<colon>:?)[ \t*_]*$"
)
#: A first line comment that names the file: "# tool.py", "# file: tool.py", "# contents of tool.py".
_NAME_COMMENT = re.compile(
    r"^\s*(?:#|//|--|;)\s*(?:(?:file(?:name)?|contents\s+of)\s*:?\s*)?(?P<name>[\w./-]+\.\w{1,8})\s*$"
)
#: `cat > name <<'EOF'` and `cat <<EOF > name`: the lines up to the terminator are the file.
_HEREDOC = re.compile(
    r"^cat\s+(?:>\s*(?P<a>\S+)\s+<<-?\s*['\"]?(?P<t1>\w+)['\"]?|<<-?\s*['\"]?(?P<t2>\w+)['\"]?\s+>\s*(?P<b>\S+))\s*$"
)
_NAMED_KINDS = frozenset({"python", "output"})


def named_files(prose_lines: Sequence[str], blocks: Sequence[CodeBlock]) -> tuple[tuple[str, str], ...]:
    """(file name, text) for each file the report gives by name, in document order; the first of a name wins."""
    found: dict[str, str] = {}
    previous = ""
    for line in prose_lines:
        block = re.fullmatch(r"\x00B(\d+)\x00", line)
        if block is None:
            previous = line if line.strip() else previous
            continue
        code = blocks[int(block.group(1))]
        if code.kind == "console":
            for name, text in _shown_files(code.code):
                found.setdefault(name, text)
        elif code.kind in _NAMED_KINDS:
            named = _block_name(previous, code.code)
            if named is not None:
                found.setdefault(named, code.code if code.code.endswith("\n") else code.code + "\n")
        previous = ""
    return tuple(found.items())


def _block_name(previous: str, code: str) -> str | None:
    """The file name the line before a block gives it ("`tool.py`:"), or its own first-line comment."""
    m = _NAME_AT_END.search(previous.strip())
    if m is not None:
        alone = previous.strip(" \t`*_#>-:'\"") == m.group("name")
        if alone or m.group("colon"):
            return m.group("name").lstrip("./") or None
    first = code.split("\n", 1)[0]
    comment = _NAME_COMMENT.match(first)
    return comment.group("name").lstrip("./") if comment else None


def _shown_files(code: str) -> list[tuple[str, str]]:
    """Files a shell session shows: `$ cat name` and its output, `$ cat > name <<EOF` and its lines."""
    out: list[tuple[str, str]] = []
    for command, lines in console_runs(code):
        if command is None:
            continue
        heredoc = _HEREDOC.match(command.strip())
        if heredoc is not None:
            name, stop = heredoc.group("a") or heredoc.group("b"), heredoc.group("t1") or heredoc.group("t2")
            body = lines[: next((i for i, line in enumerate(lines) if line.strip() == stop), len(lines))]
            out.append((name, "\n".join(_strip_prompt(x) for x in body) + "\n"))
            continue
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        if len(words) == 2 and words[0] == "cat" and not words[1].startswith("-"):
            while lines and not lines[-1].strip():
                lines = lines[:-1]
            out.append((words[1], "\n".join(lines) + "\n"))
    return out


def _strip_prompt(line: str) -> str:
    """A heredoc line as the shell echoes it ("> text") without its continuation prompt."""
    return line[2:] if line.startswith("> ") else line
