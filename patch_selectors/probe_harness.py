"""Sandbox-side harness of the patch-correctness assessment (runs INSIDE the sandbox, stdlib + pytest only).

It is copied into the workspace's scratch folder and started with the environment's interpreter:

    python probe_harness.py CONFIG.json OUT.json -- PYTEST_ARGS...

CONFIG names the functions a patch touches (repo-relative file + qualified name) and which tests are the
report's reproduction (`seed_prefix`). While pytest runs, a profile hook records every call of those functions
per test: the arguments, the return value and the arguments after the call (in-place changes), as normalized
reprs. Calls made directly from the reproduction test are kept (deep copies) as seeds; after the session, each
seed's arguments are mutated in small type-preserving ways (an int one up or down, a list one element shorter…)
and the function is called on every variant with a short alarm. OUT receives plain JSON only, so the host
compares runs without ever loading an object the repo made.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib.util
import inspect
import io
import itertools
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

MAX_EVENTS_PER_TEST = 400
MAX_REPR = 300
#: Seeds per kind: calls of the patched functions themselves, and other calls the reproduction test makes into
#: the repo (constructors, setup helpers). Separate budgets, so setup calls cannot crowd out the call of interest.
MAX_SEEDS = 6
MAX_VARIANTS_PER_SEED = 24
CALL_SECONDS = 1.0
MAX_YIELDS = 1000
#: CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR: frames that return on every yield and resume later.
_RESUMABLE = 0x20 | 0x80 | 0x200
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def norm_repr(value: object) -> str:
    """repr with object addresses removed and cut to MAX_REPR, never raising."""
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ is the repo's problem, not the harness's
        text = f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"
    text = _ADDRESS.sub("", text)
    return text if len(text) <= MAX_REPR else text[:MAX_REPR] + "…"


def state_repr(value: object, depth: int = 1) -> str:
    """A repr that shows the state of plain objects: their public attributes, `depth` levels down.

    An object without its own `__repr__` prints as `<mod.Cls object>` once addresses are removed, so two
    results that hold different objects (other nodes, in another order) would compare equal. Containers are
    walked so their elements get the same treatment; anything with its own repr keeps it.
    """
    try:
        return _clip_repr(_state(value, depth, 0), 8 * MAX_REPR)
    except Exception as exc:  # a property or repr of the repo's may raise: the state is then unknown
        return f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"


def _clip_repr(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size] + "…"


def _state(value: object, depth: int, level: int) -> str:
    if level > 6:
        return "…"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_state(v, depth, level + 1) for v in list(value)[:64])
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, dict):
        items = [f"{norm_repr(k)}: {_state(v, depth, level + 1)}" for k, v in list(value.items())[:64]]
        # Equal plain dicts are equal whatever their insertion order (an OrderedDict is not): two fixes that
        # build the same mapping in another order agree on it, as a test's `==` would say.
        return "{" + ", ".join(sorted(items) if type(value) is dict else items) + "}"
    if isinstance(value, (set, frozenset)) and type(value) in (set, frozenset) and len(value) <= 64:
        # A set's repr follows its hash table, which can differ between equal sets built in another order.
        inner = ", ".join(sorted(_state(v, depth, level + 1) for v in value))
        text = f"{{{inner}}}" if inner else ""
        return (text or "set()") if type(value) is set else f"frozenset({text})"
    if type(value).__repr__ is object.__repr__ and hasattr(value, "__dict__"):
        name = type(value).__qualname__
        if depth <= 0:
            return f"<{name}>"
        fields = (f"{k}={_state(v, depth - 1, level + 1)}" for k, v in vars(value).items() if not k.startswith("_"))
        return f"{name}(" + ", ".join(fields) + ")"
    return norm_repr(value)


def _int_variants(x: int) -> list[int]:
    return [x + 1, x - 1]


def _variants(value: object) -> list[object]:
    """Small type-preserving mutations of one argument value (none for types we do not understand)."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return list(_int_variants(value))
    if isinstance(value, float):
        return [value + 1.0, value / 2]
    if isinstance(value, str):
        out: list[object] = []
        if value:
            # The first character repeated at the front too: a run the example had grows by one at either end.
            out += [value[:-1], value[1:], value + value[-1], value[0] + value]
        return out
    if isinstance(value, (list, tuple)):
        seq = list(value)
        cands: list[list[Any]] = []
        if seq:
            cands += [seq[:-1], seq[1:], [*seq, seq[-1]]]
            # The same shape with one element nudged: keeps sortedness-free inputs near the example.
            for i in (len(seq) - 1, 0):
                for v in _variants(seq[i])[:1]:
                    cands.append([*seq[:i], v, *seq[i + 1 :]])
            cands.append([seq[0], *seq])
        return [type(value)(c) if isinstance(value, tuple) else c for c in cands]
    if isinstance(value, dict) and value:
        last = list(value)[-1]
        return [{k: v for k, v in value.items() if k != last}]
    return []


def _sibling_values(values: list[Any]) -> list[tuple[int, int, object]]:
    """(i, j, v): a scalar argument i replaced by an element v of a sequence argument j of the same type.

    A value that occurs in the data (the first, middle and last element) takes the other paths of a search
    or lookup: `find(xs, 5)` with 5 absent also runs as `find(xs, xs[0])`, where the item is present.
    """
    out: list[tuple[int, int, object]] = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            continue
        for j, other in enumerate(values):
            if j == i or not isinstance(other, (list, tuple)) or not other:
                continue
            picks = [e for e in (other[0], other[len(other) // 2], other[-1]) if type(e) is type(value)]
            out += [(i, j, e) for e in dict.fromkeys(picks) if e != value]
    return out


def _neighbour_values(values: list[Any]) -> list[tuple[int, int, object]]:
    """(i, j, v): an int argument i moved just past int argument j, on either side (v = values[j] ± 1).

    Arguments that are compared with each other (`clamp(x, lo, hi)`, an index and a length) take other
    branches when one crosses the other: `clamp(5, 0, 10)` also runs as `clamp(11, 0, 10)` and `clamp(-1, 0, 10)`,
    but `percent(1, 5)` not as `percent(1, 0)`.
    """
    ints = [i for i, v in enumerate(values) if isinstance(v, int) and not isinstance(v, bool)]
    out: list[tuple[int, int, object]] = []
    for i in ints:
        for j in ints:
            if i != j:
                # Never a zero the argument did not have: it leaves the domain (a divisor, a size) rather
                # than crossing the other argument, and a fix rightly raises there where the bug returned.
                out += [(i, j, v) for v in (values[j] + 1, values[j] - 1) if v != values[i] and v != 0]
    return out


class _Timeout(BaseException):
    """Raised by the alarm inside a probe call (BaseException so the repo's `except Exception` cannot eat it)."""


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise _Timeout

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class Tracer:
    """Records calls of the target functions per test, and seeds from the reproduction test."""

    def __init__(
        self,
        targets: list[dict[str, str]],
        seed_prefix: str,
        root: str = "/workspace/",
        lines: dict[str, list[int]] | None = None,
    ) -> None:
        self.root = root
        #: file -> the patch's changed lines in this version of it: a call "hits" when one of them runs.
        self.lines = {f: set(ls) for f, ls in (lines or {}).items()}
        self.hit_any = False
        self.targets = {(t["file"], t["qualname"]) for t in targets}
        self.files = {t["file"] for t in targets}
        self.seed_prefix = seed_prefix
        self.events: dict[str, list[list[str]]] = {}
        self.outcomes: dict[str, str] = {}
        self.stdout: dict[str, str] = {}
        self.seeds: list[dict[str, Any]] = []
        self._codes: dict[object, str | None] = {}
        self._stack: list[tuple[object, int, str, tuple[str, ...], list[Any]]] = []
        self._resumable: dict[object, tuple[str, int]] = {}
        self._test = ""

    def _match(self, code: Any) -> str | None:
        hit = self._codes.get(code, False)
        if hit is not False:
            return hit  # type: ignore[return-value]
        name: str | None = None
        filename = code.co_filename.replace("\\", "/")
        for file in self.files:
            if filename == file or filename.endswith("/" + file):
                qual = getattr(code, "co_qualname", code.co_name)
                if (file, qual) in self.targets:
                    name = f"{file}::{qual}"
                break
        self._codes[code] = name
        return name

    def _entry(self, frame: Any) -> bool:
        """A call made directly by the reproduction test into the repo's code: the report's example."""
        caller = frame.f_back
        if caller is None or not self._test.startswith(self.seed_prefix):
            return False
        is_target = self._match(frame.f_code) is not None
        if sum(1 for s in self.seeds if s["target"] == is_target) >= MAX_SEEDS:
            return False
        callee = frame.f_code.co_filename
        return (
            caller.f_code.co_filename.endswith("/" + self.seed_prefix.split("::")[0])
            and callee.startswith(self.root)
            and not callee.endswith("/" + self.seed_prefix.split("::")[0])
            and "/.reprobot/" not in callee
        )

    def trace(self, frame: Any, event: str, arg: object) -> Any:
        """sys.settrace hook: calls are noted (and seeds taken); only target frames get line tracing."""
        if event != "call":
            return None
        self.profile(frame, event, arg)
        return self.local if self._stack and self._stack[-1][0] is frame else None

    def local(self, frame: Any, event: str, arg: object) -> Any:
        """Per-frame tracer of a target function: marks changed lines that run, and the return."""
        if event == "line":
            file = self._codes.get(frame.f_code)
            if isinstance(file, str) and frame.f_lineno in self.lines.get(file.split("::")[0], ()):
                self.hit_any = True
                if self._stack and self._stack[-1][0] is frame:
                    _, index, test, _a, _v = self._stack[-1]
                    if index >= 0:
                        self.events[test][index][5] = "1"
        elif event == "return":
            self.profile(frame, event, arg)
        return self.local

    def profile(self, frame: Any, event: str, arg: object) -> None:
        """Note calls and returns of target functions, seed from the test's own calls."""
        if event == "call":
            code = frame.f_code
            if self._entry(frame):
                nargs = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04)
                nargs += bool(code.co_flags & 0x08)
                seed_names = list(code.co_varnames[:nargs])
                self._seed(frame, code, seed_names, [frame.f_locals.get(n) for n in seed_names])
            name = self._match(code)
            if name is None:
                return
            if frame in self._resumable:
                # A generator (or coroutine) resuming: the same call goes on, it is not a new one.
                test, index = self._resumable[frame]
                self._stack.append((frame, index, test, (), []))
                return
            nargs = code.co_argcount + code.co_kwonlyargcount
            names = list(code.co_varnames[:nargs])
            if code.co_flags & 0x04:
                names.append(code.co_varnames[nargs])
                nargs += 1
            if code.co_flags & 0x08:
                names.append(code.co_varnames[nargs])
            values = [frame.f_locals.get(n) for n in names]
            args_repr = tuple(norm_repr(v) for v in values)
            events = self.events.setdefault(self._test, [])
            depth = sum(1 for s in self._stack if s[2] == self._test)
            if len(events) < MAX_EVENTS_PER_TEST:
                events.append([name, str(depth), "(" + ", ".join(args_repr) + ")", "", "", "0"])
                index = len(events) - 1
            else:
                index = -1
            if code.co_flags & _RESUMABLE:
                self._resumable[frame] = (self._test, index)
            self._stack.append((frame, index, self._test, args_repr, values))
        elif event == "return" and self._stack and self._stack[-1][0] is frame:
            _, index, test, _args, values = self._stack.pop()
            if index < 0:
                return
            row = self.events[test][index]
            if frame in self._resumable:
                # Every yield is a "return": the call's result is everything it yielded, in order.
                row[3] = (row[3] + " | " if row[3] else "yields: ") + norm_repr(arg)
                row[3] = row[3][-4 * MAX_REPR :]
            else:
                row[3] = norm_repr(arg)
                row[4] = "(" + ", ".join(norm_repr(v) for v in values) + ")"

    def _seed(self, frame: Any, code: Any, names: list[str], values: list[Any]) -> None:
        qual = getattr(code, "co_qualname", code.co_name)
        if "<locals>" in qual or "<lambda>" in qual:
            return
        try:
            copied = copy.deepcopy(values)
        except Exception:  # an argument that cannot be copied cannot be replayed either
            return
        self.seeds.append(
            {
                "module": frame.f_globals.get("__name__", ""),
                "qualname": qual,
                "names": names,
                "values": copied,
                # A call of a patched function is probed first: it is the behaviour the fixes change.
                "target": self._match(code) is not None,
                "varargs": bool(code.co_flags & 0x04),
                "varkw": bool(code.co_flags & 0x08),
                "posonly": code.co_posonlyargcount,
                "kwonly": code.co_kwonlyargcount,
                "argcount": code.co_argcount,
            }
        )


def _resolve(module: str, qualname: str) -> Callable[..., Any] | None:
    obj: Any = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if callable(obj) else None


def _call(seed: dict[str, Any], values: list[Any]) -> dict[str, str]:
    func = _resolve(seed["module"], seed["qualname"])
    if func is None:
        return {"outcome": "unresolved"}
    argc = seed["argcount"]
    positional = list(values[:argc])
    kwargs: dict[str, Any] = {}
    rest = values[argc:]
    kwonly_names = seed["names"][argc : argc + seed["kwonly"]]
    kwargs.update(dict(zip(kwonly_names, rest[: seed["kwonly"]], strict=False)))
    rest = rest[seed["kwonly"] :]
    if seed["varargs"] and rest:
        positional += list(rest[0] or ())
        rest = rest[1:]
    if seed["varkw"] and rest:
        kwargs.update(rest[0] or {})
    out = io.StringIO()
    try:
        with _alarm(CALL_SECONDS), contextlib.redirect_stdout(out):
            result = func(*positional, **kwargs)
            if inspect.isgenerator(result):
                # A generator's behaviour is what it yields: drain it (bounded) under the same alarm.
                result = list(itertools.islice(result, MAX_YIELDS))
    except _Timeout:
        return {"outcome": "timeout"}
    except RecursionError:
        return {"outcome": "raise", "exc": "RecursionError"}
    except Exception as exc:  # the outcome being measured: which exception a variant raises
        return {"outcome": "raise", "exc": type(exc).__name__}
    return {
        "outcome": "ok",
        "value": state_repr(result),
        "after": "(" + ", ".join(state_repr(v) for v in values) + ")",
        "stdout": out.getvalue()[-MAX_REPR:],
    }


def probe(seeds: list[dict[str, Any]], tracer: Tracer | None = None) -> list[dict[str, str]]:
    """Call each seed's function on its own arguments and on type-preserving variants of them.

    With a tracer, each row also says whether the patch's changed lines ran (`hit`).
    """
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    # Calls of the patched functions first (a stable sort keeps the test's order within each kind).
    for seed in sorted(seeds, key=lambda s: not s.get("target", False)):
        base = seed["values"]
        variants: list[tuple[str, list[Any]]] = [("seed", base)]
        for i, value in enumerate(base):
            for n, v in enumerate(_variants(value)):
                variants.append((f"arg{i}:{n}", [*base[:i], v, *base[i + 1 :]]))
        for i, j, v in _sibling_values(base):
            variants.append((f"arg{i}-from-arg{j}", [*base[:i], v, *base[i + 1 :]]))
        for i, j, v in _neighbour_values(base):
            variants.append((f"arg{i}-near-arg{j}", [*base[:i], v, *base[i + 1 :]]))
        for label, values in variants[: MAX_VARIANTS_PER_SEED + 1]:
            key = seed["module"] + "." + seed["qualname"] + "(" + ", ".join(norm_repr(v) for v in values) + ")"
            if key in seen and label != "seed":
                # Two variants can print alike (a list of objects without a repr, one element shorter at
                # either end) yet be different inputs: the label keeps them apart, the same in every run.
                key = f"{key} #{label}"
            if key in seen:
                continue
            seen.add(key)
            try:
                args = copy.deepcopy(values)
            except Exception:  # same reason as in Tracer._seed
                continue
            if tracer is not None:
                tracer._test = "<probe>"
                tracer._stack.clear()
                tracer.hit_any = False
                sys.settrace(tracer.trace)
            try:
                row = _call(seed, args)
            finally:
                sys.settrace(None)
            hit = "1" if tracer is not None and tracer.hit_any else "0"
            rows.append({"key": key, "mutated": label, "hit": hit, **row})
    return rows


def _module_of(file: str, root: str) -> Any:
    """The repo module loaded from `file` (repo-relative) during the session, or a fresh load of it."""
    for module in list(sys.modules.values()):
        path = (getattr(module, "__file__", None) or "").replace("\\", "/")
        if path and (path == root + file or path.endswith("/" + file)):
            return module
    spec = importlib.util.spec_from_file_location("_reprobot_example_module", os.path.join(root, file))
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        with _alarm(CALL_SECONDS * 5), contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    except (Exception, _Timeout):  # a module that cannot load alone has no runnable examples
        return None
    return module


def _example_namespace(example: dict[str, str], root: str) -> dict[str, Any] | None:
    """Where an example runs: its module's namespace (a documented one) or its session's setup (a reported one).

    None when that cannot be had (the module does not load alone, the session's setup raises).
    """
    if "setup" not in example:
        module = _module_of(example["file"], root)
        return None if module is None else dict(vars(module))
    namespace: dict[str, Any] = {"__name__": "__reprobot_report__"}
    try:
        with _alarm(CALL_SECONDS * 5), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(example["setup"], "<report>", "exec"), namespace)
    except (Exception, _Timeout):  # a session that cannot be replayed has no runnable example
        return None
    return namespace


def run_examples(examples: list[dict[str, str]], root: str, tracer: Tracer | None = None) -> list[dict[str, str]]:
    """Evaluate each example and compare its value with the one the documentation (or the report) gives.

    A documented example runs in its module's namespace; a report's example (it has `setup`) after the
    session's earlier lines. Rows: key, outcome (pass | fail | raise | timeout | unresolved), value, expected,
    hit (changed lines ran), origin. An example whose names are missing (it needs earlier lines of a session)
    is unresolved, not a failure.
    """
    rows: list[dict[str, str]] = []
    for example in examples:
        origin = "report" if "setup" in example else "documentation"
        key = f"{example.get('file') or 'the report'}: >>> {example['source']}"
        row: dict[str, str] = {"key": key, "expected": example["expected"], "hit": "0", "origin": origin}
        namespace = _example_namespace(example, root)
        try:
            expected = ast.literal_eval(example["expected"])
            code = compile(example["source"], "<example>", "eval")
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
            namespace = None
        if namespace is None:
            rows.append({**row, "outcome": "unresolved"})
            continue
        if tracer is not None:
            tracer._test = "<example>"
            tracer._stack.clear()
            tracer.hit_any = False
            sys.settrace(tracer.trace)
        try:
            with _alarm(CALL_SECONDS), contextlib.redirect_stdout(io.StringIO()):
                value = eval(code, namespace)
                if inspect.isgenerator(value):
                    value = list(itertools.islice(value, MAX_YIELDS))
                same = bool(value == expected)
            row.update(outcome="pass" if same else "fail", value=norm_repr(value))
        except _Timeout:
            row["outcome"] = "timeout"
        except NameError:
            row["outcome"] = "unresolved"
        except RecursionError:
            row.update(outcome="raise", exc="RecursionError")
        except Exception as exc:  # the outcome being measured: the example raises
            row.update(outcome="raise", exc=type(exc).__name__)
        finally:
            sys.settrace(None)
        row["hit"] = "1" if tracer is not None and tracer.hit_any else "0"
        rows.append(row)
    return rows


class Plugin:
    """pytest plugin: trace during each test's call phase, record outcomes and captured stdout."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def pytest_configure(self, config: Any) -> None:
        """Collect the reproduction test too when the suite's own paths (or testpaths) do not cover it."""
        brt = self.tracer.seed_prefix.split("::")[0]
        if not brt or not os.path.exists(brt):
            return
        target = os.path.abspath(brt)
        covered = any(
            target == os.path.abspath(a.split("::")[0]) or target.startswith(os.path.abspath(a.split("::")[0]) + os.sep)
            for a in config.args
        )
        if not covered:
            config.args.append(brt)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: Any) -> Iterator[None]:
        """Trace exactly the test function's call phase (not fixtures, not collection)."""
        self.tracer._test = item.nodeid
        self.tracer._stack.clear()
        self.tracer._resumable.clear()
        threading.settrace(self.tracer.trace)
        sys.settrace(self.tracer.trace)
        try:
            yield
        finally:
            sys.settrace(None)
            threading.settrace(None)

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Keep each test's outcome and what it printed."""
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.tracer.outcomes[report.nodeid] = report.outcome
            self.tracer.stdout[report.nodeid] = (report.capstdout or "")[-2000:]


def main(argv: list[str]) -> int:
    """Run pytest with the tracer, then probe the seeds, and write OUT as JSON."""
    config_path, out_path = argv[0], argv[1]
    pytest_args = argv[3:] if len(argv) > 2 and argv[2] == "--" else argv[2:]
    with open(config_path, encoding="utf-8") as fh:
        config = json.load(fh)
    tracer = Tracer(
        config["targets"], config.get("seed_prefix", ""), config.get("root", "/workspace/"), config.get("lines")
    )
    code = pytest.main(pytest_args, plugins=[Plugin(tracer)])
    sys.settrace(None)
    rows = probe(tracer.seeds, tracer) if config.get("probe", True) else []
    examples = run_examples(config.get("examples") or [], tracer.root, tracer)
    document = {
        "exit_code": int(code),
        "events": tracer.events,
        "outcomes": tracer.outcomes,
        "stdout": tracer.stdout,
        "probes": rows,
        "examples": examples,
        "seeds": len(tracer.seeds),
    }
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(document, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
