"""Report text into facts: markdown structure, code, REPL sessions, tracebacks, expected vs. actual, crashes."""
