"""The game reproduction agent (seed 004, BugCraft, in our words): report -> steps -> macro actions -> oracle.

1. Knowledge base: the game's registered nodes, items, tools, entities and chat commands (dumped by the driver per
   game version), retrieved with BM25 for each step.
2. Step synthesizer (offline default, rule-based): the report's clauses (shared with the app agent's S2R split);
   chat commands quoted in them; the item, block or entity each names (a technical name, else the best knowledge
   match); the action its verb asks for (place, use, right-click, punch, spawn, look at the sky).
3. Action model: each step becomes macros (command, press, look, click, wait) computed from the live state.
4. Loop: plan attempts capped by iterations and wall time; a later attempt varies what players often word loosely
   (which mouse button "use" means).
5. Oracle: a crash whose signature matches the one pasted in the report (any crash when none is pasted), or the
   report's "actual" text in the chat where the "expected" was promised.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rank_bm25 import BM25Okapi

from agents.app import AppReproResult, Complete, OracleSpec, Verdict, clauses, judge_text, oracle_spec, split_report
from agents.game.actloop import ModelCall, model_loop
from agents.game.driver import GameCrash, GameDriver, GameDriverError, GameState, validate_macro
from agents.game.luacrash import parse_lua_crashes, same_signature

log = logging.getLogger(__name__)

ACTIONS_FILE = "actions.json"
LOG_FILE = "log.txt"
CRASH_FILE = "crash.txt"
_TOKEN = re.compile(r"[a-z0-9]+")
_TECH_NAME = re.compile(r"\b([a-z0-9_]+:[a-z0-9_]+)\b")
_COMMAND = re.compile(r"(?:^|[`\"“'\s(])(/[a-z_]\w*(?![\w/.])(?:[ \t]+[^`\"”'\n]*)?)", re.I)
#: Pasted logs and code blocks: evidence for the oracle, never steps.
_FENCED = re.compile(r"^(```+|~~~+)[^\n]*\n.*?^\1\s*$", re.M | re.S)
_LOG_LINE = re.compile(r"ERROR\[|WARNING\[|stack traceback|\.lua:\d+|^\s*\[C\]|Runtime error", re.I)
_PRONOUN = re.compile(r"\b(?:it|them|that|this one)\b", re.I)
#: Verbs -> step kinds. Order matters: "right-click" before "click".
_VERBS: tuple[tuple[str, str], ...] = (
    (r"right[- ]?click|feed|open|interact|tame|ride|rightclick", "rightclick"),
    (r"place|put (?:down|it)|build|set down|put\b", "place"),
    (r"spawn|summon", "spawn"),
    (r"punch|hit|attack|kill|left[- ]?click", "punch"),
    (r"use|swing|wave|click|activate|cast|zap", "use"),
    (r"dig|mine|break", "punch"),
)
#: "spawn a snail and punch it": two steps.
_AND_VERB = re.compile(r"\s+(?:and|then)\s+(?=(?:" + "|".join(p for p, _ in _VERBS) + r")\w*\b)", re.I)
#: Clauses that put a thing in hand without acting: "take the wand", "hold a torch".
_TAKE = re.compile(r"\b(?:take|get|grab|hold|wield|equip|select|pick|craft|have|using|with)\b", re.I)
_ESCAPES = re.compile(r"\x1b\([^)]*\)|\x1b[A-Za-z]")
_SKY = re.compile(r"\b(?:sky|air|nothing|up(?:wards)?)\b", re.I)
_GENERIC = {"the", "a", "an", "it", "with", "on", "at", "my", "of", "and", "then", "to", "in", "i", "block", "item"}


def tokens(text: str) -> list[str]:
    """Lower-case word tokens; `mod:item_name` also yields its parts."""
    return [t for t in _TOKEN.findall(text.lower().replace("_", " ")) if t not in _GENERIC]


class KnowledgeBase:
    """The game's registered things and commands, searchable by BM25 over name and description."""

    def __init__(self, dump: dict[str, Any]) -> None:
        self.version = str(dump.get("version") or "unknown")
        self.entries: list[dict[str, str]] = []
        for kind in ("nodes", "items", "tools", "commands"):
            for entry in dump.get(kind) or []:
                if isinstance(entry, dict) and entry.get("name"):
                    desc = _ESCAPES.sub("", str(entry.get("description") or ""))
                    kind_of = "entity" if desc == "entity" else kind.rstrip("s")
                    self.entries.append({"kind": kind_of, "name": str(entry["name"]), "description": desc})
        self.names = {e["name"] for e in self.entries}
        docs = [tokens(f"{e['name']} {e['description']}") or ["_"] for e in self.entries]
        self.docs = docs
        self.index = BM25Okapi(docs) if docs else None

    def search(self, text: str, kinds: tuple[str, ...] = (), k: int = 3) -> list[dict[str, str]]:
        """The best entries for `text`, of the given kinds."""
        query = tokens(text)
        if self.index is None or not query:
            return []
        scores = list(self.index.get_scores(query))
        if max(scores, default=0) <= 0:
            # A tiny knowledge base gives every term a zero IDF: fall back to counting shared words.
            wanted = set(query)
            scores = [len(wanted & set(doc)) for doc in self.docs]
        ranked = sorted(range(len(self.entries)), key=lambda i: -scores[i])
        out = []
        for i in ranked:
            if scores[i] <= 0:
                break
            if not kinds or self.entries[i]["kind"] in kinds:
                out.append({**self.entries[i], "score": f"{scores[i]:.2f}"})
            if len(out) == k:
                break
        return out

    def save(self, folder: Path) -> Path:
        """Cache the dump per game version (knowledge is the same for every report on that version)."""
        folder.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^\w.-]", "_", self.version)
        path = folder / f"knowledge-{safe}.json"
        path.write_text(json.dumps({"version": self.version, "entries": self.entries}))
        return path


@dataclass(frozen=True)
class GameStep:
    """One synthesized step: what to do (kind), with what (target), or a command line."""

    kind: str  # command | place | use | rightclick | punch | spawn
    target: str = ""
    text: str = ""
    sky: bool = False
    source: str = ""

    def to_json(self) -> dict[str, object]:
        """The step as JSON."""
        data: dict[str, object] = {"action": self.kind, "target": self.target, "input": self.text}
        if self.sky:
            data["sky"] = True
        data["source"] = self.source
        return data


def _verb_kind(clause: str) -> str | None:
    lowered = clause.lower()
    best: tuple[int, str] | None = None
    for pattern, kind in _VERBS:
        m = re.search(rf"\b(?:{pattern})(?:s|es|ed|d|ing)?\b", lowered)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), kind)
    return best[1] if best else None


def _target(clause: str, kind: str, kb: KnowledgeBase) -> str:
    for name in _TECH_NAME.findall(clause):
        if name in kb.names or not kb.names:
            return name
    kinds: tuple[str, ...] = ("entity",) if kind in ("rightclick", "punch", "spawn") else ()
    if kind == "place":
        kinds = ("node",)
    elif kind == "use":
        kinds = ("tool", "item", "node")
    hits = kb.search(clause, kinds) or (kb.search(clause, ("node", "tool", "item")) if kinds == ("entity",) else [])
    return hits[0]["name"] if hits else ""


def synthesize_steps(report_text: str, kb: KnowledgeBase) -> list[GameStep]:
    """Rule-based steps: chat commands as quoted, else the verb's action on the thing the clause names."""
    text = "\n".join(line for line in _FENCED.sub("", report_text).splitlines() if not _LOG_LINE.search(line))
    report = split_report(text)
    steps: list[GameStep] = []
    thing = ""  # the last thing named: "get a lamp post, place it"
    sky_next = False
    known = {e["name"] for e in kb.entries if e["kind"] == "command"}
    pieces = [p for c in clauses(report.steps_text) for p in _AND_VERB.split(c) if p.strip()]
    for whole in pieces:
        clause = whole
        found = [m for m in _COMMAND.finditer(clause) if not known or m[1].split()[0][1:].lower() in known]
        if found:
            steps.extend(GameStep("command", text=m[1].strip().rstrip(".,;"), source=whole) for m in found)
            # What follows the last command is a step of its own: "spawn one with `/x` and right-click it".
            clause = re.sub(r"^[`\"”'\s]*(?:and|then|,)?\s*", "", clause[found[-1].end() :])
            if _verb_kind(clause) is None:
                continue
        kind = _verb_kind(clause)
        named = _TECH_NAME.search(clause)
        if kind is None:
            # "look up at the sky": where the next step aims.
            if re.search(r"\b(?:look|aim|point|fac)\w*", clause, re.I):
                sky_next = bool(_SKY.search(clause))
            if _TAKE.search(clause) or named:
                thing = _target(clause, "use", kb) or thing
            continue
        target = thing if thing and _PRONOUN.search(clause) and not named else _target(clause, kind, kb)
        target = target or thing
        if not target and kind != "use":
            continue
        thing = target
        steps.append(GameStep(kind, target, sky=sky_next or bool(_SKY.search(clause)), source=whole))
        sky_next = False
    return steps


STEP_KINDS = ("command", "place", "use", "rightclick", "punch", "spawn")
_SYSTEM = (
    "You turn a player's game bug report into steps the game can be driven with. Reply with a JSON list only: "
    '[{"action": ..., "target": ..., "text": ..., "sky": false}]. action is one of '
    + ", ".join(STEP_KINDS)
    + "; target is a registered name from the knowledge given (for place, use, rightclick, punch, spawn); "
    "text is the whole chat command for command (starting with /); sky is true when the step aims at the sky."
)
_JSON_LIST = re.compile(r"\[.*\]", re.S)


def parse_llm_steps(reply: str, kb: KnowledgeBase) -> list[GameStep]:
    """The model's steps; ValueError says what is wrong (fed back to the model once)."""
    m = _JSON_LIST.search(reply)
    if m is None:
        raise ValueError("no JSON list in the reply")
    try:
        data = json.loads(m.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the JSON list does not parse: {exc}") from None
    steps = []
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict) or item.get("action") not in STEP_KINDS:
            raise ValueError(f"step {i}: action must be one of {', '.join(STEP_KINDS)}")
        kind, target, text = str(item["action"]), str(item.get("target") or ""), str(item.get("text") or "")
        if kind == "command" and not text.startswith("/"):
            raise ValueError(f"step {i}: a command step needs text starting with /")
        if kind != "command" and kb.names and target not in kb.names:
            raise ValueError(f"step {i}: {target!r} is not a registered name of this game")
        steps.append(GameStep(kind, target, text, sky=bool(item.get("sky")), source="llm"))
    if not steps:
        raise ValueError("the list has no steps")
    return steps


async def synthesize_llm(report_text: str, kb: KnowledgeBase, complete: Complete, attempts: int = 2) -> list[GameStep]:
    """Steps from the model, given the knowledge retrieved for the report; ValueError when every answer is bad."""
    knowledge = "\n".join(f"- {h['name']} ({h['kind']}): {h['description'][:80]}" for h in kb.search(report_text, k=15))
    messages = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": f"Game version: {kb.version}\nKnowledge:\n{knowledge}\n\nReport:\n{report_text}"},
    ]
    problem = "no answer"
    for _ in range(attempts):
        reply = complete(messages)
        text = await reply if inspect.isawaitable(reply) else reply
        try:
            return parse_llm_steps(str(text), kb)
        except ValueError as exc:
            problem = str(exc)
            messages += [
                {"role": "assistant", "content": str(text)},
                {"role": "user", "content": f"That answer is invalid: {problem}. Reply with the corrected JSON list."},
            ]
    raise ValueError(problem)


def report_signature(report_text: str) -> dict[str, Any] | None:
    """The signature of the crash the player pasted, if any."""
    crashes = parse_lua_crashes(report_text)
    return crashes[0].signature() if crashes else None


# --- action model ----------------------------------------------------------------------------------------------

#: The pitch that points at the ground a block or two ahead, and the one that points at the sky.
GROUND_PITCH, SKY_PITCH = 1.1, -1.3


class ActionModel:
    """Default action model: steps -> macros from the live state (hotbar slot, where to look, which button)."""

    def __init__(self, swap_use: bool = False) -> None:
        self.swap_use = swap_use

    def macros(self, step: GameStep, state: GameState) -> list[dict[str, Any]]:
        """The macros for one step; each is validated (an invalid one is dropped with a log line)."""
        out: list[dict[str, Any]] = []
        if step.kind == "command":
            text = step.text
            if text.split()[0] == "/spawnentity" and len(text.split()) == 2 and state.position:
                spot, yaw, pitch = _in_front(state)
                text += f" {spot[0]:g},{spot[1]:g},{spot[2]:g}"
                out += [{"action": "look", "yaw": round(yaw, 3), "pitch": round(pitch, 3)}]
            out.insert(0, {"action": "command", "text": text})
        elif step.kind == "spawn" and state.position:
            spot, yaw, pitch = _in_front(state)
            out += [
                {"action": "command", "text": f"/spawnentity {step.target} {spot[0]:g},{spot[1]:g},{spot[2]:g}"},
                {"action": "look", "yaw": round(yaw, 3), "pitch": round(pitch, 3)},
            ]
        elif step.kind in ("rightclick", "punch"):
            button = "right" if step.kind == "rightclick" else "left"
            near = [o for o in state.nearby if o.get("name") == step.target]
            if near and state.position:
                yaw, pitch = _look_at(state, near[0]["pos"])
                out += [
                    {"action": "look", "yaw": round(yaw, 3), "pitch": round(pitch, 3)},
                    {"action": "click", "button": button},
                ]
            elif (
                state.position
                and ":" in step.target
                and not _is_item(step.target, state)
                and step.target not in state.pointed.get("name", "")
            ):
                # Not around yet: spawn it in front; the next pass (with fresh state) aims and clicks.
                spot, _, _ = _in_front(state)
                out.append(
                    {"action": "command", "text": f"/spawnentity {step.target} {spot[0]:g},{spot[1]:g},{spot[2]:g}"}
                )
            else:
                out.append({"action": "click", "button": button})
        elif step.kind in ("place", "use"):
            if step.target:
                out += self._wield(step.target, state)
            pitch = SKY_PITCH if step.sky else GROUND_PITCH
            out.append({"action": "look", "yaw": round(state.yaw, 3), "pitch": pitch})
            left = step.kind == "use"
            if self.swap_use and step.kind == "use":
                left = not left
            out.append({"action": "click", "button": "left" if left else "right"})
        valid = []
        for action in out:
            try:
                valid.append(validate_macro(action))
            except ValueError as exc:
                log.info("dropped an invalid macro %s: %s", action, exc)
        return valid

    @staticmethod
    def _wield(item: str, state: GameState) -> list[dict[str, Any]]:
        if state.wielded.split(" ")[0] == item:
            return []
        held = [slot for slot, stack in state.inventory.items() if stack.split(" ")[0] == item and slot <= 8]
        slot = held[0] if held else next((s for s in range(1, 9) if s not in state.inventory), 1)
        give = [] if held else [{"action": "command", "text": f"/giveme {item}"}]
        return [*give, {"action": "press", "key": str(slot)}]


def _is_item(name: str, state: GameState) -> bool:
    return any(stack.split(" ")[0] == name for stack in state.inventory.values())


def _look_at(state: GameState, target: Any) -> tuple[float, float]:
    from agents.game.minetest import look_at

    assert state.position is not None
    return look_at(state.position, (float(target[0]), float(target[1]), float(target[2])), state.eye_height)


def _in_front(state: GameState) -> tuple[tuple[float, float, float], float, float]:
    """A spot two nodes ahead of the player on the ground, and the look that points at it."""
    assert state.position is not None
    x, y, z = state.position
    dx, dz = -math.sin(state.yaw), math.cos(state.yaw)
    # On the ground (where a physical entity comes to rest), so the look still points at it after it lands.
    spot = (round(x + 2 * dx), round(y + 0.3, 1), round(z + 2 * dz))
    yaw, pitch = _look_at(state, spot)
    return (float(spot[0]), float(spot[1]), float(spot[2])), yaw, pitch


# --- the run ---------------------------------------------------------------------------------------------------


@dataclass
class GameReproResult(AppReproResult):
    """An app reproduction result plus the loop's iterations and the crash it ended on."""

    iterations: int = 0
    crash: dict[str, Any] | None = None
    knowledge: list[dict[str, str]] = field(default_factory=list)
    #: With a model driving the actions: calls, tokens and cost of the loop (None on the offline path).
    model_usage: dict[str, Any] | None = None

    def to_json(self) -> dict[str, object]:
        """The document `reprobot reproduce --game … --json` prints."""
        doc = {**super().to_json(), "iterations": self.iterations, "crash": self.crash, "knowledge": self.knowledge}
        if self.model_usage is not None:
            doc["model_usage"] = self.model_usage
        return doc


@dataclass
class _Judge:
    spec: OracleSpec
    signature: dict[str, Any] | None
    initial_chat: str = ""

    def crash(self, crashes: list[GameCrash], step: int) -> Verdict | None:
        for crash in crashes:
            if self.signature is None or same_signature(crash.signature, self.signature):
                how = "matches the report's crash" if self.signature else "the report pasted no crash to compare"
                return Verdict("crash", f"{crash.kind}: {crash.message} ({how})", step, {"crash": crash.to_json()})
        return None

    def text(self, state: GameState, step: int) -> Verdict | None:
        return judge_text("\n".join(state.chat), self.initial_chat, self.spec, step)


#: After the last macro, how long the oracle keeps looking (and how often) before a play counts as not reproduced.
LINGER_SECONDS = 4.0
LINGER_POLL_SECONDS = 0.5


class _Session:
    """One play of macros on a fresh game session: record, screenshot and judge each."""

    def __init__(self, driver: GameDriver, out_dir: Path, judge: _Judge, prefix: str, lines: list[str]) -> None:
        self.driver, self.out_dir, self.judge, self.prefix, self.lines = driver, out_dir, judge, prefix, lines
        self.actions: list[dict[str, Any]] = []
        self.screenshots: list[str] = []
        self.verdict: Verdict | None = None

    def note(self, line: str) -> None:
        log.info("%s", line)
        self.lines.append(line)

    async def begin(self) -> GameState:
        state = await self.driver.state()
        self.judge.initial_chat = "\n".join(state.chat)
        await self.shot("start")
        return state

    async def shot(self, name: str) -> None:
        path = self.out_dir / f"{self.prefix}{name}.png"
        if await self.driver.screenshot(path):
            self.screenshots.append(str(path))

    async def do(self, action: dict[str, Any]) -> GameState:
        await self.driver.act(action)
        self.actions.append(action)
        n = len(self.actions)
        self.note(f"{self.prefix}action {n}: {json.dumps(action)}")
        await self.shot(f"step-{n:02d}")
        return await self._judge()

    async def linger(self, seconds: float = LINGER_SECONDS) -> None:
        """Keep judging for a while after the last macro, recording nothing: on a loaded machine a command's
        answer or a crash reaches the chat or the log after the macro's settle time. The first play and a
        replay end the same way, so a replay does not miss what the play saw a moment later."""
        deadline = time.monotonic() + seconds
        while self.verdict is None and time.monotonic() < deadline:
            await asyncio.sleep(LINGER_POLL_SECONDS)
            await self._judge()

    async def _judge(self) -> GameState:
        n = len(self.actions)
        state = await self.driver.state()
        self.verdict = self.judge.crash(await self.driver.crashes(), n) or self.judge.text(state, n)
        if self.verdict is not None:
            self.note(f"oracle fired after action {n}: {self.verdict.kind}: {self.verdict.message}")
        return state


def replay_command(game: str, repo: str, actions_file: Path) -> str:
    """The command line that re-runs a macro log."""
    return shlex.join(["reprobot", "replay", "--game", game, "--repo", repo, "--actions", str(actions_file), "--json"])


async def reproduce_game(
    issue_text: str,
    driver: GameDriver,
    *,
    out_dir: Path,
    repo_label: str = ".",
    max_iterations: int = 2,
    budget_seconds: float = 300.0,
    signature_of: Callable[[str], dict[str, Any] | None] | None = None,
    model: Complete | None = None,
    action_model: ModelCall | None = None,
    model_turns: int = 8,
    context_turns: int = 3,
    model_images: bool = False,
) -> GameReproResult:
    """Reproduce a game bug report; write actions.json, screenshots, crash.txt and log.txt into `out_dir`.

    With `action_model`, the first iteration is played by the model-driven loop (actloop.model_loop: at most
    `model_turns` turns, the last `context_turns` in context, the screenshot as an image when `model_images`);
    later iterations are the rules'. Without it the rule-based action model plays every iteration.
    """
    started = time.monotonic()
    deadline = started + budget_seconds
    out_dir.mkdir(parents=True, exist_ok=True)
    report = split_report(issue_text)
    # The game's own crash format decides the signature: Lua errors by default, a callable for others (Minecraft).
    judge = _Judge(oracle_spec(report), (signature_of or report_signature)(issue_text))
    lines: list[str] = []
    result = GameReproResult("error", replay=replay_command(driver.name, repo_label, out_dir / ACTIONS_FILE))
    session: _Session | None = None
    steps: list[GameStep] = []
    for iteration in range(1, max_iterations + 1):
        if time.monotonic() > deadline:
            result.reasons.append(f"time budget spent before iteration {iteration}")
            break
        result.iterations = iteration
        # The rules' second attempt swaps "use"; with a model, the rules' first attempt is iteration 2.
        rules_round = iteration - 1 if action_model is not None else iteration
        actor = ActionModel(swap_use=rules_round % 2 == 0)
        try:
            await driver.start()
            try:
                if iteration == 1:
                    steps = await _plan(issue_text, driver, model, judge, result, lines)
                    if not steps:
                        result.reasons.append("the report has no step the agent can turn into game actions")
                        break
                session = _Session(driver, out_dir, judge, f"it{iteration}-", lines)
                state = await session.begin()
                if action_model is not None and iteration == 1:
                    await _model_iteration(
                        action_model,
                        session,
                        state,
                        issue_text,
                        steps,
                        result,
                        deadline,
                        model_turns=model_turns,
                        context_turns=context_turns,
                        images=model_images,
                    )
                else:
                    await _play_steps(session, state, steps, actor, deadline)
                await session.linger()
            finally:
                await driver.stop()
        except GameDriverError as exc:
            result.reasons.append(str(exc))
            lines.append(f"driver error: {exc}")
            return _finish(result, session, out_dir, lines, started, "error")
        if session.verdict is not None:
            break
        lines.append(f"iteration {iteration}: every step ran and no oracle fired")
    status = _final_status(result, session, steps)
    return _finish(result, session, out_dir, lines, started, status, judge=judge, game=driver.name)


async def _plan(
    issue_text: str,
    driver: GameDriver,
    model: Complete | None,
    judge: _Judge,
    result: GameReproResult,
    lines: list[str],
) -> list[GameStep]:
    """The report's steps, from what the running game knows; recorded in the result and the log."""
    kb = KnowledgeBase(await driver.knowledge())
    steps, result.extractor = await _synthesize(issue_text, kb, model, lines)
    result.steps = [s.to_json() for s in steps]
    result.knowledge = [h for s in steps for h in kb.search(s.source, k=2)][:8]
    lines.append(
        f"{len(steps)} step(s) synthesized ({result.extractor}, {len(kb.entries)} known things, "
        f"{kb.version}); "
        f"crash signature wanted: {json.dumps(judge.signature)}; "
        f"oracle text: {json.dumps(judge.spec.to_json())}"
    )
    return steps


async def _play_steps(
    session: _Session, state: GameState, steps: list[GameStep], actor: ActionModel, deadline: float
) -> None:
    """Play each step's macros until an oracle fires or the time is up."""
    for step in steps:
        # Two passes at most: an interaction whose target is not around spawns it first, then aims.
        for _pass in range(2):
            if session.verdict is not None or time.monotonic() > deadline:
                break
            macros = actor.macros(step, state)
            for action in macros:
                state = await session.do(action)
                if session.verdict is not None:
                    break
            if step.kind not in ("rightclick", "punch") or any(m["action"] == "click" for m in macros):
                break


def _final_status(result: GameReproResult, session: _Session | None, steps: list[GameStep]) -> str:
    """reproduced, abstained (no steps) or not_reproduced (then the reason is added)."""
    if session is not None and session.verdict is not None:
        return "reproduced"
    if not steps:
        return "abstained"
    result.reasons.append(f"{result.iterations} iteration(s) ran and no oracle fired")
    return "not_reproduced"


async def _model_iteration(
    model: ModelCall,
    session: _Session,
    state: GameState,
    issue_text: str,
    steps: list[GameStep],
    result: GameReproResult,
    deadline: float,
    *,
    model_turns: int,
    context_turns: int,
    images: bool,
) -> None:
    """One iteration played by the model; its usage is recorded in the result."""
    planned = json.dumps([s.to_json() for s in steps])
    goal = f"Report:\n{issue_text[:2000]}\n\nSteps synthesized from it: {planned}"
    outcome = await model_loop(
        model,
        session,
        state,
        goal,
        max_turns=model_turns,
        context_turns=context_turns,
        deadline=deadline,
        images=images,
        screenshot=lambda: Path(session.screenshots[-1]) if session.screenshots else None,
        note=session.note,
    )
    result.model_usage = {**outcome.usage.to_json(), "turns": outcome.turns, "dropped_actions": outcome.dropped}
    session.note(
        f"model loop: {outcome.turns} turn(s), stopped by {outcome.stopped}; {outcome.dropped} action(s) dropped; "
        f"{outcome.usage.prompt_tokens} prompt + {outcome.usage.completion_tokens} completion tokens"
    )


async def _synthesize(
    issue_text: str, kb: KnowledgeBase, model: Complete | None, lines: list[str]
) -> tuple[list[GameStep], str]:
    """The model's steps when there is a model and it answers well, else the rules'."""
    if model is not None:
        try:
            return await synthesize_llm(issue_text, kb, model), "llm"
        except ValueError as exc:
            lines.append(f"the model's steps were unusable ({exc}); the rules synthesize them")
    return synthesize_steps(issue_text, kb), "rules"


def _finish(
    result: GameReproResult,
    session: _Session | None,
    out_dir: Path,
    lines: list[str],
    started: float,
    status: str,
    *,
    judge: _Judge | None = None,
    game: str = "minetest",
    actions_name: str = ACTIONS_FILE,
) -> GameReproResult:
    result.status = status
    if session is not None:
        result.actions = session.actions
        result.screenshots = session.screenshots
        if session.verdict is not None:
            result.oracle = session.verdict.to_json()
            crash = session.verdict.evidence.get("crash")
            if isinstance(crash, dict):
                result.crash = crash
                (out_dir / CRASH_FILE).write_text(str(crash.get("text") or crash.get("message")) + "\n")
    result.seconds = time.monotonic() - started
    if judge is not None:
        document = {
            "game": game,
            "oracle_spec": judge.spec.to_json(),
            "crash_signature": judge.signature,
            "actions": result.actions,
        }
        (out_dir / actions_name).write_text(json.dumps(document, indent=2) + "\n")
    (out_dir / LOG_FILE).write_text("\n".join(lines) + "\n")
    result.log = str(out_dir / LOG_FILE)
    return result


def load_macros(actions_file: Path) -> tuple[list[dict[str, Any]], _Judge]:
    """The macros and the oracle of a macro log; ValueError says what is wrong with the file."""
    try:
        data = json.loads(actions_file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the macro log {actions_file}: {exc}") from None
    actions = data.get("actions") if isinstance(data, dict) else None
    if not isinstance(actions, list):
        raise ValueError(f"{actions_file}: `actions` must be a list of macro actions")
    try:
        macros = [validate_macro(a) for a in actions]
    except ValueError as exc:
        raise ValueError(f"{actions_file}: {exc}") from None
    signature = data.get("crash_signature")
    return macros, _Judge(
        OracleSpec.from_json(data.get("oracle_spec")), signature if isinstance(signature, dict) else None
    )


async def replay_game(
    actions_file: Path, driver: GameDriver, *, out_dir: Path, repo_label: str = "."
) -> GameReproResult:
    """Re-run a macro log on a fresh session, judging each macro with the oracle the log carries."""
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    result = GameReproResult("error", replay=replay_command(driver.name, repo_label, actions_file), iterations=1)
    lines: list[str] = []
    try:
        macros, judge = load_macros(actions_file)
    except ValueError as exc:
        result.reasons.append(str(exc))
        return result
    session = _Session(driver, out_dir, judge, "replay-", lines)
    try:
        await driver.start()
        try:
            await session.begin()
            for action in macros:
                await session.do(action)
                if session.verdict is not None:
                    break
            await session.linger()
        finally:
            await driver.stop()
    except GameDriverError as exc:
        result.reasons.append(str(exc))
        return _finish(result, session, out_dir, lines, started, "error")
    status = "reproduced" if session.verdict else "not_reproduced"
    return _finish(
        result,
        session,
        out_dir,
        lines,
        started,
        status,
        judge=judge,
        game=driver.name,
        actions_name="replay-actions.json",
    )
