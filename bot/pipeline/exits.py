"""Exit codes of `reprobot fix|reproduce`, documented in docs/command-line.md (bot.cli re-exports them).

A module of their own, importing nothing: the command line reads them before it knows which command runs,
and `reprobot --help` must not load the pipeline (and with it the model client and the sandboxes) to do so.
"""

EXIT_OK = 0
EXIT_NOT_FIXED = 1
EXIT_USAGE = 2
EXIT_ABSTAINED = 3
EXIT_BAD_REPO = 4
EXIT_DIRTY = 5
EXIT_BAD_ISSUE = 6
EXIT_ENVIRONMENT = 7
EXIT_ERROR = 8
EXIT_SUGGESTED = 9
EXIT_INTERRUPTED = 130

STATUS_EXIT = {
    "fixed": EXIT_OK,
    "reproduced": EXIT_OK,
    "suggested": EXIT_SUGGESTED,
    "not_fixed": EXIT_NOT_FIXED,
    "abstained": EXIT_ABSTAINED,
    "error": EXIT_ERROR,
}
