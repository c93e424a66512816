"""Time patch parsing/normalization and each selector on 2,400 synthetic patches (seed 001's 120 x 20)."""

from __future__ import annotations

import difflib
import random
import time
from typing import Any

from patch_selectors.records import PatchRecord, Review, make_record
from patch_selectors.selectors import SELECTORS

CASES = 120
TRAJECTORIES = 20
REPEATS = 5

# Per-language templates: a source file with a bug site, candidate fixes, and a test file. "{v}" is a local
# name the agent picks (it varies between trajectories, which normalization must see through).
_LANGS: dict[str, dict[str, Any]] = {
    "py": {
        "src": "src/pkg/mod{i}.py",
        "test": "tests/test_mod{i}.py",
        "line": "    value_{j} = compute_{j}(items, limit)",
        "site": "    return total / count",
        "fixes": [
            "    if count == 0:\n        return 0\n    return total / count",
            "    {v} = max(count, 1)\n    return total / {v}",
            "    return total / count if count else 0.0",
            "    if not count:  # empty input\n        raise ValueError('empty')\n    return total / count",
        ],
        "test_body": "def test_case_{n}():\n    {v} = run_{i}({a})\n    assert {v} == {b}\n",
    },
    "go": {
        "src": "pkg/mod{i}/mod.go",
        "test": "pkg/mod{i}/mod_test.go",
        "line": "\tvalue{j} := compute{j}(items, limit)",
        "site": "\treturn total / count",
        "fixes": [
            "\tif count == 0 {\n\t\treturn 0\n\t}\n\treturn total / count",
            "\t{v} := max(count, 1)\n\treturn total / {v}",
            "\tif count <= 0 { // guard\n\t\treturn -1\n\t}\n\treturn total / count",
        ],
        "test_body": "func TestCase{n}(t *testing.T) {{\n\t{v} := Run{i}({a})\n\tif {v} != {b} {{\n"
        '\t\tt.Fatalf("got %v", {v})\n\t}}\n}}\n',
    },
    "java": {
        "src": "core/src/main/java/org/ex/Mod{i}.java",
        "test": "core/src/test/java/org/ex/Mod{i}Test.java",
        "line": "        int value{j} = compute{j}(items, limit);",
        "site": "        return total / count;",
        "fixes": [
            "        if (count == 0) {\n            return 0;\n        }\n        return total / count;",
            "        int {v} = Math.max(count, 1);\n        return total / {v};",
            "        return count == 0 ? 0 : total / count;",
        ],
        "test_body": "  @Test\n  public void case{n}() {{\n    int {v} = Mod{i}.run({a});\n"
        "    assertEquals({b}, {v});\n  }}\n",
    },
}


def _diff(path: str, old: list[str] | None, new: list[str]) -> str:
    head = [f"diff --git a/{path} b/{path}"] + (["new file mode 100644"] if old is None else [])
    src = "/dev/null" if old is None else f"a/{path}"
    body = difflib.unified_diff(old or [], new, src, f"b/{path}", lineterm="")
    return "\n".join([*head, *body]) + "\n"


def _noise(text: str, rng: random.Random) -> str:
    """Formatting noise an agent might add: spacing around '=' and trailing whitespace."""
    if rng.random() < 0.3:
        text = text.replace(" = ", "  =  ", 1)
    if rng.random() < 0.3:
        text = text.replace("\n", "  \n", 1)
    return text


def synthetic_cases(seed: int = 1) -> list[list[tuple[str, str, bool]]]:
    """``CASES`` lists of ``TRAJECTORIES`` ``(id, diff_text, accepted)`` tuples."""
    rng = random.Random(seed)
    cases = []
    for i in range(CASES):
        lang = _LANGS[("py", "go", "java")[i % 3]]
        body = [lang["line"].format(j=j) for j in range(rng.randint(15, 60))]
        cut = rng.randint(3, len(body) - 3)
        base = [*body[:cut], lang["site"], *body[cut:]]
        # A skewed choice of fix, so one fix tends to be the majority as in real runs.
        weights = [rng.random() ** 2 for _ in lang["fixes"]]
        patches = []
        for t in range(TRAJECTORIES):
            fix = rng.choices(lang["fixes"], weights)[0].replace("{v}", rng.choice(["d", "denom", "n", "safe"]))
            new = [*body[:cut], *_noise(fix, rng).split("\n"), *body[cut:]]
            diff = _diff(lang["src"].format(i=i), base, new)
            if rng.random() < 0.45:  # roughly the seed's rate of trajectories that edited a test
                tests = [
                    lang["test_body"].format(n=n, i=i, v=rng.choice(["got", "res", "out"]), a=n, b=rng.randint(0, 9))
                    for n in range(rng.randint(1, 3))
                ]
                diff += _diff(lang["test"].format(i=i), None, "\n".join(tests).split("\n"))
            patches.append((f"c{i}-t{t}", diff, rng.random() > 0.25))
        cases.append(patches)
    return cases


def measure() -> dict[str, Any]:
    """Build records from the synthetic diffs, then run every selector over every case.

    Returns seconds for parsing+splitting+normalizing all patches (``parse_normalize_s``) and, per selector,
    the best-of-``REPEATS`` seconds for one pass over all cases (``select_s``).
    """
    cases = synthetic_cases()
    ok, bad = Review(True, "bench"), Review(False, "bench", "synthetic rejection")
    start = time.perf_counter()
    records: list[list[PatchRecord]] = [
        [make_record(pid, diff, (ok if accepted else bad,)) for pid, diff, accepted in case] for case in cases
    ]
    parse_s = time.perf_counter() - start
    n = sum(len(c) for c in records)

    select_s: dict[str, float] = {}
    with_test: dict[str, int] = {}
    for name, fn in SELECTORS.items():
        best = float("inf")
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            picks = [fn(case).selected for case in records]
            best = min(best, time.perf_counter() - t0)
        select_s[name] = best
        with_test[name] = sum(1 for p in picks if p is not None and p.has_test)
    return {
        "patches": n,
        "cases": len(records),
        "parse_normalize_s": parse_s,
        "parse_normalize_ms_per_patch": 1000 * parse_s / n,
        "select_s": select_s,
        "selected_with_test": with_test,
    }


def main() -> None:
    """Print the measurements."""
    m = measure()
    print(f"selection speed: {m['patches']} patches in {m['cases']} cases")
    print(
        f"  parse + split + normalize: {m['parse_normalize_s']:.3f} s "
        f"({m['parse_normalize_ms_per_patch']:.2f} ms/patch)"
    )
    for name, secs in m["select_s"].items():
        print(f"  {name:<15} {secs:.4f} s  (selected patch has a test in {m['selected_with_test'][name]} cases)")


if __name__ == "__main__":
    main()
