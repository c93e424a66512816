"""Reviews and the per-patch record that selectors consume."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from patch_selectors.classify import DEFAULT_CLASSIFIER
from patch_selectors.normalize import patch_hash
from patch_selectors.patch import Patch, split_test_and_fix


@dataclass(frozen=True)
class Review:
    """One reviewer's verdict on one patch. A reviewer with nothing to check (say, the BRT reviewer on a
    patch without a test) returns ``accepted=True`` and says so in ``reason``."""

    accepted: bool
    reviewer: str
    reason: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PatchRecord:
    """A candidate patch with everything selection needs.

    ``fix_hash`` is the normalized hash of the non-test files and ``patch_hash`` of the whole patch.
    ``fix_lines`` and ``total_lines`` count added plus removed lines of the fix part and of the whole patch;
    they stand in for the seed's "size of the patch" in tie-breaks (smaller wins).
    """

    id: str
    patch: Patch
    fix_hash: str
    has_test: bool
    fix_lines: int
    total_lines: int
    reviews: tuple[Review, ...] = ()
    trajectory_id: str = ""
    agent: str = ""
    patch_hash: str = ""
    test_part: Patch = field(default_factory=Patch)
    fix_part: Patch = field(default_factory=Patch)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reviews", tuple(self.reviews))
        if not self.patch_hash:
            # Callers that build records by hand still get a usable whole-patch key for the default selector.
            object.__setattr__(self, "patch_hash", patch_hash(self.patch))

    @property
    def accepted(self) -> bool:
        """True if every review accepted the patch (vacuously true before any review ran)."""
        return all(r.accepted for r in self.reviews)

    @property
    def rejections(self) -> tuple[Review, ...]:
        """The reviews that rejected this patch."""
        return tuple(r for r in self.reviews if not r.accepted)

    def with_reviews(self, *reviews: Review) -> PatchRecord:
        """A copy with ``reviews`` appended."""
        return replace(self, reviews=self.reviews + tuple(reviews))


def make_record(
    id: str,
    diff_text: str,
    reviews: Iterable[Review] = (),
    *,
    classifier: Callable[[str], bool] = DEFAULT_CLASSIFIER,
    trajectory_id: str = "",
    agent: str = "",
) -> PatchRecord:
    """Parse ``diff_text``, split it into test and fix parts with ``classifier``, and hash both levels."""
    patch = Patch.parse(diff_text)
    test_part, fix_part = split_test_and_fix(patch, classifier)
    return PatchRecord(
        id=id,
        patch=patch,
        fix_hash=patch_hash(fix_part),
        has_test=not test_part.is_empty,
        fix_lines=fix_part.lines_changed,
        total_lines=patch.lines_changed,
        reviews=tuple(reviews),
        trajectory_id=trajectory_id,
        agent=agent,
        patch_hash=patch_hash(patch),
        test_part=test_part,
        fix_part=fix_part,
    )
