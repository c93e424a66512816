"""The types the reproduction modules share: a reproduction, its checks and files, and the BRT candidate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

#: `Reproduction.actual` / `BrtCandidate.reported_actual` when the report shows no value for this observation
#: (its printed output is about other expressions): a wrong value is then any value but the expected one.
NOT_SHOWN: Final = ""

Symptom = Literal["wrong_value", "exception", "hang"]
#: How the report showed the observed value: print() shows str, a REPL shows repr, prose names the value.
ValueForm = Literal["str", "repr", "value"]


@dataclass(frozen=True)
class BrtCandidate:
    """A complete pytest file reproducing a report, where to put it, and what failure it should show."""

    path: str
    source: str
    symptom: Symptom
    expected: str | None
    test_name: str
    description: str
    #: The value the report shows for this candidate's own call, when it differs from the report's
    #: overall actual value (a multi-call session compared call by call); empty when it shows none.
    reported_actual: str | None = None
    #: The check cannot assert what the user expected (only that the run finishes or the result changed).
    weak: bool = False


@dataclass(frozen=True)
class ListedFile:
    """One file of a listing: path relative to the test's folder, its text, and whether it is executable."""

    path: str
    text: str
    executable: bool = False


@dataclass(frozen=True)
class Reproduction:
    """Statements that reproduce the report, and the expression whose value the report observed."""

    origin: str
    imports: tuple[str, ...]
    setup: tuple[str, ...]
    observed: str | None
    form: ValueForm
    program: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = field(default=())
    #: This observation's own expected and reported values, when the report pairs several calls with
    #: several values; None means the report's single expected/actual value applies, and an empty actual
    #: that the report shows no value of this observation (its printed output is about other expressions).
    expected: str | None = None
    actual: str | None = None
    #: Files the report lists that the reproduction reads; the test creates them first.
    files: tuple[ListedFile, ...] = ()
    #: The symptom of this reproduction when it differs from the report's (a step that printed a
    #: traceback and went on to return a value shows a wrong value, not an exception).
    symptom: Symptom | None = None


@dataclass(frozen=True)
class Check:
    """One way to turn a reproduction into a failing assertion."""

    lines: tuple[str, ...]
    symptom: Symptom
    summary: str
    fixture: str = ""
    weak: bool = False
    #: Setup statements the check runs itself (each inside its own assertion), left out of the setup.
    runs: tuple[str, ...] = ()
