"""What a webhook delivery asks of the store: jobs to queue later, and bookkeeping writes done with its commit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import orjson

from bot.store.bodies import pack_body
from bot.store.schema import FORGES
from bot.store.sql import check_choice, dumps

#: Bookkeeping writes a handler may plan (see bot.store.publications.apply_action for what each writes).
ACTION_KINDS = ("installation", "installation_removed", "pr_outcome")


class DeliveryRejected(ValueError):
    """A delivery that cannot be stored (e.g. text that is not valid Unicode); nothing of it was written."""


@dataclass(frozen=True)
class PlannedJob:
    """A job a webhook asks for, with the issue it is about; kept on the delivery until a worker promotes it."""

    kind: str
    forge: str
    repo: str
    number_or_key: str
    payload: Mapping[str, Any]
    concurrency_key: str | None
    dedupe_key: str | None
    title: str = ""
    body: str = ""
    url: str | None = None
    max_attempts: int = 3

    def to_json(self) -> dict[str, Any]:
        """The planned job as a JSON object (the inverse of `from_json`)."""
        # Not dataclasses.asdict: it deep-copies, and this runs on every acknowledged delivery.
        return {name: getattr(self, name) for name in _JOB_FIELDS} | {"payload": dict(self.payload)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlannedJob:
        """Rebuild a planned job from `to_json` output; TypeError when a field is missing or unknown."""
        return cls(**data)


#: PlannedJob's field names, read once (dataclasses.fields builds its answer on every call).
_JOB_FIELDS = tuple(f.name for f in fields(PlannedJob))


@dataclass(frozen=True)
class PlannedAction:
    """A bookkeeping write a webhook asks for (an installation, a PR outcome), done in its delivery's commit.

    So a handler never writes on the event loop, and a delivery is recorded together with its effect or
    not at all; a redelivery changes nothing.
    """

    kind: str
    args: Mapping[str, Any]


#: One webhook delivery for the inbox: (delivery id, source, event name, what it plans, raw body).
DeliveryRecord = tuple[str, str, str, Sequence[PlannedJob | PlannedAction], bytes]

#: A delivery ready for its INSERTs: (delivery id, source, event, planned jobs as JSON text, packed body or None
#: for an empty one, actions).
Prepared = tuple[str, str, str, str | None, bytes | None, list[PlannedAction]]


def _plan_json(jobs: list[dict[str, Any]]) -> str:
    """The planned jobs as JSON text, checked to be storable (valid UTF-8).

    orjson first: the plan carries the issue's title and body, and json.dumps costs several times more on
    the ack path; its output is valid UTF-8 by construction. What orjson refuses (a lone surrogate, an
    integer past 64 bits) goes to json.dumps as before, so such a plan is stored or refused as it always was.
    """
    try:
        return orjson.dumps(jobs, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # orjson.JSONEncodeError
        text = dumps(jobs)
        text.encode("utf-8")  # a lone surrogate: UnicodeEncodeError, the delivery is refused
        return text


def prepare(delivery: DeliveryRecord) -> Prepared | DeliveryRejected:
    """Check and encode one delivery before the transaction: a bad one is rejected alone, without the lock."""
    delivery_id, source, event, plan, payload = delivery
    jobs = [item for item in plan if isinstance(item, PlannedJob)]
    actions = [item for item in plan if isinstance(item, PlannedAction)]
    try:
        for job in jobs:  # refuse a bad plan now, while the sender still gets an error for it
            check_choice(job.forge, FORGES, "forge")
        for action in actions:
            check_choice(action.kind, ACTION_KINDS, "planned action")
        planned = _plan_json([job.to_json() for job in jobs]) if jobs else None
        # SQLite binds text as UTF-8: a lone surrogate would fail the INSERT, so find it here.
        for text in (delivery_id, source, event, *(dumps(dict(a.args)) for a in actions)):
            text.encode("utf-8")
    except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
        return DeliveryRejected(f"delivery {delivery_id!r} cannot be stored: {exc}")
    # Packed here, before the write lock is taken: the lock is then held only for the INSERTs.
    return delivery_id, source, event, planned, pack_body(payload) if payload else None, actions
