"""Seed 001's evaluation metrics: success@k, selector precision/recall, and BRT signals as fix predictors."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# Terms (seed §4.2.1): a plausible fix passes the oracle BRT; a plausible BRT fails on the buggy code and
# passes on the oracle fix; a candidate BRT fails on the buggy code and passes on the generated fix.


@dataclass(frozen=True)
class TrajectoryOutcome:
    """What one trajectory's patch achieved, judged against the case's oracle.

    ``llm_reviewed_candidate_brt`` (an LLM reviewer agrees the candidate BRT's failure is the reported bug)
    and ``llm_judged_plausible_brt`` (an LLM judge, shown the oracle patch, calls the BRT plausible) are None
    when that judge was not run; a None counts as the signal being absent.
    """

    plausible_fix: bool
    plausible_brt: bool
    candidate_brt: bool
    has_test: bool
    llm_reviewed_candidate_brt: bool | None = None
    llm_judged_plausible_brt: bool | None = None
    finished: bool = True
    patch_id: str = ""

    @property
    def plausible_both(self) -> bool:
        """A plausible fix and a plausible BRT in the same patch."""
        return self.plausible_fix and self.plausible_brt


Criterion = Callable[[TrajectoryOutcome], bool]

#: The success criteria of seed §4.2.1, by metric name.
CRITERIA: dict[str, Criterion] = {
    "pass": lambda o: o.plausible_fix,
    "plausibleBRT": lambda o: o.plausible_brt,
    "candidateBRT": lambda o: o.candidate_brt,
    "pass&plausibleBRT": lambda o: o.plausible_both,
}


def estimate_pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(at least one of k samples succeeds) from n samples with c successes.

    Computes ``1 - C(n-c, k) / C(n, k)`` as ``1 - prod_{i=n-c+1..n} (1 - k/i)``, which never forms the huge
    binomials. Raises ValueError unless ``0 <= c <= n`` and ``1 <= k <= n`` (callers decide how to treat
    cases with fewer than k samples; see ``clamp_k`` in :func:`success_at_k`).
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if c == 0:
        return 0.0
    if n - c < k:
        return 1.0  # every k-subset must contain a success
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def success_at_k(
    cases: Iterable[Sequence[TrajectoryOutcome]], k: int, criterion: Criterion, *, clamp_k: bool = False
) -> float:
    """Mean over cases of the unbiased success@k estimate under ``criterion``.

    A case with fewer than k trajectories raises ValueError, unless ``clamp_k`` is set: then it is scored with
    k = its trajectory count (an empty case scores 0). An empty case list scores 0.
    """
    scores: list[float] = []
    for outcomes in cases:
        n = len(outcomes)
        c = sum(1 for o in outcomes if criterion(o))
        kk = min(k, n) if clamp_k else k
        scores.append(0.0 if n == 0 and clamp_k else estimate_pass_at_k(n, c, kk))
    return sum(scores) / len(scores) if scores else 0.0


def pass_at_k(cases: Iterable[Sequence[TrajectoryOutcome]], k: int, *, clamp_k: bool = False) -> float:
    """pass@k: some sampled trajectory has a plausible fix."""
    return success_at_k(cases, k, CRITERIA["pass"], clamp_k=clamp_k)


def plausible_brt_at_k(cases: Iterable[Sequence[TrajectoryOutcome]], k: int, *, clamp_k: bool = False) -> float:
    """plausibleBRT@k: some sampled trajectory has a plausible BRT."""
    return success_at_k(cases, k, CRITERIA["plausibleBRT"], clamp_k=clamp_k)


def candidate_brt_at_k(cases: Iterable[Sequence[TrajectoryOutcome]], k: int, *, clamp_k: bool = False) -> float:
    """candidateBRT@k: some sampled trajectory has a candidate BRT."""
    return success_at_k(cases, k, CRITERIA["candidateBRT"], clamp_k=clamp_k)


def pass_and_plausible_brt_at_k(
    cases: Iterable[Sequence[TrajectoryOutcome]], k: int, *, clamp_k: bool = False
) -> float:
    """(pass & plausibleBRT)@k: some sampled trajectory has a plausible fix and a plausible BRT together."""
    return success_at_k(cases, k, CRITERIA["pass&plausibleBRT"], clamp_k=clamp_k)


def success_table(
    cases: Sequence[Sequence[TrajectoryOutcome]], ks: Iterable[int], *, clamp_k: bool = False
) -> dict[str, dict[int, float]]:
    """All four success@k metrics for each k: ``{metric: {k: value}}``."""
    ks = list(ks)
    return {name: {k: success_at_k(cases, k, crit, clamp_k=clamp_k) for k in ks} for name, crit in CRITERIA.items()}


@dataclass(frozen=True)
class SelectionCase:
    """One bug: outcomes of all its generated patches and the selected patch's id (None = abstained)."""

    outcomes: Sequence[TrajectoryOutcome]
    selected_id: str | None

    def selected(self) -> TrajectoryOutcome | None:
        """The selected patch's outcome; KeyError if the id is not among the outcomes."""
        if self.selected_id is None:
            return None
        for o in self.outcomes:
            if o.patch_id == self.selected_id:
                return o
        raise KeyError(f"selected patch {self.selected_id!r} is not among the case's outcomes")


@dataclass(frozen=True)
class PrecisionRecall:
    """Selector precision/recall with the counts behind them (ratios are 0.0 when the denominator is 0)."""

    precision: float
    recall: float
    selected: int  # cases where a patch was selected
    correct: int  # cases whose selected patch meets the criterion
    eligible: int  # cases with at least one generated patch meeting the criterion
    cases: int


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def selector_precision_recall(cases: Iterable[SelectionCase], criterion: Criterion) -> PrecisionRecall:
    """Seed §4.2.3: precision = correct selections / selections made (abstentions are not selections);
    recall = cases with a correct selection / cases where any generated patch meets the criterion."""
    selected = correct = eligible = total = 0
    for case in cases:
        total += 1
        chosen = case.selected()
        eligible += any(criterion(o) for o in case.outcomes)
        if chosen is not None:
            selected += 1
            correct += criterion(chosen)
    return PrecisionRecall(_ratio(correct, selected), _ratio(correct, eligible), selected, correct, eligible, total)


def selector_table(cases: Sequence[SelectionCase]) -> dict[str, PrecisionRecall]:
    """Seed Table 6 row for one selector: precision/recall on plausible fix, plausible BRT, and both."""
    return {
        "plausible fix": selector_precision_recall(cases, CRITERIA["pass"]),
        "plausible BRT": selector_precision_recall(cases, CRITERIA["plausibleBRT"]),
        "both": selector_precision_recall(cases, CRITERIA["pass&plausibleBRT"]),
    }


#: BRT signals of seed Tables 4-5, from weakest to strongest; "*" marks signals that need the oracle.
SIGNALS: dict[str, Criterion] = {
    "no filter": lambda o: True,
    "no test": lambda o: not o.has_test,
    "test": lambda o: o.has_test,
    "candidate BRT": lambda o: o.candidate_brt,
    "LLM-reviewed candidate BRT": lambda o: o.candidate_brt and bool(o.llm_reviewed_candidate_brt),
    "plausible BRT*": lambda o: o.plausible_brt,
    "LLM-judged plausible BRT*": lambda o: bool(o.llm_judged_plausible_brt),
}


@dataclass(frozen=True)
class SignalStat:
    """One BRT signal used as a predictor of a plausible fix in the same patch.

    ``precision`` is P(plausible fix | signal) (seed Table 4); ``recall`` is P(signal | plausible fix) and
    ``f_score`` their harmonic mean (seed Table 5).
    """

    signal: str
    with_signal: int
    plausible_with_signal: int
    precision: float
    recall: float
    f_score: float


def conditional_probability(outcomes: Iterable[TrajectoryOutcome], event: Criterion, given: Criterion) -> float:
    """P(event | given) over ``outcomes``; 0.0 when nothing satisfies ``given``."""
    base = hits = 0
    for o in outcomes:
        if given(o):
            base += 1
            hits += event(o)
    return _ratio(hits, base)


def signal_table(outcomes: Sequence[TrajectoryOutcome], signals: Mapping[str, Criterion] = SIGNALS) -> list[SignalStat]:
    """Seed Tables 4-5 over all patches. LLM rows are omitted when no outcome carries that judgement."""
    plausible = sum(1 for o in outcomes if o.plausible_fix)
    rows: list[SignalStat] = []
    for name, sig in signals.items():
        if name.startswith("LLM-reviewed") and all(o.llm_reviewed_candidate_brt is None for o in outcomes):
            continue
        if name.startswith("LLM-judged") and all(o.llm_judged_plausible_brt is None for o in outcomes):
            continue
        n = sum(1 for o in outcomes if sig(o))
        hit = sum(1 for o in outcomes if sig(o) and o.plausible_fix)
        p, r = _ratio(hit, n), _ratio(hit, plausible)
        rows.append(SignalStat(name, n, hit, p, r, 2 * p * r / (p + r) if p + r else 0.0))
    return rows


def cogeneration_success(outcomes: Iterable[TrajectoryOutcome]) -> dict[str, float]:
    """Seed Table 3 conditional success rates, over trajectories that finished on their own."""
    done = [o for o in outcomes if o.finished]
    fix, brt, cand = CRITERIA["pass"], CRITERIA["plausibleBRT"], CRITERIA["candidateBRT"]
    return {
        "P(plausible BRT | candidate BRT)": conditional_probability(done, brt, cand),
        "P(plausible fix | candidate BRT)": conditional_probability(done, fix, cand),
        "P(plausible fix | plausible BRT)": conditional_probability(done, fix, brt),
        "P(plausible BRT | plausible fix)": conditional_probability(done, brt, fix),
    }
