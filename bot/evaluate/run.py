"""`reprobot eval`: run every benchmark case through the pipeline and score it against its held-out oracle."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import shutil
import statistics
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from rich.console import Console
from rich.progress import Progress

from bot.evaluate.projects import ProjectSelection, case_project, project_rows
from bot.evaluate.scoring import OracleScorer
from bot.evaluate.summary import write_charts, write_plot, write_report
from bot.jobs.queue import Queue
from bot.jobs.request import JobOptions, build_request
from bot.pipeline.record import job_record
from bot.pipeline.run import run_job
from bot.pipeline.types import EXIT_ENVIRONMENT, TIMED_STAGES, JobOutcome, Mode, stage_timing
from bot.settings.config import Settings
from bot.store import Store
from patch_selectors.metrics import (
    SelectionCase,
    TrajectoryOutcome,
    cogeneration_success,
    selector_table,
    signal_table,
    success_table,
)
from patch_selectors.selectors import SELECTORS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BenchCase:
    """One benchmark case: the buggy repo and the report the agent sees; the oracle only the scorer reads."""

    name: str
    root: Path
    meta: dict[str, Any]

    @property
    def repo(self) -> Path:
        """The buggy project."""
        return self.root / "repo"

    @property
    def issue_text(self) -> str:
        """The bug report."""
        return (self.root / "issue.md").read_text()

    @property
    def oracle(self) -> Path:
        """Held-out answers: fix.diff and test_brt.py. Never shown to an agent."""
        return self.root / "oracle"

    @property
    def project(self) -> str:
        """The project the case belongs to (bot/evaluate/projects.py says how it is found)."""
        return case_project(self.name, self.meta)

    def deps(self) -> tuple[str, ...]:
        """The case's `deps` (PEP 508 requirements its tests need); ValueError says what is wrong with them.

        They are installed in the case's environment on top of what the repo declares (a requirements file
        in repo/ is read by the environment detection like any project's).
        """
        deps = self.meta.get("deps", [])
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            raise ValueError(f"case.toml `deps` must be a list of requirement strings, not {deps!r}")
        for text in deps:
            try:
                Requirement(text)
            except InvalidRequirement as exc:
                raise ValueError(f"case.toml `deps`: {text!r} is not a valid requirement: {exc}") from None
        return tuple(deps)


def load_cases(bench: Path, only: set[str] | None = None, projects: ProjectSelection | None = None) -> list[BenchCase]:
    """Every case folder (with case.toml) under `bench`, sorted by name; `projects` keeps those of some projects.

    ValueError when `projects` names a project that has no case under `bench`.
    """
    cases = []
    for toml in sorted(bench.glob("**/case.toml")):
        name = toml.parent.name
        if only and name not in only:
            continue
        meta = tomllib.loads(toml.read_text())
        if "start" in meta:
            continue  # a web case (an app to start): `run_web_eval` runs those
        cases.append(BenchCase(name, toml.parent, meta))
    if projects is None:
        return cases
    projects.check(c.project for c in cases)
    return [c for c in cases if projects.keeps(c.project)]


def _git_repo_from(source: Path, dest: Path) -> Path:
    """Copy the buggy project into a fresh one-commit git repo (what a user's checkout looks like)."""
    # The bench folder is read-only; copied modes would make the repo unwritable.
    shutil.copytree(source, dest, copy_function=shutil.copyfile)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    cfg = ["-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "init.defaultBranch=main"]
    # Host git gets an explicit environment: none of the bot's settings or secrets.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "buggy version"]):
        subprocess.run(["git", *cfg, *args], cwd=dest, check=True, capture_output=True, env=env)
    return dest


@dataclass
class CaseResult:
    """Everything measured for one case."""

    name: str
    status: str = "error"
    #: The case's project (its row in the per-project table).
    project: str = ""
    error: str = ""
    seconds: float = 0.0
    trajectories: list[dict[str, Any]] = field(default_factory=list)
    selections: dict[str, str | None] = field(default_factory=dict)
    selection_explanations: dict[str, str] = field(default_factory=dict)
    outcomes: list[TrajectoryOutcome] = field(default_factory=list)
    #: The base commit's test counts (empty when no baseline ran) and how the environment was set up.
    baseline: dict[str, int] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    #: The trajectory whose patch the job published (status fixed) or suggested (status suggested).
    picked: str | None = None
    #: Correctness-assessment verdict per trajectory id (confident, unsure, not_assessed).
    verdicts: dict[str, str] = field(default_factory=dict)
    #: The BRT the job outputs (its reproduction, also when no trajectory fixed the bug) scored against the
    #: oracle: fails on the buggy code and passes with the oracle fix. None when the job wrote no BRT.
    reproduction_brt: bool | None = None
    #: Wall seconds per pipeline stage (environment, baseline, reproduce, search, review, ...).
    stage_seconds: dict[str, float] = field(default_factory=dict)
    #: Wall seconds of the job itself (seconds also counts the oracle scoring).
    job_seconds: float = 0.0
    #: What the charts draw (the same as the dashboard's): stages, trajectories and the localization ranking.
    charts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Per case, per trajectory, per selector."""
        return {
            "name": self.name,
            "project": self.project,
            "status": self.status,
            "error": self.error or None,
            "seconds": round(self.seconds, 2),
            "job_seconds": round(self.job_seconds, 2),
            "stage_seconds": stage_timing(self.stage_seconds),
            "reasons": self.reasons,
            "baseline": self.baseline,
            "environment": self.environment,
            "trajectories": self.trajectories,
            "selections": {
                name: {
                    "selected": sel,
                    "plausible_fix": _selected_flag(self, sel, "plausible_fix"),
                    "plausible_brt": _selected_flag(self, sel, "plausible_brt"),
                }
                for name, sel in self.selections.items()
            },
            "picked": self.picked,
            "picked_plausible_fix": self.picked_plausible(),
            "reproduction_brt_plausible": self.reproduction_brt,
            "charts": self.charts,
        }

    def picked_plausible(self) -> bool:
        """Whether the patch the job published (fixed) or suggested is a plausible fix by the oracle."""
        return _selected_flag(self, self.picked, "plausible_fix")


def _selected_flag(result: CaseResult, selected: str | None, attr: str) -> bool:
    return any(o.patch_id == selected and getattr(o, attr) for o in result.outcomes) if selected else False


async def evaluate_case(
    case: BenchCase,
    settings: Settings,
    store: Store,
    *,
    trajectories: int,
    sandbox: str,
    workdir: Path,
    mode: Mode = "fix",
) -> CaseResult:
    """Run the pipeline on one case, then score each trajectory's patch and each selector's pick.

    In mode "reproduce" the job stops after the reproduction: only its BRT is scored.
    """
    result = CaseResult(case.name, project=case.project)
    started = time.monotonic()
    try:
        deps = case.deps()
    except ValueError as exc:
        result.error, result.reasons = str(exc), [str(exc)]
        return result
    try:
        repo = await asyncio.to_thread(_git_repo_from, case.repo, workdir / case.name / "repo")
        title = case.issue_text.splitlines()[0]
        issue = await asyncio.to_thread(store.publications.upsert_issue, "local", str(repo), case.name, title=title)
        queue = Queue(store)
        payload = {"case": case.name}
        job_id = await asyncio.to_thread(queue.enqueue, mode, issue.id, payload, concurrency_key=f"eval:{case.name}")
        request = build_request(
            settings,
            None,
            JobOptions(trajectories=trajectories, sandbox=sandbox, agent="classic"),
            repo=repo,
            issue_text=case.issue_text,
            issue_ref=case.name,
            mode=mode,
            base_commit=None,
        )
        request = dataclasses.replace(request, extra_deps=deps)
        outcome = await run_job(request, settings, store, job_id)
        result.stage_seconds = dict(outcome.stage_seconds)
        result.job_seconds = outcome.seconds
        record = job_record(outcome)
        result.charts = {k: record[k] for k in ("stages", "trajectories", "localization")}
        await _score(case, outcome, result, settings, sandbox, workdir / case.name)
    except Exception as exc:
        log.exception("case %s crashed", case.name)
        result.status, result.error = "error", f"{type(exc).__name__}: {exc}"
    result.seconds = time.monotonic() - started
    return result


async def _score(
    case: BenchCase, outcome: JobOutcome, result: CaseResult, settings: Settings, sandbox: str, workdir: Path
) -> None:
    result.status = outcome.status
    result.baseline, result.environment, result.reasons = outcome.baseline, outcome.environment, outcome.reasons
    if outcome.status == "error":
        result.error = "; ".join(outcome.reasons)
    scorer = OracleScorer(workdir / "repo", case.oracle, case.meta, settings, sandbox, workdir / "oracle")
    # Every patch (and the reproduction's test) is scored at once: the scorer's runs are independent.
    repro_diff = new_file_diff(outcome.brt.path, outcome.brt.source) if outcome.brt and outcome.brt.source else None
    diffs = [traj.diff for traj in outcome.generated if traj.diff] + ([repro_diff] if repro_diff else [])
    scores = dict(zip(diffs, await scorer.score_all(diffs), strict=True))
    for traj in outcome.generated:
        scored = scores.get(traj.diff) if traj.diff else None
        outcome_row = TrajectoryOutcome(
            plausible_fix=bool(scored and scored.plausible_fix),
            plausible_brt=bool(scored and scored.plausible_brt),
            candidate_brt=bool(scored and scored.candidate_brt),
            has_test=bool(scored and scored.has_test),
            finished=traj.status == "fixed",
            patch_id=traj.id,
        )
        result.outcomes.append(outcome_row)
        verdict = outcome.chosen.assessments.get(traj.id) if outcome.chosen is not None else None
        if verdict is not None:
            result.verdicts[traj.id] = verdict.verdict
        result.trajectories.append(
            {
                **traj.summary(),
                **(scored.to_json() if scored else {}),
                "assessment": None if verdict is None else verdict.to_json(),
            }
        )
    if repro_diff is not None:
        # A job that reproduces but does not fix still publishes its test (the reproduction comment).
        result.reproduction_brt = scores[repro_diff].plausible_brt
    if outcome.chosen is not None and outcome.chosen.trajectory is not None:
        result.picked = outcome.chosen.trajectory.id
    if outcome.chosen is not None:
        for name, sel in outcome.chosen.selections.items():
            result.selections[name] = sel.selected.id if sel.selected else None
            result.selection_explanations[name] = sel.explanation
    else:
        result.selections = dict.fromkeys(SELECTORS)


def new_file_diff(path: str, source: str) -> str:
    """A git diff that adds one new text file (the job's BRT), for scoring it like a patch's test."""
    lines = source.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    end = "" if source.endswith("\n") or not lines else "\\ No newline at end of file\n"
    head = f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
    return f"{head}@@ -0,0 +1,{len(lines)} @@\n{body}{end}"


def parse_ks(text: str, m: int) -> list[int]:
    """'1,5,M' → [1, 5, m], dropping values above m."""
    ks = {m if part.strip().upper() == "M" else int(part) for part in text.split(",") if part.strip()}
    return sorted(k for k in ks if 1 <= k <= m)


def assessment_summary(results: list[CaseResult]) -> dict[str, Any]:
    """How well the correctness assessment separates plausible fixes from wrong ones, per case and per patch.

    Per case: what was published as a PR (status fixed) but is not a plausible fix by the oracle, and what was
    withheld as a suggestion although it was plausible. Per patch (every assessed trajectory): precision is
    P(plausible | confident), recall P(confident | plausible).
    """
    published = [r for r in results if r.status == "fixed"]
    withheld = [r for r in results if r.status == "suggested"]
    tp = fp = fn = tn = 0
    for r in results:
        plausible = {o.patch_id: o.plausible_fix for o in r.outcomes}
        for tid, verdict in r.verdicts.items():
            if verdict == "not_assessed":
                continue
            good = plausible.get(tid, False)
            if verdict == "confident":
                tp, fp = tp + good, fp + (not good)
            else:
                fn, tn = fn + good, tn + (not good)
    return {
        "published": len(published),
        "published_wrong": sorted(r.name for r in published if not _selected_flag(r, r.picked, "plausible_fix")),
        "withheld": len(withheld),
        "withheld_plausible": sorted(r.name for r in withheld if _selected_flag(r, r.picked, "plausible_fix")),
        "patches": {"confident_plausible": tp, "confident_wrong": fp, "unsure_plausible": fn, "unsure_wrong": tn},
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
    }


def summarize(
    results: list[CaseResult], m: int, ks: list[int], selection: ProjectSelection | None = None
) -> dict[str, Any]:
    """Seed-style tables: success@k, selector precision/recall, BRT signals, per-project rows; all from the cases.

    `selection` says which projects the run covered (a held-out check names its project in the report).
    """
    # Cases that stopped before generating are scored as M failed samples, so every case counts.
    samples = [r.outcomes or [TrajectoryOutcome(False, False, False, False, finished=False)] * m for r in results]
    table = success_table(samples, ks, clamp_k=True)
    # Every k from 1 to M, for the plotted curves (the table keeps only the asked-for k).
    curves = success_table(samples, list(range(1, m + 1)), clamp_k=True)
    every_patch = [o for r in results for o in r.outcomes]
    selectors = {}
    for name in SELECTORS:
        cases = [SelectionCase(r.outcomes, r.selections.get(name)) for r in results]
        selectors[name] = {crit: vars(pr) for crit, pr in selector_table(cases).items()}
    chosen = {
        name: {
            "plausible_fix": sum(_selected_flag(r, r.selections.get(name), "plausible_fix") for r in results),
            "plausible_brt": sum(_selected_flag(r, r.selections.get(name), "plausible_brt") for r in results),
        }
        for name in SELECTORS
    }
    return {
        "cases": len(results),
        "trajectories": m,
        "success_at_k": {metric: {str(k): v for k, v in row.items()} for metric, row in table.items()},
        "success_curves": {metric: {str(k): v for k, v in row.items()} for metric, row in curves.items()},
        "brt_signals": [vars(row) for row in signal_table(every_patch)],
        "cogeneration": cogeneration_success(every_patch),
        "selectors": selectors,
        "selected_counts": chosen,
        "assessment": assessment_summary(results),
        "selection": (selection or ProjectSelection()).to_json(),
        "projects": project_rows(results),
        "statuses": {s: sum(1 for r in results if r.status == s) for s in {r.status for r in results}},
        # Cases whose output BRT (reproduction or published test) is plausible: the "plausible BRT" of issue 14.
        "reproduction_brt_plausible": sum(1 for r in results if r.reproduction_brt),
        "median_seconds_per_case": sorted(r.seconds for r in results)[len(results) // 2] if results else 0.0,
        "median_job_seconds_per_case": round(statistics.median(r.job_seconds for r in results), 2) if results else 0.0,
        "median_stage_seconds": median_stage_seconds(results),
    }


def median_stage_seconds(results: list[CaseResult]) -> dict[str, float]:
    """Per stage, the median over cases of its seconds (a case where the stage did not run counts 0)."""
    names = list(TIMED_STAGES) + sorted({k for r in results for k in r.stage_seconds} - set(TIMED_STAGES))
    if not results:
        return dict.fromkeys(names, 0.0)
    return {n: round(statistics.median(r.stage_seconds.get(n, 0.0) for r in results), 2) for n in names}


async def run_eval(
    bench: Path,
    settings: Settings,
    *,
    trajectories: int,
    ks: list[int],
    out: Path,
    jobs: int = 1,
    only: set[str] | None = None,
    sandbox: str = "bwrap",
    console: Console | None = None,
    projects: ProjectSelection | None = None,
    mode: Mode = "fix",
) -> dict[str, Any]:
    """Run and score every case (of the `projects` selected); write results.json, report.md, success_at_k.png.

    `mode` is the job each case runs: "fix" (the default) or "reproduce" (the BRT alone, much faster).
    """
    cases = load_cases(bench, only, projects)
    if not cases:
        raise FileNotFoundError(f"no case.toml found under {bench}")
    out.mkdir(parents=True, exist_ok=True)
    workdir = settings.data_dir / "eval-work" / str(int(time.time() * 1000))
    store = await asyncio.to_thread(Store.open, out / "eval.db")
    gate = asyncio.Semaphore(max(1, jobs))
    results: list[CaseResult] = []
    console = console or Console(stderr=True)
    try:
        with Progress(console=console, transient=False) as progress:
            task = progress.add_task("cases", total=len(cases))

            async def one(case: BenchCase) -> CaseResult:
                async with gate:
                    res = await evaluate_case(
                        case, settings, store, trajectories=trajectories, sandbox=sandbox, workdir=workdir, mode=mode
                    )
                progress.advance(task)
                fixed = sum(o.plausible_fix for o in res.outcomes)
                brt = {None: "no BRT", True: "plausible BRT", False: "BRT not plausible"}[res.reproduction_brt]
                progress.console.log(f"{case.name}: {res.status}, {fixed}/{len(res.outcomes)} plausible fixes, {brt}")
                return res

            results = list(await asyncio.gather(*(one(c) for c in cases)))
    finally:
        await asyncio.to_thread(store.close)
        shutil.rmtree(workdir, ignore_errors=True)
    summary = summarize(results, trajectories, ks, projects)
    document = {"summary": summary, "cases": [r.to_json() for r in results]}
    (out / "results.json").write_text(json.dumps(document, indent=2) + "\n")
    write_report(out / "report.md", summary, [r.to_json() for r in results])
    write_charts(out, [r.to_json() for r in results])
    if not write_plot(out / "success_at_k.png", summary):
        console.print("plot skipped: matplotlib is not installed (pip install 'reprobot[eval]')")
    return document


async def run_eval_command(args: argparse.Namespace, settings: Settings) -> int:
    """The CLI entry for `reprobot eval`."""
    if args.agent not in ("classic", "auto"):
        print(f"reprobot eval: agent {args.agent!r} is not available in this build", flush=True)
        return 2
    only = {c.strip() for c in args.cases.split(",") if c.strip()} or None
    projects = ProjectSelection(args.leave_out, args.all_but) if args.leave_out or args.all_but else None
    # Web cases (issue 16): an app to start, issue.md and the oracle kind; scored by the app reproduction agent.
    # A held-out project run is about the pipeline's cases, so it leaves the web cases out.
    from agents.app import DriverError, load_web_cases, render_web_report, run_web_eval

    if projects is None and load_web_cases(args.bench, only):
        try:
            web = await run_web_eval(args.bench, args.out / "web", only)
        except DriverError as exc:
            print(f"reprobot eval: {exc}", flush=True)
            return EXIT_ENVIRONMENT  # the machine lacks the browser
        (args.out / "web" / "results.json").write_text(json.dumps(web, indent=2) + "\n")
        (args.out / "web" / "report.md").write_text(render_web_report(web))
        print(render_web_report(web))
        if not load_cases(args.bench, only):
            return 0
    try:
        # Checked before any case runs: a misspelt project must not cost a whole run.
        load_cases(args.bench, only, projects)
    except ValueError as exc:
        print(f"reprobot eval: {exc}", flush=True)
        return 2
    document = await run_eval(
        args.bench,
        settings,
        trajectories=args.trajectories,
        ks=parse_ks(args.k, args.trajectories),
        out=args.out,
        jobs=args.jobs,
        only=only,
        sandbox=args.sandbox or settings.sandbox,
        projects=projects,
        mode=args.mode,
    )
    print((args.out / "report.md").read_text())
    return 0 if document["summary"]["cases"] else 1
