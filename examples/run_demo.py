"""`make demo`: copy the example project into a fresh git repo and let reprobot fix its bug report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEM_PACKAGES = HERE.parent / ".ci" / "system-packages"


def preflight(reprobot: Path) -> str | None:
    """Why the demo cannot run on this machine, found before any work; None when it can."""
    check = subprocess.run([str(SYSTEM_PACKAGES), "--check", "demo"], capture_output=True, text=True)
    if check.returncode != 0:
        plan = subprocess.run([str(SYSTEM_PACKAGES), "--dry-run", "demo"], capture_output=True, text=True)
        install = plan.stdout.strip().splitlines()[-1] if plan.stdout.strip() else "apt-get install bubblewrap"
        return f"{check.stdout.strip()}\nrun `make demo` as root to install them, or run:  sudo {install}"
    backend = os.environ.get("REPROBOT_SANDBOX", "bwrap")
    doctor = subprocess.run([str(reprobot), "doctor", "--json"], capture_output=True, text=True)
    try:
        problem = json.loads(doctor.stdout)["backends"].get(backend, f"unknown backend {backend!r}")
    except (json.JSONDecodeError, KeyError, TypeError):
        return f"`reprobot doctor --json` failed (exit {doctor.returncode}): {doctor.stderr.strip()[-500:]}"
    if problem != "available":
        return f"the {backend} sandbox cannot run here: {problem} (`reprobot doctor` shows every backend)"
    return None


def git(repo: Path, *args: str) -> str:
    """Run git in the demo repo with a fixed identity."""
    env_args = ["-c", "user.name=Demo User", "-c", "user.email=demo@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run(["git", *env_args, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def main() -> int:
    """Build the demo repo, run `reprobot fix`, print the branch, PR body and BRT evidence."""
    reprobot = Path(sys.executable).with_name("reprobot")
    problem = preflight(reprobot)
    if problem is not None:
        print(f"demo: cannot start: {problem}", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="reprobot-demo-"))
    repo = root / "shopcart"
    shutil.copytree(HERE / "shopcart", repo)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "shopcart 0.3.0")
    out = root / "out"
    cmd = [str(reprobot), "fix", "--repo", str(repo), "--issue", str(HERE / "shopcart-issue.md"),
           "--trajectories", "4", "--out", str(out), "--json"]
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.stderr:
        sys.stderr.write(proc.stderr)
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        print(proc.stdout)
        print(f"demo: reprobot did not print JSON (exit {proc.returncode})", file=sys.stderr)
        return 1
    print(f"\nstatus: {result['status']}  (exit {proc.returncode})")
    for reason in result.get("reasons", []):
        print(f"  - {reason}")
    if result["status"] != "fixed":
        return 1
    brt = result["brt"]
    print(f"branch: {result['branch']}  (in {repo})")
    print(f"fix files: {result['fix_files']}  test files: {result['test_files']}")
    print(f"\n--- BRT {brt['path']} on the buggy code: fails_before={brt['fails_before']}")
    print(brt["before_output"].strip()[-1500:])
    print(f"\n--- with the fix: passes_after={brt['passes_after']}")
    print(brt["after_output"].strip()[-800:])
    print("\n--- the branch's commit:")
    print(git(repo, "show", "--stat", "--format=%s%n", result["branch"]))
    print("--- PR body (" + str(out / "pr.md") + "):\n")
    print((out / "pr.md").read_text())
    return 0 if brt["fails_before"] and brt["passes_after"] else 1


if __name__ == "__main__":
    sys.exit(main())
