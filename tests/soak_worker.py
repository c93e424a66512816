"""`python -m tests.soak_worker`: `reprobot worker` with kill points, for the soak suite only (test code).

Some kill points cannot be hit from outside at will: between pushing the branch or opening the PR and the
store recording it, and between posting a reply and the job's end being recorded. This wrapper kills its own
process with SIGKILL there, as a crash or an OOM kill would:

- SOAK_KILL_AT: comma-separated publication kinds (branch, pr, status-fix); the process kills itself right after
  the forge call and before `Publications.upsert_publication` records it, once per kind (a flag file in
  SOAK_FLAG_DIR remembers it across restarts).
- SOAK_KILL_REPLY_P: probability of a kill right after a reply comment is posted, before the job is finished.
"""

from __future__ import annotations

import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

from bot.cli import main
from bot.forges.github import GitHubForge
from bot.store.publications import Publications

KILL_AT = {kind for kind in os.environ.get("SOAK_KILL_AT", "").split(",") if kind}
KILL_REPLY_P = float(os.environ.get("SOAK_KILL_REPLY_P", "0") or 0)
FLAGS = Path(os.environ.get("SOAK_FLAG_DIR", "."))


def _die(reason: str) -> None:
    sys.stderr.write(f"soak_worker: SIGKILL {reason}\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


_record = Publications.upsert_publication


def _upsert_publication(self: Publications, issue_id: int, kind: str, forge_ref: str, **kw: Any) -> Any:
    flag = FLAGS / f"killed-at-{kind}"
    if kind in KILL_AT and not flag.exists():
        flag.write_text(forge_ref)
        _die(f"after publishing {kind} {forge_ref}, before recording it")
    return _record(self, issue_id, kind, forge_ref, **kw)


_reply_once = GitHubForge.reply_once


async def _reply_once_then_maybe_die(self: GitHubForge, key: str, body: str) -> int:
    comment_id = await _reply_once(self, key, body)
    if KILL_REPLY_P and random.random() < KILL_REPLY_P:
        _die(f"after posting reply {key}, before the job is finished")
    return comment_id


Publications.upsert_publication = _upsert_publication  # type: ignore[method-assign]
GitHubForge.reply_once = _reply_once_then_maybe_die  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(main(["worker", *sys.argv[1:]]))
