"""The baseline of a commit, kept on disk: the suite runs once per (tree, environment, test settings), not per job.

Every issue filed against a repo's default branch starts from the same commit, a `/reproduce` is often followed
by a `/fix`, and a redelivered or retried job starts again from scratch. Each of them ran the whole suite (under
coverage, for test impact selection) to learn which tests already fail: on a real project the largest fixed cost
of a job after the environment. The baseline depends only on the files in the workspace, the environment, the
test command and how it is run, so that is the key:

- the workspace's content hash: git's tree of the working tree (untracked files included, git's excludes
  honoured), written through a scratch index so the workspace's own index is left alone;
- the environment's folder name (itself the hash of its dependencies and interpreter) and the test settings;
- the sandbox backend, its root filesystem, the test timeout and whether coverage was measured.

Only a baseline that finished is kept (a timeout or an environment failure is never cached), and an entry that
cannot be read is treated as absent. Entries are gzip-compressed JSON: coverage contexts of a large suite are big.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from sandboxes.cache_prune import touch
from sandboxes.testrun import Baseline
from sandboxes.workspace import SCRATCH_DIR, git

#: What a test run leaves in the workspace (the scratch folder, caches, coverage data): never part of the key,
#: whatever the workspace's own excludes say. Given as git's global excludes file for the hashing only.
_LEFT_OUT = (f"/{SCRATCH_DIR}/", "__pycache__/", "*.pyc", ".pytest_cache/", ".coverage*")

#: Bumped when the stored layout or what a baseline holds changes: older entries are then never read.
LAYOUT = 1


async def workspace_tree(workspace: Path) -> str:
    """Git's tree hash of the working tree as it is (tracked and untracked files, excludes honoured)."""
    with tempfile.TemporaryDirectory(prefix="reprobot-index-") as scratch:
        index, excludes = Path(scratch) / "index", Path(scratch) / "excludes"
        excludes.write_text("\n".join(_LEFT_OUT) + "\n")
        await git(workspace, "-c", f"core.excludesFile={excludes}", "add", "--all", "--", ".", index=index)
        return (await git(workspace, "write-tree", index=index)).stdout.strip()


def baseline_key(tree: str, parts: dict[str, Any]) -> str:
    """The cache key of a baseline: the workspace tree plus everything else that decides the run."""
    blob = json.dumps({"layout": LAYOUT, "tree": tree, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _path(cache_dir: Path, key: str) -> Path:
    return cache_dir / "baselines" / f"{key}.json.gz"


def load(cache_dir: Path, key: str) -> Baseline | None:
    """The stored baseline for `key`, or None when there is none or it cannot be read."""
    path = _path(cache_dir, key)
    try:
        doc = json.loads(gzip.decompress(path.read_bytes()))
        baseline = from_json(doc)
    except (OSError, EOFError, ValueError, TypeError, KeyError, AttributeError):
        # A missing, torn or older entry: the suite simply runs again.
        return None
    touch(path)  # used: the least recently used entries are pruned first (sandboxes/cache_prune.py)
    return baseline


def store(cache_dir: Path, key: str, baseline: Baseline) -> None:
    """Keep `baseline` under `key`, written atomically (a concurrent reader sees the old file or the new)."""
    path = _path(cache_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = gzip.compress(json.dumps(to_json(baseline)).encode(), compresslevel=5)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise


def to_json(baseline: Baseline) -> dict[str, Any]:
    """A JSON-ready form of `baseline` (coverage contexts as sorted lists)."""
    coverage = None
    if baseline.coverage is not None:
        coverage = {
            file: {str(line): sorted(ctxs) for line, ctxs in lines.items()} for file, lines in baseline.coverage.items()
        }
    return {
        "tests": baseline.tests,
        "seconds": baseline.seconds,
        "output_tail": baseline.output_tail,
        "collection_errors": baseline.collection_errors,
        "coverage": coverage,
        "no_tests": baseline.no_tests,
    }


def from_json(doc: dict[str, Any]) -> Baseline:
    """The Baseline `to_json` wrote."""
    raw = doc["coverage"]
    coverage = None
    if raw is not None:
        coverage = {file: {int(line): set(ctxs) for line, ctxs in lines.items()} for file, lines in raw.items()}
    return Baseline(
        tests={str(k): str(v) for k, v in doc["tests"].items()},
        seconds=float(doc["seconds"]),
        output_tail=str(doc["output_tail"]),
        collection_errors={str(k): str(v) for k, v in doc["collection_errors"].items()},
        coverage=coverage,
        no_tests=str(doc["no_tests"]),
        cached=True,
    )
