"""Tool output for a model: ANSI codes and progress bars removed, long text cut to head + tail + error lines."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
_PROGRESS = re.compile(
    r"^\s*(?:\S.{0,40}?:\s*)?\d{1,3}%\s*\|.*$"  # tqdm: " 45%|####   | 9/20 [00:01<00:02]"
    r"|^\s*[\[(]?[#=>.\-\s]{10,}[\])]?\s*\d{0,3}%?\s*$"  # bare bars: "[#####.....] 50%"
    r"|^\s*[|/\\-]\s*$"  # spinners
)
_ERRORISH = re.compile(r"Error|Exception|Traceback|FAILED|FAIL:|assert|error:|^E\s", re.IGNORECASE)
MAX_LINE = 300


def strip_terminal(text: str) -> str:
    """Remove ANSI escapes and carriage-return redraws (keep what the terminal would finally show)."""
    text = _ANSI.sub("", text)
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            parts = [p for p in line.split("\r") if p.strip()]
            line = parts[-1] if parts else ""
        if _PROGRESS.match(line) and line.strip():
            continue
        lines.append(line.rstrip())
    return "\n".join(lines)


def clean_output(text: str, *, head: int = 20, tail: int = 30, max_errors: int = 15) -> str:
    """Strip terminal noise; keep the first `head` and last `tail` lines plus error lines from the middle."""
    lines = [ln if len(ln) <= MAX_LINE else ln[:MAX_LINE] + " …" for ln in strip_terminal(text).strip("\n").split("\n")]
    if len(lines) <= head + tail + max_errors:
        return "\n".join(lines)
    middle = lines[head:-tail]
    errors = [ln for ln in middle if _ERRORISH.search(ln)][:max_errors]
    cut = len(middle) - len(errors)
    marker = f"[… {cut} lines cut; error lines from the cut part follow …]" if errors else f"[… {cut} lines cut …]"
    return "\n".join(
        [*lines[:head], marker, *errors, *(["[… end of error lines …]"] if errors else []), *lines[-tail:]]
    )
