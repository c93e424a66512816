"""The inbox's set-based statements on PostgreSQL: a batch acknowledged, or promoted, in one statement.

On SQLite a statement is a function call; on PostgreSQL it is a network round trip, and the row-by-row inbox
(two INSERTs a delivery, savepoints, BEGIN, the lock, NOTIFY, COMMIT) made an ack batch of one cost eight of
them, of eight 22. So the webhook path writes a whole batch in one statement run in autocommit, which is its
own transaction and commits with it (one round trip, durable before the 2xx: synchronous_commit stays on).
unnest() turns the batch's columns, sent as arrays (in binary: no escaping of the bodies), back into rows,
and data-modifying CTEs take the write lock, insert the deliveries, then the bodies of those that were new,
and NOTIFY the workers.

These statements are PostgreSQL's alone (SQLite has no data-modifying CTE or unnest), and they cover the common
case only: a batch whose deliveries plan jobs and no bookkeeping actions, a promotion whose plans are of the
expected types. Anything else, and any data error, goes the row-by-row way (bot/store/deliveries.py), which
stays the reference for what is written; the tests run both engines against it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.store.pg import QUEUE_CHANNEL, WRITE_LOCK_KEY, PgConnection
from bot.store.plans import PlannedJob, Prepared
from bot.store.schema import FORGES
from bot.store.sql import check_choice, dumps

#: The lock an ack takes, in the CTE `lock` below: the write lock, shared. Acknowledgements only insert rows
#: keyed by their delivery id, so they may run beside each other (from several server processes); every
#: other writer (promotion above all) takes it exclusively (BEGIN IMMEDIATE) and so still runs alone.
_TRY_LOCK = "SELECT pg_try_advisory_xact_lock_shared(%(lock)b::bigint) AS got"
_WAIT_LOCK = "SELECT true AS got FROM (SELECT pg_advisory_xact_lock_shared(%(lock)b::bigint)) AS held"

# A redelivery inserts nothing (ON CONFLICT), and a delivery id twice in one batch is inserted once, for its
# first occurrence (the rows are inserted in batch order): so `fresh` lists what the batch wrote.
_ACK = f"""WITH lock AS ({{lock}}),
batch AS (
    SELECT * FROM unnest(%(ids)b::text[], %(sources)b::text[], %(events)b::text[], %(planned)b::text[],
        %(packed)b::bytea[]) WITH ORDINALITY AS t(delivery_id, source, event, planned, packed, ord)
),
fresh AS (
    INSERT INTO deliveries (delivery_id, source, event, received_at, planned)
    SELECT delivery_id, source, event, %(now)b, planned FROM batch WHERE (SELECT got FROM lock) ORDER BY ord
    ON CONFLICT (delivery_id) DO NOTHING
    RETURNING id, delivery_id, planned IS NOT NULL AS has_plan
),
bodies AS (
    INSERT INTO delivery_bodies (delivery_id, payload, packed)
    SELECT fresh.id, '', firsts.packed FROM fresh
    JOIN (SELECT DISTINCT ON (delivery_id) delivery_id, packed FROM batch ORDER BY delivery_id, ord) AS firsts
        USING (delivery_id)
    WHERE firsts.packed IS NOT NULL
)
SELECT (SELECT got FROM lock), ARRAY(SELECT delivery_id FROM fresh),
    (SELECT count(pg_notify('{QUEUE_CHANNEL}', '')) FROM (SELECT 1 FROM fresh WHERE has_plan LIMIT 1) AS planned)"""

ACK_TRY = _ACK.replace("{lock}", _TRY_LOCK)
ACK_WAIT = _ACK.replace("{lock}", _WAIT_LOCK)


def fits_ack(rows: Sequence[object]) -> bool:
    """True when the batch's deliveries plan no bookkeeping actions (those are written row by row)."""
    return all(not isinstance(row, tuple) or not row[5] for row in rows)


def ack(conn: PgConnection, now: str, rows: Sequence[Prepared], *, wait: bool) -> list[bool] | None:
    """Write a batch of prepared deliveries (no actions) in one statement; None when the lock is held (not `wait`).

    Returns, per delivery, False for a redelivery. A data error (sqlite3's classes) leaves nothing written.
    """
    row = conn.run_prepared(ACK_WAIT if wait else ACK_TRY, ack_params(now, rows)).fetchone()
    return ack_results(rows, row)


def ack_params(now: str, rows: Sequence[Prepared]) -> dict[str, Any]:
    """The ack statement's parameters for a batch of prepared deliveries (pure)."""
    return {
        "lock": WRITE_LOCK_KEY,
        "now": now,
        "ids": [row[0] for row in rows],
        "sources": [row[1] for row in rows],
        "events": [row[2] for row in rows],
        "planned": [row[3] for row in rows],
        "packed": [row[4] for row in rows],
    }


def ack_results(rows: Sequence[Prepared], answer: Sequence[Any] | None) -> list[bool] | None:
    """Per delivery, whether the ack statement's `answer` row says it was new; None when the lock was not got."""
    got, fresh, _ = answer or (False, [], 0)
    if not got:
        return None
    new = set(fresh)
    results = []
    for row in rows:
        results.append(row[0] in new)
        new.discard(row[0])  # the same id later in the batch is its redelivery
    return results


# -- promotion ------------------------------------------------------------------------------------------------

# One statement for a whole promotion batch. The issues are upserted once each (the plan's last values win, as
# they would row by row); each job gets its id from the sequence up front, so that the inserted ones are known
# by id and the others (a dedupe key taken before, or earlier in the batch) by their key; each delivery is then
# marked promoted with its first job, and each delivery whose plan could not be read with its error.
PROMOTE = """WITH issue_in AS (
    SELECT * FROM unnest(%(i_forge)b::text[], %(i_repo)b::text[], %(i_key)b::text[], %(i_title)b::text[],
        %(i_body)b::text[], %(i_url)b::text[]) WITH ORDINALITY AS t(forge, repo, number_or_key, title, body, url, ord)
),
issue AS (
    INSERT INTO issues (forge, repo, number_or_key, title, body, url, created_at, updated_at)
    SELECT forge, repo, number_or_key, title, body, url, %(now)b, %(now)b FROM issue_in ORDER BY ord
    ON CONFLICT (forge, repo, number_or_key) DO UPDATE SET title = excluded.title,
        body = excluded.body, url = excluded.url, updated_at = excluded.updated_at
    RETURNING id, forge, repo, number_or_key
),
job_in AS (
    SELECT t.*, nextval(pg_get_serial_sequence('jobs', 'id')) AS new_id
    FROM unnest(%(j_delivery)b::bigint[], %(j_kind)b::text[], %(j_forge)b::text[], %(j_repo)b::text[],
        %(j_key)b::text[], %(j_payload)b::text[], %(j_max)b::bigint[], %(j_dedupe)b::text[], %(j_conc)b::text[])
        WITH ORDINALITY AS t(delivery, kind, forge, repo, number_or_key, payload, max_attempts, dedupe_key,
            concurrency_key, ord)
    ORDER BY ord
),
job AS (
    INSERT INTO jobs (id, kind, issue_id, payload, status, max_attempts, run_after, dedupe_key, concurrency_key,
        created_at, updated_at)
    SELECT j.new_id, j.kind, issue.id, j.payload, 'queued', j.max_attempts, %(now)b, j.dedupe_key, j.concurrency_key,
        %(now)b, %(now)b
    FROM job_in AS j JOIN issue USING (forge, repo, number_or_key) ORDER BY j.ord
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id, dedupe_key
),
resolved AS (
    SELECT j.ord, j.delivery, COALESCE(mine.id, twin.id, old.id) AS job_id
    FROM job_in AS j
    LEFT JOIN job AS mine ON mine.id = j.new_id
    LEFT JOIN job AS twin ON twin.dedupe_key = j.dedupe_key
    LEFT JOIN jobs AS old ON old.dedupe_key = j.dedupe_key
),
firsts AS (SELECT DISTINCT ON (delivery) delivery, job_id FROM resolved ORDER BY delivery, ord),
promoted AS (
    UPDATE deliveries AS d SET promoted_at = %(now)b, job_id = firsts.job_id
    FROM unnest(%(ok)b::bigint[]) AS ok(id) LEFT JOIN firsts ON firsts.delivery = ok.id
    WHERE d.id = ok.id
),
failed AS (
    UPDATE deliveries AS d SET promoted_at = %(now)b, promote_error = bad.error
    FROM unnest(%(bad)b::bigint[], %(errors)b::text[]) AS bad(id, error)
    WHERE d.id = bad.id
)
SELECT job_id FROM resolved ORDER BY ord"""


class Unfit(Exception):
    """A promotion batch the set-based statement does not cover: promote it row by row instead."""


@dataclass
class Promotion:
    """One promotion batch as the statement's arrays: jobs in order, issues once each, errors per delivery."""

    ok: list[int] = field(default_factory=list)
    bad: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    jobs: list[tuple[int, PlannedJob, str]] = field(default_factory=list)
    issues: dict[tuple[str, str, str], PlannedJob] = field(default_factory=dict)

    def params(self, now: str) -> dict[str, Any]:
        """The statement's parameters."""
        jobs = [job for _, job, _ in self.jobs]
        issues = list(self.issues.values())
        return {
            "now": now,
            "i_forge": [i.forge for i in issues],
            "i_repo": [i.repo for i in issues],
            "i_key": [i.number_or_key for i in issues],
            "i_title": [i.title for i in issues],
            "i_body": [i.body for i in issues],
            "i_url": [i.url for i in issues],
            "j_delivery": [delivery for delivery, _, _ in self.jobs],
            "j_kind": [j.kind for j in jobs],
            "j_forge": [j.forge for j in jobs],
            "j_repo": [j.repo for j in jobs],
            "j_key": [j.number_or_key for j in jobs],
            "j_payload": [payload for _, _, payload in self.jobs],
            "j_max": [j.max_attempts for j in jobs],
            "j_dedupe": [j.dedupe_key for j in jobs],
            "j_conc": [j.concurrency_key for j in jobs],
            "ok": self.ok,
            "bad": self.bad,
            "errors": self.errors,
        }


_TEXT = ("kind", "forge", "repo", "number_or_key", "title", "body")
_OPTIONAL_TEXT = ("url", "dedupe_key", "concurrency_key")
_BIGINT = range(-(2**63), 2**63)


def _typed(job: PlannedJob) -> bool:
    """True when every column of the job has the type its array is sent as (else row by row decides)."""
    if not all(type(getattr(job, name)) is str for name in _TEXT):
        return False
    if not all(getattr(job, name) is None or type(getattr(job, name)) is str for name in _OPTIONAL_TEXT):
        return False
    return type(job.max_attempts) is int and job.max_attempts in _BIGINT


def plan_promotion(rows: Sequence[tuple[int, str, str]]) -> tuple[Promotion, list[tuple[str, Exception]]]:
    """Read the plans of pending deliveries (id, delivery id, plan): the batch, and the plans that failed.

    A plan that cannot be read is that delivery's error, as row by row. Raises Unfit for a plan the arrays
    cannot carry as they are (a field of another type: row by row decides what is stored or refused).
    """
    batch = Promotion()
    failures: list[tuple[str, Exception]] = []
    for row_id, delivery_id, planned in rows:
        try:
            jobs = [PlannedJob.from_json(job) for job in json.loads(planned)]
            for job in jobs:
                check_choice(job.forge, FORGES, "forge")
            payloads = [dumps(dict(job.payload)) for job in jobs]
        except Exception as exc:  # as row by row: any error of reading the plan is this delivery's own
            batch.bad.append(row_id)
            # The message may quote the bad value: make it storable text whatever it holds.
            batch.errors.append(f"{type(exc).__name__}: {exc}".encode("utf-8", "backslashreplace").decode())
            failures.append((delivery_id, exc))
            continue
        if not all(_typed(job) for job in jobs):
            raise Unfit(f"delivery {delivery_id}: a planned job has a field of an unexpected type")
        batch.ok.append(row_id)
        for job, payload in zip(jobs, payloads, strict=True):
            batch.jobs.append((row_id, job, payload))
            key = (job.forge, job.repo, job.number_or_key)
            batch.issues[key] = job  # in first-seen order, with the last plan's title, body and url
    return batch, failures


def promote(conn: PgConnection, now: str, batch: Promotion) -> list[int]:
    """Run one promotion batch's statement inside the caller's write transaction; the job ids in plan order.

    Raises Unfit (the caller rolls back and promotes row by row) for a data error or a job id not found.
    """
    try:
        rows = conn.run_prepared(PROMOTE, batch.params(now)).fetchall()
    except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError) as exc:
        raise Unfit(str(exc)) from exc
    ids = [row[0] for row in rows]
    if any(job_id is None for job_id in ids):  # a key taken by a writer this statement could not see
        raise Unfit("a deduplicated job was not found")
    return [int(job_id) for job_id in ids]
