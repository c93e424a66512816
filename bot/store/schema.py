"""The store's schema: ordered forward migrations keyed by PRAGMA user_version, and its enumerations."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from sqlite_utils import Database

from bot.store.tenants import tenant_of

# sqlite-utils ships a name-based Migrations class, but it can neither refuse a database written by a newer
# release nor stop two processes that open a fresh file at once from applying the same step twice; an
# integer version read and bumped inside one BEGIN IMMEDIATE transaction does both.
Migration = Callable[[Database], None]


class StoreError(Exception):
    """Base class of the store's own errors."""


class SchemaTooNew(StoreError):
    """The database was written by a newer reprobot; opening it could corrupt what that version relies on."""


# Enumerations checked in Python rather than by CHECK constraints, because SQLite cannot alter a CHECK
# without rebuilding the table and these sets will grow (a new forge, a new kind of publication).
FORGES = ("local", "github", "jira")
PUBLICATION_KINDS = (
    "pr",
    "comment",
    "branch",
    "progress_comment",
    "reaction",
    # One status comment per kind of job (bot/forges/base.py STATUS_KINDS), each edited in place.
    "status-fix",
    "status-reproduce",
    "status-policy",
)
JOB_STATUSES = ("queued", "running", "done", "failed", "dead", "cancelled")
TERMINAL_JOB_STATUSES = ("done", "failed", "dead", "cancelled")

_V1_CORE = (
    """CREATE TABLE issues (
        id INTEGER PRIMARY KEY,
        forge TEXT NOT NULL,
        repo TEXT NOT NULL,
        number_or_key TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        body TEXT NOT NULL DEFAULT '',
        url TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (forge, repo, number_or_key)
    )""",
    # The job state machine is the one enumeration guarded by the database itself: a bad status would
    # make a job invisible to claim() forever.
    """CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        issue_id INTEGER REFERENCES issues(id),
        payload TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL DEFAULT 'queued'
            CHECK (status IN ('queued', 'running', 'done', 'failed', 'dead', 'cancelled')),
        attempts INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL DEFAULT 3,
        run_after TEXT NOT NULL,
        lease_owner TEXT,
        lease_expires_at TEXT,
        last_error TEXT,
        result TEXT,
        concurrency_key TEXT,
        dedupe_key TEXT UNIQUE,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    "CREATE INDEX jobs_by_status ON jobs (status, run_after)",
    "CREATE INDEX jobs_by_issue ON jobs (issue_id)",
    # Belt and braces for the queue's rule "at most one running job per concurrency key": should the claim
    # query ever be wrong, the claim fails with an IntegrityError instead of running two jobs at once.
    "CREATE UNIQUE INDEX jobs_one_running_per_key ON jobs (concurrency_key) WHERE status = 'running'",
    """CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY,
        delivery_id TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        event TEXT NOT NULL,
        received_at TEXT NOT NULL,
        job_id INTEGER REFERENCES jobs(id)
    )""",
    """CREATE TABLE trajectories (
        id INTEGER PRIMARY KEY,
        job_id INTEGER REFERENCES jobs(id),
        agent TEXT NOT NULL,
        strategy TEXT NOT NULL,
        seed INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'running',
        steps INTEGER NOT NULL DEFAULT 0,
        seconds REAL NOT NULL DEFAULT 0,
        tokens INTEGER NOT NULL DEFAULT 0,
        cost REAL NOT NULL DEFAULT 0,
        error TEXT,
        created_at TEXT NOT NULL,
        finished_at TEXT
    )""",
    "CREATE INDEX trajectories_by_job ON trajectories (job_id)",
    """CREATE TABLE steps (
        trajectory_id INTEGER NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        kind TEXT NOT NULL,
        content TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (trajectory_id, idx)
    )""",
    """CREATE TABLE patches (
        id INTEGER PRIMARY KEY,
        job_id INTEGER REFERENCES jobs(id),
        trajectory_id INTEGER REFERENCES trajectories(id),
        diff TEXT NOT NULL,
        fix_hash TEXT NOT NULL,
        has_test INTEGER NOT NULL,
        fix_lines INTEGER NOT NULL,
        total_lines INTEGER NOT NULL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX patches_by_job ON patches (job_id)",
    """CREATE TABLE reviews (
        id INTEGER PRIMARY KEY,
        patch_id INTEGER NOT NULL REFERENCES patches(id),
        reviewer TEXT NOT NULL,
        accepted INTEGER NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        evidence TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX reviews_by_patch ON reviews (patch_id)",
    """CREATE TABLE selections (
        id INTEGER PRIMARY KEY,
        job_id INTEGER REFERENCES jobs(id),
        selector TEXT NOT NULL,
        patch_id INTEGER REFERENCES patches(id),
        explanation TEXT NOT NULL DEFAULT '',
        groups TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX selections_by_job ON selections (job_id)",
    """CREATE TABLE publications (
        id INTEGER PRIMARY KEY,
        job_id INTEGER REFERENCES jobs(id),
        issue_id INTEGER NOT NULL REFERENCES issues(id),
        kind TEXT NOT NULL,
        forge_ref TEXT NOT NULL,
        body_hash TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (issue_id, kind)
    )""",
)

_V2_BOOKKEEPING = (
    """CREATE TABLE installations (
        installation_id INTEGER PRIMARY KEY,
        account TEXT NOT NULL,
        repos TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        removed_at TEXT
    )""",
    """CREATE TABLE pr_outcomes (
        id INTEGER PRIMARY KEY,
        repo TEXT NOT NULL,
        pr_number INTEGER NOT NULL,
        merged INTEGER NOT NULL,
        closed_at TEXT NOT NULL,
        UNIQUE (repo, pr_number)
    )""",
    """CREATE TABLE environments (
        key TEXT PRIMARY KEY,
        repo TEXT NOT NULL,
        spec TEXT NOT NULL DEFAULT '{}',
        path TEXT NOT NULL,
        created_at TEXT NOT NULL,
        last_used_at TEXT NOT NULL
    )""",
)


_V3_EVENTS = (
    # The delivered event itself, so a job can be traced (or replayed) from what GitHub actually sent.
    "ALTER TABLE deliveries ADD COLUMN payload TEXT",
)


_V4_POLICIES = (
    # The last policy a job loaded per repo, so the webhook path can apply who-may-command without an API call.
    """CREATE TABLE policies (
        repo TEXT PRIMARY KEY,
        policy TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
)


_V5_INBOX = (
    # The webhook inbox: a delivery carries the jobs its handlers planned, and a worker promotes them into
    # `jobs` later. The acknowledgement then writes one delivery instead of a delivery, an issue and a job.
    "ALTER TABLE deliveries ADD COLUMN planned TEXT",
    "ALTER TABLE deliveries ADD COLUMN promoted_at TEXT",
    "ALTER TABLE deliveries ADD COLUMN promote_error TEXT",
    # Only deliveries still waiting for promotion are in this index, so it stays a page or two.
    "CREATE INDEX deliveries_pending ON deliveries (id) WHERE planned IS NOT NULL AND promoted_at IS NULL",
    # Raw bodies (GitHub's are about 12 KB) get their own table: SQLite rewrites a whole row on UPDATE, so
    # promotion and pruning would otherwise copy every body again. (DROP COLUMN needs SQLite 3.35.)
    """CREATE TABLE delivery_bodies (
        delivery_id INTEGER PRIMARY KEY REFERENCES deliveries(id),
        payload TEXT NOT NULL
    )""",
    "INSERT INTO delivery_bodies (delivery_id, payload) SELECT id, payload FROM deliveries WHERE payload IS NOT NULL",
    "ALTER TABLE deliveries DROP COLUMN payload",
)


_V6_MOJIRA = (
    # The Mojira poller (bot/mojira): where each followed query got to, and every report it handed to its sink,
    # so a restarted poller resumes there and hands nothing over twice.
    """CREATE TABLE mojira_cursors (
        name TEXT PRIMARY KEY,
        jql TEXT NOT NULL,
        updated TEXT,
        polled_at TEXT NOT NULL
    )""",
    """CREATE TABLE mojira_reports (
        key TEXT PRIMARY KEY,
        updated TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '',
        report TEXT NOT NULL DEFAULT '{}',
        triage TEXT NOT NULL DEFAULT '{}',
        route TEXT,
        signature TEXT,
        sink TEXT NOT NULL,
        sink_ref TEXT,
        first_seen_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    "CREATE INDEX mojira_reports_by_signature ON mojira_reports (signature) WHERE signature IS NOT NULL",
)


_V7_RUNNERS = (
    # Self-hosted runners (bot/selfhosted/api.py). A job with labels waits for a runner that has them all; the
    # worker never claims it. NULL: a worker's job.
    "ALTER TABLE jobs ADD COLUMN labels TEXT",
    "CREATE INDEX jobs_for_runners ON jobs (status, run_after) WHERE labels IS NOT NULL",
    # Only the SHA-256 of a runner's token is kept: a leaked database does not let anyone act as a runner.
    """CREATE TABLE runners (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        labels TEXT NOT NULL DEFAULT '[]',
        version TEXT NOT NULL DEFAULT '',
        ephemeral INTEGER NOT NULL DEFAULT 0,
        jobs_taken INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        last_seen_at TEXT NOT NULL
    )""",
    """CREATE TABLE job_logs (
        job_id INTEGER NOT NULL REFERENCES jobs(id),
        seq INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        text TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (job_id, attempt, seq)
    )""",
    # Artifacts are content-addressed files under the data dir; a job names each of its own.
    """CREATE TABLE job_artifacts (
        job_id INTEGER NOT NULL REFERENCES jobs(id),
        name TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (job_id, name)
    )""",
)


_V8_SHARED_BLOBS = (
    # On PostgreSQL several machines share the store but not a filesystem: a runner's upload reaches one web
    # process, a download may reach another. The bytes then live here too (SQLite keeps them as files only).
    """CREATE TABLE artifact_blobs (
        sha256 TEXT PRIMARY KEY,
        data BLOB NOT NULL,
        created_at TEXT NOT NULL
    )""",
)


_V9_PACKED_BODIES = (
    # A delivery's raw body as an LZ4 frame (bot/store/bodies.py): a 12 KB GitHub body then takes one page
    # instead of three overflow pages, written on the acknowledgement's path. Rows written from now on keep
    # `payload` empty (it is NOT NULL, which SQLite cannot drop without rebuilding the table); older rows keep
    # their text there, with `packed` NULL, and read as before.
    "ALTER TABLE delivery_bodies ADD COLUMN packed BLOB",
)


_V10_RUNNER_TENANCY = (
    # Runner tenancy (issue 28, bot/store/tenants.py). The tenant of a runner job: `github:<installation id>`
    # or `jira:<site>`; NULL: the deployment's own (a Mojira report), which only a deployment-wide runner takes.
    "ALTER TABLE jobs ADD COLUMN tenant TEXT",
    # A runner's scope: a JSON list of tenants, or ["deployment"]. Runners registered before this step keep
    # NULL and are refused until they register again with a scope: none is widened to the deployment silently.
    "ALTER TABLE runners ADD COLUMN scope TEXT",
    # The scoped registration token a runner registered with, if any (revoking it removes its runners).
    "ALTER TABLE runners ADD COLUMN grant_id INTEGER",
    # Scoped registration tokens issued by the runner admin, stored hashed like runners' tokens: a runner that
    # registers with one gets its scope, never more.
    """CREATE TABLE runner_grants (
        id INTEGER PRIMARY KEY,
        token_hash TEXT NOT NULL UNIQUE,
        scope TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL
    )""",
)


def _tenancy(db: Database) -> None:
    """Step 10: the tenancy columns, then the tenant of each runner job still waiting or running."""
    for statement in _V10_RUNNER_TENANCY:
        db.execute(statement)
    # Its forge job's fields travel in `publish` (bot/jobs/handoff.py); a job without them stays the deployment's.
    sql = "SELECT id, payload FROM jobs WHERE labels IS NOT NULL AND status IN ('queued', 'running')"
    for row in list(db.query(sql)):
        publish = json.loads(row["payload"] or "{}").get("publish")
        tenant = tenant_of(publish) if isinstance(publish, dict) else None
        if tenant is not None:
            db.execute("UPDATE jobs SET tenant = ? WHERE id = ?", (tenant, row["id"]))


def _inline_bodies(db: Database) -> None:
    """Step 11 (PostgreSQL only): a delivery's body stays in its row up to a page instead of going to TOAST.

    A packed GitHub body is 2-4 KB, over PostgreSQL's 2 KB default, so every ack tried to compress the LZ4
    frame again (in vain) and wrote it out of line, with an insert into the TOAST table and its index: about
    a third of the server's work per delivery. SQLite has no TOAST: nothing to do there.
    """
    if getattr(db, "engine", "sqlite") == "postgresql":
        db.execute("ALTER TABLE delivery_bodies SET (toast_tuple_target = 8160)")


def _run(statements: Sequence[str]) -> Migration:
    def migration(db: Database) -> None:
        for statement in statements:
            db.execute(statement)

    return migration


#: Forward migrations in order; MIGRATIONS[i] takes the schema from version i to version i + 1.
#: Append only: a released step is never edited, because databases in the field already ran it.
MIGRATIONS: tuple[Migration, ...] = (
    _run(_V1_CORE),  # 1: issues, jobs, deliveries, trajectories, steps, patches, reviews, selections, ...
    _run(_V2_BOOKKEEPING),  # 2: GitHub App installations, PR outcomes, environment cache
    _run(_V3_EVENTS),  # 3: the body of each webhook delivery
    _run(_V4_POLICIES),  # 4: last loaded policy per repo
    _run(_V5_INBOX),  # 5: planned jobs on the delivery, promoted into jobs by the worker; bodies apart
    _run(_V6_MOJIRA),  # 6: the Mojira poller's cursors and the reports it handed to its sink
    _run(_V7_RUNNERS),  # 7: runner jobs' labels, runners, their logs and artifacts
    _run(_V8_SHARED_BLOBS),  # 8: artifact bytes in the database, for engines shared by several machines
    _run(_V9_PACKED_BODIES),  # 9: delivery bodies as raw bytes in an LZ4 frame
    _tenancy,  # 10: runner jobs' tenants, runners' scopes, scoped registration tokens
    _inline_bodies,  # 11: on PostgreSQL, delivery bodies kept in their row up to a page (no TOAST)
)
LATEST_VERSION = len(MIGRATIONS)


def schema_version(db: Database) -> int:
    """The schema version recorded in the database file (0 for a new file)."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def _refuse_newer(current: int, known: int, where: str) -> None:
    if current > known:
        raise SchemaTooNew(
            f"{where} has schema version {current}, but this reprobot only knows versions up to {known}; "
            "upgrade reprobot, or point REPROBOT_DATA_DIR at a different store"
        )


def migrate(
    db: Database,
    migrations: Sequence[Migration] = MIGRATIONS,
    *,
    target: int | None = None,
    where: str = "the store",
) -> int:
    """Apply the missing migrations up to `target` (default: all) in one transaction; return the version.

    Raises SchemaTooNew when the file is ahead of `migrations`. A failing step rolls every step back.
    """
    target = len(migrations) if target is None else target
    current = schema_version(db)
    _refuse_newer(current, len(migrations), where)
    if current >= target:
        return current
    # BEGIN IMMEDIATE takes the write lock before re-reading the version, so of two processes opening a
    # fresh file at once the second waits and then finds nothing left to do.
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        current = schema_version(db)
        _refuse_newer(current, len(migrations), where)
        for version in range(current + 1, target + 1):
            migrations[version - 1](db)
            # PRAGMA takes no bound parameters; version is an int we computed.
            db.execute(f"PRAGMA user_version = {int(version)}")
        db.conn.execute("COMMIT")
    except BaseException:
        if db.conn.in_transaction:
            db.conn.execute("ROLLBACK")
        raise
    return max(current, target)
