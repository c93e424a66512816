"""`make bench`: run every benchmark in this folder, fast ones first, and print what each measures."""

from __future__ import annotations

import importlib.util
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Long-running benchmarks go last so the quick ratios print first.
LAST = ("quixbugs_eval",)
#: Scripts run on their own (they take many minutes or fetch from a package index).
STANDALONE = ("external_projects", "realbugs_latency")


def bench_modules() -> list[Path]:
    """Every bench script with a main(), in run order."""
    scripts = [
        p
        for p in sorted(HERE.glob("*.py"))
        if p.stem not in ("run_all", "__init__", *STANDALONE) and not p.stem.startswith("_")
    ]
    return sorted(scripts, key=lambda p: (p.stem in LAST, LAST.index(p.stem) if p.stem in LAST else 0, p.stem))


def run(path: Path) -> bool:
    """Import one script and call its main(); a failing benchmark is reported and the others still run."""
    sys.path.insert(0, str(HERE.parent))
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved_argv = sys.argv
    sys.argv = [str(path)]
    try:
        spec.loader.exec_module(module)
        main = getattr(module, "main", None)
        if main is None:
            print(f"(skipped: {path.name} has no main())")
            return True
        main()
        return True
    except SystemExit as exc:
        return exc.code in (None, 0)
    except Exception:  # one broken benchmark must not hide the others' numbers
        traceback.print_exc()
        return False
    finally:
        sys.argv = saved_argv


def main() -> int:
    """Run them all; exit non-zero if any failed."""
    failed = []
    for path in bench_modules():
        print(f"\n=== {path.stem} ===", flush=True)
        started = time.monotonic()
        if not run(path):
            failed.append(path.stem)
        print(f"({path.stem}: {time.monotonic() - started:.1f} s)", flush=True)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
