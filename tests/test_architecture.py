"""The architecture holds: no import cycles, every product module sits in one layer, and the map stays true.

`make lint` runs import-linter with the contracts in pyproject.toml; these tests check what a contract cannot:
that a new module is not left out of every layer (and so out of every check), that the whole graph has no
cycle at any depth (TYPE_CHECKING and function-level imports count: grimp sees them), and that the traces in
docs/architecture.md follow the stage lists the code runs (bot/pipeline/stages.py), through files that exist and
stay short.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

from bot.pipeline.stages import STAGES, JobKind

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "handlers", "agents", "sandboxes", "patch_selectors")
#: A pipeline stage is one short module: read in one sitting, it says all the stage does.
MAX_STAGE_LINES = 200
#: No file a trace opens is longer than this.
MAX_TRACE_LINES = 500
#: The map's sections that trace a delivery, and the job kind whose stage list each one follows.
TRACES: dict[str, JobKind] = {
    "## From a GitHub issue to its pull request": "fix",
    "## From a Jira issue to its reproduction comment": "reproduce",
}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every group of modules that import each other, directly or through others (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.find_modules_directly_imported_by(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.find_modules_directly_imported_by(nxt))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The check below is only worth something if it can fail: a cycle hidden in a function body is found.
    pkg = tmp_path / "cyclepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclepkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyclepkg import c\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclepkg import a\n")
    (pkg / "d.py").write_text("from cyclepkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    groups = strongly_connected(grimp.build_graph("cyclepkg", cache_dir=None))
    assert groups == [["cyclepkg.a", "cyclepkg.b", "cyclepkg.c"]]


def test_no_import_cycle_among_product_modules(graph: grimp.ImportGraph) -> None:
    assert strongly_connected(graph) == []


def _layer_modules() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c.get("id") == "layers")["layers"]
    return [m.strip() for layer in layers for m in re.split(r"[|:]", layer) if m.strip()]


def test_every_product_module_is_in_exactly_one_layer(graph: grimp.ImportGraph) -> None:
    listed = _layer_modules()
    assert len(listed) == len(set(listed)), "a module is listed in two layers"

    def owners(module: str) -> list[str]:
        return [m for m in listed if module == m or module.startswith(m + ".")]

    unplaced = sorted(m for m in graph.modules if m not in PACKAGES and not owners(m))
    assert unplaced == [], "add these modules to a layer in pyproject.toml's layers contract"
    nested = sorted(m for m in graph.modules if len(owners(m)) > 1)
    assert nested == [], "a module is covered by two layers (a layer and its own descendant)"


def _stage_files(kind: JobKind) -> list[str]:
    """The module file of each stage the job kind runs, relative to the repo, in the order they run."""
    files = []
    for stage in STAGES[kind]:
        module = sys.modules[stage.__module__]
        assert module.__file__ is not None
        files.append(Path(module.__file__).resolve().relative_to(ROOT).as_posix())
    return files


def _section(text: str, heading: str) -> str:
    return text.split(heading + "\n", 1)[1].split("\n## ", 1)[0]


def test_every_stage_is_one_short_module_of_the_pipeline() -> None:
    for kind, stages in STAGES.items():
        for stage, rel in zip(stages, _stage_files(kind), strict=True):
            assert rel.startswith("bot/pipeline/") and stage.__name__ == "run", f"{kind}: {rel}:{stage.__name__}"
            lines = len((ROOT / rel).read_text().splitlines())
            assert lines <= MAX_STAGE_LINES, f"stage module {rel} has {lines} lines"


def test_the_map_traces_a_delivery_through_the_stage_list() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    traced: set[str] = set()
    for heading, kind in TRACES.items():
        section = _section(text, heading)
        files = re.findall(r"^\d+\. `([\w/]+\.py)`", section, flags=re.MULTILINE)
        assert len(files) == len(set(files)), f"{heading}: a file is listed twice"
        stated = re.search(r"\b(\d+) files\b", section)
        assert stated is not None and int(stated.group(1)) == len(files), f"{heading}: say how many files it opens"
        # The trace names the kind's stage modules in the order the code runs them.
        assert [f for f in files if f in _stage_files(kind)] == list(dict.fromkeys(_stage_files(kind))), heading
        for rel in files:
            lines = len((ROOT / rel).read_text().splitlines())
            assert lines <= MAX_TRACE_LINES, f"{rel} has {lines} lines"
        traced.update(re.findall(r"`([\w/]+\.py)", section))
    untraced = sorted({f for kind in STAGES for f in _stage_files(kind)} - traced)
    assert untraced == [], "name these stage modules in a trace of docs/architecture.md"


#: Each agent family is a subpackage with one public entry point: its package. Code outside a family (the
#: pipeline, the selectors, other families) imports the family's package, never one of its modules.
AGENT_FAMILIES = (
    "agents.reading",
    "agents.triage",
    "agents.reproduce",
    "agents.localize",
    "agents.repair.classic",
    "agents.repair.mutation",
    "agents.repair.llm",
    "agents.setup",
    "agents.app",
    "agents.game",
)


def reached_inside(graph: grimp.ImportGraph) -> list[str]:
    """Imports that reach a module inside an agent family from outside that family."""
    found = []
    for family in AGENT_FAMILIES:
        inside = {m for m in graph.modules if m.startswith(family + ".")}
        for module in sorted(inside):
            for importer in sorted(graph.find_modules_that_directly_import(module)):
                if importer != family and not importer.startswith(family + "."):
                    found.append(f"{importer} -> {module}")
    return found


def test_families_are_reached_through_their_entry_points(graph: grimp.ImportGraph) -> None:
    assert [f for f in AGENT_FAMILIES if f not in graph.modules] == [], "a family listed here no longer exists"
    assert reached_inside(graph) == [], "import the family's package (its __init__ re-exports the public names)"


def test_the_entry_point_check_finds_a_deep_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "agents"
    (root / "reading").mkdir(parents=True)
    for rel, text in {
        "__init__.py": "",
        "reading/__init__.py": "from agents.reading.facts import parse\n",
        "reading/facts.py": "def parse(): ...\n",
        "user.py": "from agents.reading.facts import parse\n",
    }.items():
        (root / rel).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in list(sys.modules) if m == "agents" or m.startswith("agents.")]:
        monkeypatch.delitem(sys.modules, name)
    assert reached_inside(grimp.build_graph("agents", cache_dir=None)) == ["agents.user -> agents.reading.facts"]
