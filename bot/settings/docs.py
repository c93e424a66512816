"""docs/configuration.md, generated from the settings table: `python -m bot.settings.docs > docs/configuration.md`.

`make docs` runs that; tests/test_configuration_doc.py fails while the committed file and the table disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bot.settings.table import CROSS_CHECKS, ROWS, SECTIONS, Setting, format_value

__all__ = ["configuration_markdown", "main", "shown_default"]

_HEADER = """# Configuration

<!-- Generated from bot/settings/table.py by `make docs` (python -m bot.settings.docs); do not edit by hand. -->

reprobot reads its settings once, at start, from `REPROBOT_*` environment variables. An empty variable counts as
unset (the default applies). A value that cannot be used stops the command with a message naming the variable
(exit 2). `reprobot doctor` lists the variables that are set (a secret as `(set)`) and warns about `REPROBOT_*`
variables that are not settings. Secrets are never logged, and are scrubbed from published text.
"""


def shown_default(row: Setting) -> str:
    """The default as the docs show it (markdown): the row's own text, else the value in backticks or `unset`."""
    if row.shown is not None:
        return row.shown
    text = format_value(row.default)
    return text if text == "unset" else f"`{text}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _row_line(row: Setting) -> str:
    value = row.kind.doc + (" (secret)" if row.secret else "")
    value += f"; must be {row.rule.text}" if row.rule is not None else ""
    meaning = row.doc
    return f"| `{row.env}` | {_cell(shown_default(row))} | {_cell(value)} | {_cell(meaning)} |"


def configuration_markdown() -> str:
    """The whole of docs/configuration.md: one table per section, then the checks across settings."""
    parts = [_HEADER]
    for name, (title, about) in SECTIONS.items():
        rows = [row for row in ROWS if row.section == name]
        parts.append(f"## {title}\n\n{about}\n")
        lines = ["| variable | default | value | meaning |", "|---|---|---|---|"]
        parts.append("\n".join(lines + [_row_line(row) for row in rows]) + "\n")
    checks = "\n".join(f"- {cross.message}." for cross in CROSS_CHECKS)
    parts.append(f"## Checks across settings\n\nChecked after every variable's own rule, in this order:\n\n{checks}\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Print the document, or with `--check FILE` exit 1 when FILE differs from it."""
    args = sys.argv[1:] if argv is None else argv
    text = configuration_markdown()
    if args[:1] == ["--check"] and len(args) == 2:
        current = Path(args[1]).read_text() if Path(args[1]).exists() else ""
        if current != text:
            print(f"{args[1]} is out of date: run `make docs`", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
