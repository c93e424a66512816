"""The app reproduction agent: report -> steps -> actions on a live app, until the oracle fires.

`reproduce_app` extracts the steps, plays them on a driver (matching each target to an element by text, label
and role; searching the UTG when no element matches), judges every step with the oracle, and writes the JSON
action log, a screenshot per step and the log. `replay_actions` re-runs such a log deterministically.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agents.app.driver import Driver, DriverError, Element
from agents.app.forms import submits
from agents.app.navigate import Navigator, find_page, origin_of
from agents.app.oracle import OracleSpec, Verdict, judge_signals, judge_text, oracle_spec
from agents.app.phrasing import control_of
from agents.app.propose import propose_action
from agents.app.s2r import Complete, Step, extract_steps, split_report
from agents.app.textmatch import core_words, coverage, similarity
from agents.app.utg import UTG, click_action, explore

log = logging.getLogger(__name__)

#: Keys a report may ask to press ("press Enter"); when no element is named so, the key is pressed.
KEYS = {"enter": "Enter", "return": "Enter", "escape": "Escape", "esc": "Escape", "tab": "Tab", "space": " "}
#: Below this similarity no element is the step's target.
MATCH_THRESHOLD = 0.5
ACTIONS_FILE = "actions.json"
LOG_FILE = "log.txt"


@dataclass
class AppReproResult:
    """The outcome of one reproduction (or replay)."""

    status: str  # "reproduced" | "not_reproduced" | "abstained" | "error"
    steps: list[dict[str, object]] = field(default_factory=list)
    actions: list[dict[str, object]] = field(default_factory=list)
    oracle: dict[str, object] | None = None
    screenshots: list[str] = field(default_factory=list)
    replay: str = ""
    seconds: float = 0.0
    reasons: list[str] = field(default_factory=list)
    extractor: str = "rules"
    log: str = ""
    #: The addresses of other hosts the browser was kept from (confinement), in order.
    blocked: list[str] = field(default_factory=list)
    #: The numbers (from 1) of the steps that were played or found done.
    reached: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        """The document `reprobot reproduce --app-url --json` prints and a runner finishes with."""
        return {
            "status": self.status,
            "steps": self.steps,
            "actions": self.actions,
            "oracle": self.oracle,
            "screenshots": self.screenshots,
            "replay": self.replay,
            "seconds": round(self.seconds, 2),
            "reasons": self.reasons,
            "extractor": self.extractor,
            "log": self.log,
            "blocked": self.blocked,
            "reached": self.reached,
        }


def match_element(step: Step | dict[str, object], elements: list[Element]) -> Element | None:
    """The element a step names: best text/label/id similarity, the part of the page it is in (the step's
    `within`) and the role as tie-breakers."""
    action = step.action if isinstance(step, Step) else str(step.get("action"))
    target = step.target if isinstance(step, Step) else str(step.get("target") or "")
    within = step.within if isinstance(step, Step) else str(step.get("within") or "")
    near = step.near if isinstance(step, Step) else str(step.get("near") or "")
    if not target:
        return None
    best, best_score = None, 0.0
    wanted = set(core_words(target))
    for element in elements:
        names = [element.text, element.label, element.id.replace("-", " ").replace("_", " ")]
        score = max(similarity(target, n) for n in names if n) if any(names) else 0.0
        if score >= MATCH_THRESHOLD and wanted:
            # "Edit Options" is the button "Edit Options alpha" more than the tab "Options": the element naming
            # more of the step's words wins a tie of containment.
            have = set(core_words(" ".join(n for n in names if n)))
            score += 0.08 * len(wanted & have) / len(wanted)
        if within and score >= MATCH_THRESHOLD:
            # "Sort from the price column's menu": of the look-alikes, the one in the part the report names.
            score += 0.3 * coverage(within, f"{element.context} {element.label}")
        if near and score >= MATCH_THRESHOLD:
            # "deactivate" next to Carol: of a list's look-alike controls, the one in Carol's row.
            score += 0.3 * coverage(near, element.context)
        wants_field = action == "input"
        if wants_field == element.editable:
            score += 0.05
        elif wants_field:
            score -= 0.3  # typing goes into a field, never onto a button that shares its name
        if score > best_score:
            best, best_score = element, score
    return best if best_score >= MATCH_THRESHOLD else None


def _resolve(action: dict[str, object], elements: list[Element]) -> Element | None:
    """The element a recorded action meant: the same locator, else the best match of its target."""
    locator = action.get("locator")
    for element in elements:
        if locator and element.locator == locator:
            return element
    return match_element(action, elements)


class _Run:
    """One run's bookkeeping: actions done, screenshots, log, the oracle."""

    def __init__(self, driver: Driver, out_dir: Path, spec: OracleSpec) -> None:
        self.driver, self.out_dir, self.spec = driver, out_dir, spec
        self.actions: list[dict[str, object]] = []
        self.screenshots: list[str] = []
        self.lines: list[str] = []
        self.initial_text = ""
        #: The page's text after the last action (the screen the next action starts from).
        self.last_text = ""
        self.verdict: Verdict | None = None
        self.reached: list[int] = []

    def note(self, line: str) -> None:
        """Add a line to the run's log (log.txt) and the logger."""
        log.info("%s", line)
        self.lines.append(line)

    async def begin(self) -> None:
        """Judge the first screen: its text is the baseline, its errors and wrong text already count."""
        self.initial_text = self.last_text = await self.driver.visible_text()
        await self.shot("start")
        self.verdict = judge_signals(self.driver.drain_signals(), self.spec, 0)
        if self.verdict is None:  # a bug the first screen already shows ("the home page says NaN")
            self.verdict = judge_text(self.initial_text, self.initial_text, self.spec, 0)

    async def shot(self, name: str) -> None:
        """A screenshot named `name`.png; a failed one is logged, never fatal."""
        path = self.out_dir / f"{name}.png"
        try:
            await self.driver.screenshot(path)
        except DriverError as exc:
            self.note(f"screenshot {name} failed: {exc}")
            return
        self.screenshots.append(str(path))

    async def do(self, action: dict[str, object], element: Element | None) -> None:
        """Act, record, screenshot, and judge the signals the action raised and the text it left."""
        before = self.last_text
        await self.driver.act(action, element)
        self.actions.append(action)
        n = len(self.actions)
        self.note(f"action {n}: {json.dumps(action)}")
        await self.shot(f"step-{n:02d}")
        self.verdict = judge_signals(self.driver.drain_signals(), self.spec, n)
        if self.verdict is None:
            typed = frozenset(str(a.get("input") or "").lower() for a in self.actions if a.get("action") == "input")
            self.last_text = await self.driver.visible_text()
            self.verdict = judge_text(self.last_text, self.initial_text, self.spec, n, typed, before)
        if self.verdict is not None:
            self.note(f"oracle fired after action {n}: {self.verdict.kind}: {self.verdict.message}")

    async def replay_all(self, actions: list[dict[str, object]]) -> None:
        """Restart and replay `actions` silently (exploration's reset): no record, signals dropped."""
        await self.driver.restart()
        for action in actions:
            await self.driver.act(action, _resolve(action, await self.driver.observe()))
        self.driver.drain_signals()


def _action_for(step: Step, element: Element | None) -> dict[str, object]:
    kind, value = step.action, step.input
    if kind == "input" and element is not None and not element.editable:
        # "put the lamp in the cart" names a button, not a field: what the user did was press it.
        kind = "click"
    option = _option(step.target, element) if kind == "click" else None
    if option is not None:
        kind, value = "input", option  # "select GBP": the dropdown that lists GBP, set to it
    action: dict[str, object] = {"action": kind, "target": step.target, "input": value}
    if element is not None:
        action["locator"] = element.locator
        action["role"] = element.role
    return action


def _option(name: str, element: Element | None) -> str | None:
    """The option of a native dropdown that `name` names ("GBP" in "USD | EUR | GBP"), else None."""
    if element is None or element.role != "combobox" or " | " not in element.text:
        return None
    options = element.text.split(" | ")
    best = max(options, key=lambda o: similarity(name, o))
    return best if similarity(name, best) >= 0.8 else None


@dataclass
class _Plan:
    """What every step of one run shares: the UI graph, the time budget, exploration depth, the model."""

    utg: UTG
    deadline: float
    depth: int
    complete: Complete | None = None


#: Steps that name no element: the driver does them as they are.
_TARGETLESS = ("back", "scroll", "resize", "restart", "key")


async def _play(run: _Run, steps: list[Step], plan: _Plan) -> list[str]:
    """Play the steps in order; returns the reasons for steps that could not be played, and which were reached."""
    reasons: list[str] = []
    for i, step in enumerate(steps, 1):
        if run.verdict is not None:
            break
        if time.monotonic() > plan.deadline:
            reasons.append(f"time budget spent before step {i}")
            break
        if await _play_step(run, reasons, i, step, plan):
            run.reached.append(i)
    missed = [i for i in range(1, len(steps) + 1) if i not in run.reached]
    if missed and run.verdict is None:
        reasons.append(f"reached {len(run.reached)} of {len(steps)} steps; not reached: {', '.join(map(str, missed))}")
    return reasons


async def _play_step(run: _Run, reasons: list[str], i: int, step: Step, plan: _Plan) -> bool:
    """One step, as many times as the report says; True when it was played (or found done already)."""
    if step.action in _TARGETLESS:
        return await _repeat(run, reasons, i, step, None)
    if step.action == "navigate":
        done = await _navigate(run, reasons, i, step, plan)
        if done is not None:
            return done
        if not step.target:
            run.note(f"step {i}: opening the app, which every run starts with")
            return True
        step = replace(step, action="click", opens=True)  # no page of that name: a control of that name
    if step.action == "input" and not step.target:
        field_ = _next_field(await run.driver.observe(), run.actions)
        if field_ is None:
            reasons.append(f"step {i} (input {step.input!r}): no field left to type it into")
            return False
        run.note(f"step {i}: {step.input!r} names no field: typed into the next one, {field_.describe()}")
        return await _repeat(run, reasons, i, step, field_)
    found = await _target_of(run, reasons, i, step, plan)
    if isinstance(found, bool):
        return found
    return await _repeat(run, reasons, i, step, found)


async def _target_of(run: _Run, reasons: list[str], i: int, step: Step, plan: _Plan) -> Element | bool:
    """The element a step acts on; True when the step was handled on the way (a key, a dropdown, the model's
    action, or opening the app), False when nothing matches even after exploring."""
    elements = await run.driver.observe()
    plan.utg.add_state(elements)
    element = _not_again(run, step, elements, match_element(step, elements))
    if element is None and step.action == "click" and step.target.lower() in KEYS:
        key: dict[str, object] = {"action": "key", "target": "", "input": KEYS[step.target.lower()]}
        return await _do_step(run, reasons, i, key, None)
    if element is None and step.opens and not run.actions:
        run.note(f"step {i} ({step.target!r}) is on no element of the first screen: taken as opening the app")
        return True
    if element is None and step.within:
        opened = await _open_control(run, reasons, i, step, elements)
        if opened is not None:
            return opened
    element = element or await _locate(run, step)
    just_filled = bool(run.actions) and run.actions[-1]["action"] == "input"
    if element is None and step.action == "click" and just_filled and submits(step.target):
        # "log in" on a form whose button says "Next": Enter in the field just filled sends its form.
        run.note(f"step {i}: no control is named {step.target!r}; submitting the form just filled")
        return await _do_step(run, reasons, i, {"action": "key", "target": step.target, "input": "Enter"}, None)
    if element is None:
        element = await _find_by_utg(run, step, plan.utg, plan.deadline, plan.depth)
    if element is None and plan.complete is not None and run.verdict is None:
        proposed = await propose_action(plan.complete, step, await run.driver.observe())
        if proposed is not None:
            run.note(f"step {i}: the model proposed {json.dumps(proposed[0])}")
            return await _do_step(run, reasons, i, proposed[0], proposed[1])
    if element is None:
        if run.verdict is None:
            reasons.append(f"step {i} ({step.action} {step.target!r}): no element matches, even after exploring")
            run.note(reasons[-1])
        return run.verdict is not None
    return element


def _not_again(run: _Run, step: Step, elements: list[Element], element: Element | None) -> Element | None:
    """A step naming another target than the step before does not press the same element again ("Options", then
    "Edit Options"): another element that matches is taken, else none (the UTG looks further)."""
    last = run.actions[-1] if run.actions else None
    if element is None or last is None or last.get("locator") != element.locator:
        return element
    if similarity(str(last.get("target") or ""), step.target) >= 0.99:
        return element  # the report repeats the step
    others = [e for e in elements if e.locator != element.locator]
    return match_element(step, others)


def _next_field(elements: list[Element], actions: list[dict[str, object]]) -> Element | None:
    """The text field after the one filled last (the first field when none was): where a value the report gives
    without naming its field goes ("log in to my account (dana / tulip)")."""
    fields = [e for e in elements if e.editable and e.role == "textbox"]
    filled = [a.get("locator") for a in actions if a.get("action") == "input"]
    last = next((k for k, e in enumerate(fields) if filled and e.locator == filled[-1]), None)
    if last is None:
        return fields[0] if fields else None
    return fields[last + 1] if last + 1 < len(fields) else None


async def _open_control(
    run: _Run, reasons: list[str], i: int, step: Step, elements: list[Element]
) -> Element | bool | None:
    """Open the control the step's target is in ("Large from the size dropdown"), then find the target.

    A native dropdown is set to the target's option in one action. None: no control of that name is here.
    """
    name, part = control_of(step.within)
    control_step = Step("click", name, within=part)
    control = match_element(control_step, elements) or await _locate(run, control_step)
    if control is None:
        return None
    if control.role == "combobox":
        option = _option(step.target, control) or step.target
        action: dict[str, object] = {"action": "input", "target": name, "input": option, "locator": control.locator}
        action["role"] = control.role
        return await _do_step(run, reasons, i, action, control)
    run.note(f"step {i}: opening {control.describe()}, which holds {step.target!r}")
    if not await _do_step(run, reasons, i, {**click_action(control), "via": "control"}, control):
        return None
    if run.verdict is not None:
        return True
    return match_element(step, await run.driver.observe())


async def _locate(run: _Run, step: Step) -> Element | None:
    """The element named by its accessible name (label, aria-labelledby, title), when the driver can look."""
    if not isinstance(run.driver, Navigator) or not step.target:
        return None
    element = await run.driver.locate(step.target, step.action == "input")
    if element is not None:
        run.note(f"{step.target!r} matched by accessible name: {element.describe()}")
    return element


async def _repeat(run: _Run, reasons: list[str], i: int, step: Step, element: Element | None) -> bool:
    """Do a step `step.repeat` times, stopping as soon as the oracle fires; each time on the element found anew."""
    ok = await _do_step(run, reasons, i, _action_for(step, element), element)
    times = 1
    while ok and run.verdict is None and times < step.repeat:
        again = element and _resolve(run.actions[-1], await run.driver.observe())
        if element is not None and again is None:
            reasons.append(f"step {i} ({step.target!r}): its element is gone after {times} time(s)")
            break
        ok = await _do_step(run, reasons, i, _action_for(step, again or None), again or None)
        times += 1
    if step.repeat > 1:
        run.note(f"step {i}: played {times} time(s) of at most {step.repeat}")
    return ok


async def _navigate(run: _Run, reasons: list[str], i: int, step: Step, plan: _Plan) -> bool | None:
    """A navigation step on the web; None when the driver cannot navigate or no page of the app has the name."""
    driver = run.driver
    if not isinstance(driver, Navigator):
        return None
    before = (await driver.location())["url"]
    destination = await find_page(driver, run.driver, step.target, await run.driver.observe(), plan.deadline)
    if destination is None:
        if (await driver.location())["url"] != before:
            await run.replay_all(run.actions)  # the link search left the page the steps had reached
        return None
    page = step.target or "the app's first page"
    if destination.path is None:
        run.note(f"step {i}: the page shown is {page!r} already ({destination.why})")
        return True
    run.note(f"step {i}: navigating to {page!r}: {destination.path} ({destination.why})")
    action: dict[str, object] = {"action": "navigate", "target": step.target, "input": destination.path}
    return await _do_step(run, reasons, i, action, None)


async def _do_step(run: _Run, reasons: list[str], i: int, action: dict[str, object], element: Element | None) -> bool:
    """One step's action; an element that cannot be acted on (covered, detached) costs the step, not the run."""
    try:
        await run.do(action, element)
        if action["action"] == "click" and element is not None and run.verdict is None:
            await _confirm(run, i, element)
    except DriverError as exc:
        reasons.append(f"step {i} ({action['action']} {action.get('target')!r}): {exc}")
        run.note(reasons[-1])
        return False
    return True


#: A control that, once pressed, asks to be pressed again: "you sure?", "Confirm", "Really delete?".
_CONFIRMATION = re.compile(r"\b(?:sure|confirm\w*|really)\b", re.I)


async def _confirm(run: _Run, i: int, pressed: Element) -> None:
    """Press again a control that turned into a confirmation when pressed ("deactivate" -> "you sure?").

    Users leave such a confirmation out of their steps: it is part of doing what the step says.
    """
    before = f"{pressed.text} {pressed.label}"
    if _CONFIRMATION.search(before):
        return
    now = next((e for e in await run.driver.observe() if e.locator == pressed.locator), None)
    if now is None or not _CONFIRMATION.search(f"{now.text} {now.label}"):
        return
    run.note(f"step {i}: {pressed.describe()} now asks {now.text or now.label!r}: confirming")
    await run.do({**click_action(now), "via": "confirm"}, now)


async def _find_by_utg(run: _Run, step: Step, utg: UTG, deadline: float, depth: int) -> Element | None:
    """Reach a screen where the step's target exists: a known UTG path first, else exploration."""
    driver = run.driver

    def goal(elements: list[Element]) -> Element | None:
        return match_element(step, elements)

    here = utg.add_state(await driver.observe())
    path = utg.path(here, goal)
    source = "cached UTG"
    if path is None:
        run.note(f"no element matches {step.target!r}: exploring the UI")
        before = list(run.actions)

        async def reset(prefix: list[dict[str, object]]) -> None:
            await run.replay_all([*before, *prefix])

        path = await explore(
            driver, utg, reset, goal, max_depth=depth, deadline=deadline, rank=_closeness(step), allowed=_stays(driver)
        )
        source = "exploration"
        if path is None:
            await run.replay_all(before)
            return None
    # Start the found path from a clean replay, so the signals it raises are judged like any step's.
    await run.replay_all(run.actions)
    run.note(f"UTG path to {step.target!r} ({source}): {len(path)} action(s)")
    for action in path:
        element = _resolve(action, await driver.observe())
        if element is None:
            run.note("the UTG path no longer matches the app")
            return None
        await run.do({**action, "via": "utg"}, element)
        if run.verdict is not None:
            return None
    return goal(await driver.observe())


def _closeness(step: Step) -> Callable[[Element], float]:
    """How promising a control is for reaching the step's target: its text close to the target or to the part
    the step names, and (a little) that it opens more controls, like a menu button."""

    def rank(element: Element) -> float:
        names = [n for n in (element.text, element.label) if n]
        near = max((similarity(step.target, n) for n in names), default=0.0)
        if step.within:
            near = max(near, 0.8 * coverage(step.within, " ".join([*names, element.context])))
        return near + (0.2 if element.popup else 0.0)

    return rank


def _stays(driver: Driver) -> Callable[[Element], bool] | None:
    """Exploration follows no link to another host (the web driver would block it anyway)."""
    app_url = getattr(driver, "app_url", "")
    if not isinstance(driver, Navigator) or not app_url:
        return None
    origin = origin_of(app_url)
    return lambda e: not e.href or origin_of(e.href) == origin


def _make_driver(driver: str | Driver, app_url: str) -> Driver:
    if not isinstance(driver, str):
        return driver
    if driver == "web":
        from agents.app.web import WebDriver

        return WebDriver(app_url)
    if driver == "android":
        from agents.app.android import AndroidDriver

        return AndroidDriver(app_url)
    raise ValueError(f"unknown driver {driver!r} (web or android)")


def replay_command(app_url: str, actions_file: Path, driver: str) -> str:
    """The command line that re-runs an action log."""
    extra = [] if driver == "web" else ["--driver", driver]
    return shlex.join(["reprobot", "replay", "--app-url", app_url, "--actions", str(actions_file), *extra, "--json"])


def _complete_from(model: object | None) -> Complete | None:
    if model is None:
        return None
    if callable(model):
        return model
    raise TypeError("model must be a complete(messages) -> str callable")


async def reproduce_app(
    issue_text: str,
    app_url: str,
    *,
    out_dir: Path,
    driver: str | Driver = "web",
    model: object | None = None,
    budget_seconds: float = 300.0,
    cache_dir: Path | None = None,
    explore_depth: int = 2,
) -> AppReproResult:
    """Reproduce the report on the app at `app_url`; write actions.json, screenshots and log.txt into `out_dir`."""
    started = time.monotonic()
    deadline = started + budget_seconds
    out_dir.mkdir(parents=True, exist_ok=True)
    report = split_report(issue_text)
    steps, extractor = await extract_steps(issue_text, _complete_from(model))
    spec = oracle_spec(report)
    drv = _make_driver(driver, app_url)
    driver_name = getattr(drv, "name", "web")
    actions_file = out_dir / ACTIONS_FILE
    result = AppReproResult(
        "error",
        steps=[s.to_json() for s in steps],
        replay=replay_command(app_url, actions_file, driver_name),
        extractor=extractor,
    )
    run = _Run(drv, out_dir, spec)
    run.note(f"{len(steps)} step(s) extracted ({extractor}); oracle text: {json.dumps(spec.to_json())}")
    try:
        await drv.start()
        try:
            utg = await asyncio.to_thread(UTG.load, cache_dir, await drv.app_version())
            await run.begin()
            plan = _Plan(utg, deadline, explore_depth, _complete_from(model))
            result.reasons = await _play(run, steps, plan)
            if cache_dir is not None:
                await asyncio.to_thread(utg.save, cache_dir)
        finally:
            await drv.close()
    except DriverError as exc:
        result.reasons.append(str(exc))
        run.note(f"driver error: {exc}")
        return _finish(result, run, started, actions_file, app_url, driver_name, "error")
    if run.verdict is not None:
        status = "reproduced"
    elif not steps:
        status = "abstained"
        result.reasons.append("the report has no steps the agent can follow, and the first screen shows no bug")
    else:
        status = "not_reproduced"
        all_ran = len(run.reached) == len(steps)
        result.reasons.append("every step ran and no oracle fired" if all_ran else "no oracle fired")
    return _finish(result, run, started, actions_file, app_url, driver_name, status)


def _finish(
    result: AppReproResult, run: _Run, started: float, actions_file: Path, app_url: str, driver: str, status: str
) -> AppReproResult:
    result.status = status
    result.actions = run.actions
    result.reached = run.reached
    blocked = getattr(run.driver, "blocked_requests", None)
    result.blocked = blocked() if callable(blocked) else []
    for url in result.blocked:
        run.note(f"blocked a request to another host: {url}")
    result.oracle = run.verdict.to_json() if run.verdict else None
    result.screenshots = run.screenshots
    result.seconds = time.monotonic() - started
    document: dict[str, Any] = {
        "app_url": app_url,
        "driver": driver,
        "oracle_spec": run.spec.to_json(),
        "actions": run.actions,
        "blocked": result.blocked,
    }
    actions_file.write_text(json.dumps(document, indent=2) + "\n")
    log_file = run.out_dir / LOG_FILE
    log_file.write_text("\n".join(run.lines) + "\n")
    result.log = str(log_file)
    return result


def load_actions(actions_file: Path) -> tuple[list[dict[str, object]], OracleSpec]:
    """The actions and oracle spec of an action log; ValueError says what is wrong with the file."""
    try:
        data = json.loads(actions_file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the action log {actions_file}: {exc}") from None
    if isinstance(data, list):
        data = {"actions": data}
    actions = data.get("actions") if isinstance(data, dict) else None
    if not isinstance(actions, list) or not all(isinstance(a, dict) and "action" in a for a in actions):
        raise ValueError(f"{actions_file}: `actions` must be a list of objects with an `action`")
    return actions, OracleSpec.from_json(data.get("oracle_spec"))


async def replay_actions(
    actions_file: Path, app_url: str, *, out_dir: Path, driver: str | Driver = "web"
) -> AppReproResult:
    """Re-run an action log on the app, judging each action with the oracle the log carries."""
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    drv = _make_driver(driver, app_url)
    driver_name = getattr(drv, "name", "web")
    result = AppReproResult("error", replay=replay_command(app_url, actions_file, driver_name))
    try:
        actions, spec = load_actions(actions_file)
    except ValueError as exc:
        result.reasons.append(str(exc))
        return result
    run = _Run(drv, out_dir, spec)
    out_file = out_dir / ACTIONS_FILE
    if out_file.resolve() == actions_file.resolve():
        out_file = out_dir / "replay-actions.json"  # never overwrite the log being replayed
    try:
        await drv.start()
        try:
            await run.begin()
            for i, action in enumerate(actions, 1):
                if run.verdict is not None:
                    break
                needs = action.get("action") in ("click", "long_click", "input")
                element = _resolve(action, await drv.observe()) if needs else None
                if needs and element is None:
                    result.reasons.append(f"action {i}: its element is gone ({action.get('target')!r})")
                    break
                await run.do({k: v for k, v in action.items() if k != "via"}, element)
        finally:
            await drv.close()
    except DriverError as exc:
        result.reasons.append(str(exc))
        return _finish(result, run, started, out_file, app_url, driver_name, "error")
    status = "reproduced" if run.verdict else "not_reproduced"
    return _finish(result, run, started, out_file, app_url, driver_name, status)
