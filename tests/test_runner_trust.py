"""Issue 28, findings 4 and 5: what a runner may do, against real `reprobot serve` and `reprobot runner` processes.

A runner writes to a job only under the live lease of the attempt it claimed, within the job's artifact quota, and
a bad number gets a 400 (finding 4). A runner takes only the jobs of its scope, a scoped registration token cannot
widen it, and only the admin token, never the registration token, lists and removes runners (finding 5).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.jobs.queue import Queue
from bot.store import JobRow, Store, iso
from bot.store.runners import runner_owner
from tests.runner_procs import ADMIN, REGISTRATION, REPROBOT, Runners, serve, wait_until

pytestmark = pytest.mark.slow
Bot = tuple[str, Store, Runners]


@pytest.fixture
def bot_with(tmp_path: Path) -> Callable[..., AbstractContextManager[Bot]]:
    """`with bot_with(**settings) as (url, store, runners)`: a `reprobot serve` with extra REPROBOT_* settings."""

    @contextmanager
    def started(**settings: str) -> Iterator[Bot]:
        data = tmp_path / "data"
        with serve(data, tmp_path / "serve.log", **settings) as url:
            store = Store.open(data / "reprobot.db")
            runners = Runners(url, tmp_path / "runners")
            try:
                yield url, store, runners
            finally:
                runners.stop_all()
                store.close()
        # Whatever a runner sent, the server answered it: no handler raised.
        assert "Traceback" not in (tmp_path / "serve.log").read_text()

    return started


def _job(store: Store, job_id: int) -> JobRow:
    job = store.jobs.get_job(job_id)
    assert job is not None
    return job


def _enqueue(store: Store, labels: list[str], tenant: str | None = None) -> int:
    kwargs = {"tenant": tenant} if tenant is not None else {}
    return Queue(store).enqueue("runner.probe", None, {"task": {}}, concurrency_key=None, labels=labels, **kwargs)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _register(url: str, token: str, **body: Any) -> httpx.Response:
    body = {"name": "raw", "labels": ["web"], "version": "test"} | body
    return httpx.post(f"{url}/api/runners/register", json=body, headers=_bearer(token))


class _Raw:
    """A runner speaking the protocol by hand, as an attacker holding a runner token would."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.headers = url, _bearer(token)

    def claim(self) -> dict[str, Any]:
        answer = httpx.post(f"{self.url}/api/runner/claim", headers=self.headers, params={"wait": "1"}, timeout=10)
        assert answer.status_code == 200, answer.text
        job: dict[str, Any] = answer.json()["job"]
        return job

    def call(self, method: str, job: int | str, path: str, attempt: object = 1, **kwargs: Any) -> httpx.Response:
        params = {} if attempt is None else {"attempt": str(attempt)}
        url = f"{self.url}/api/runner/jobs/{job}/{path}"
        return httpx.request(method, url, headers=self.headers, params=params, **kwargs)

    def log(self, job: int | str, seq: object, text: str = "x", attempt: object = 1) -> httpx.Response:
        return self.call("POST", job, "logs", attempt, json={"seq": seq, "text": text})

    def put(self, job: int, name: str, data: bytes, attempt: object = 1) -> httpx.Response:
        return self.call("PUT", job, f"artifacts/{name}", attempt, content=data)

    def finish(self, job: int, status: str = "done", attempt: object = 1) -> httpx.Response:
        return self.call("POST", job, "finish", attempt, json={"status": status})


# -- finding 4: the lease, the quota, the numbers ------------------------------------------------------------------

#: An executor that leaves five artifacts of 100 bytes and a result (it gets the job file and the out folder).
FIVE_FILES = """for n in a b c d e; do head -c 100 /dev/zero > "$2/$n.bin"; done
echo '{"ok": true}' > "$2/result.json"
"""


def test_a_runner_writes_only_under_its_live_lease_within_the_job_quota_and_bad_numbers_get_400(
    bot_with: Callable[..., AbstractContextManager[Bot]], tmp_path: Path
) -> None:
    executor = tmp_path / "five-files.sh"
    executor.write_text(FIVE_FILES)
    quota = {"REPROBOT_RUNNER_JOB_ARTIFACTS": "3", "REPROBOT_RUNNER_JOB_ARTIFACT_BYTES": "2000"}
    with bot_with(REPROBOT_RUNNER_LEASE="4", **quota) as (url, store, runners):
        # A real runner whose executor leaves five artifacts: the first three are kept, the rest refused (413).
        busy = _enqueue(store, ["files"])
        runners.start("r1", "files", "--exec", f"runner.probe=sh {executor}")
        wait_until(lambda: _job(store, busy).status == "done", "the runner to finish its job")
        assert [a.name for a in store.runners.artifacts(busy)] == ["a.bin", "b.bin", "c.bin"]
        assert "artifact d.bin refused: job" in runners.log("r1") and "holds 3 artifacts" in runners.log("r1")
        runners.stop_all()

        raw = _Raw(url, _register(url, REGISTRATION, scope="deployment").json()["token"])
        _bad_numbers_get_400(raw, store)
        _writes_end_with_the_job(raw, store)
        _a_lapsed_or_older_attempt_writes_nothing(raw, store)


def _bad_numbers_get_400(raw: _Raw, store: Store) -> None:
    """Numbers out of range or of the wrong type: 400, never a 500 (the serve log is checked for tracebacks)."""
    job = _enqueue(store, ["web"])
    assert raw.claim()["id"] == job
    for seq in (2**63, -1, 1.5, "1", True, None):
        assert raw.log(job, seq).status_code == 400, seq
    for attempt in (str(2**63), "-1", "x", "1.0", "\u0663", None):  # U+0663: an Arabic-Indic digit 3
        assert raw.log(job, 0, attempt=attempt).status_code == 400, attempt
    assert raw.log(2**64, 0).status_code == 400
    assert raw.call("POST", 2**64, "renew", None).status_code == 400
    for wait in ("nan", "inf", "-1", "x"):
        assert httpx.post(f"{raw.url}/api/runner/claim", headers=raw.headers, params={"wait": wait}).status_code == 400
    assert raw.finish(job).status_code == 200


def _writes_end_with_the_job(raw: _Raw, store: Store) -> None:
    """The byte quota; then after finish or cancel no write lands (409), and a repeated finish changes nothing."""
    job = _enqueue(store, ["web"])
    assert raw.claim()["id"] == job
    assert raw.put(job, "one.bin", b"1" * 1500).status_code == 200
    over = raw.put(job, "two.bin", b"2" * 600)  # 1500 + 600 would pass the job's 2000 bytes
    assert over.status_code == 413 and "2000 bytes" in over.json()["message"]
    assert raw.put(job, "one.bin", b"1" * 1800).status_code == 200  # a replaced artifact counts at its new size
    assert raw.finish(job).status_code == 200
    assert raw.log(job, 5, "late").status_code == 409
    assert raw.put(job, "late.png", b"x").status_code == 409
    again = raw.finish(job, "failed")
    assert again.status_code == 200 and again.json()["job_status"] == "done"
    assert "late" not in store.runners.job_log(job) and [a.name for a in store.runners.artifacts(job)] == ["one.bin"]

    cancelled = _enqueue(store, ["web"])
    assert raw.claim()["id"] == cancelled
    assert Queue(store).cancel(cancelled)
    assert raw.log(cancelled, 0).status_code == 409
    assert raw.put(cancelled, "x.png", b"x").status_code == 409
    assert raw.finish(cancelled).status_code == 409
    assert store.runners.job_log(cancelled) == "" and store.runners.artifacts(cancelled) == []


def _a_lapsed_or_older_attempt_writes_nothing(raw: _Raw, store: Store) -> None:
    """A lapsed lease takes no write; once the job is claimed again, only the new attempt writes."""
    job = _enqueue(store, ["web"])
    assert raw.claim()["id"] == job
    wait_until(lambda: (_job(store, job).lease_expires_at or "") < iso(store.clock()), "the lease to lapse")
    lapsed = raw.log(job, 0)
    assert lapsed.status_code == 409 and "lapsed" in lapsed.json()["message"]
    assert raw.claim()["attempt"] == 2
    stale = raw.log(job, 0, "old")
    assert stale.status_code == 409 and "attempt 1" in stale.json()["message"]
    assert raw.call("POST", job, "renew", 1).status_code == 404
    assert raw.log(job, 0, "new", attempt=2).status_code == 200
    assert store.runners.job_log(job) == "new"


# -- finding 5: scopes, scoped registration tokens, the admin token --------------------------------------------------


def test_runners_take_only_jobs_in_their_scope_and_only_the_admin_token_administers(
    bot_with: Callable[..., AbstractContextManager[Bot]], tmp_path: Path
) -> None:
    with bot_with() as (url, store, runners):
        one, two = _enqueue(store, ["web"], "github:1"), _enqueue(store, ["web"], "github:2")
        site, own = _enqueue(store, ["web"], "jira:https://acme.atlassian.net"), _enqueue(store, ["web"])

        # A registration without a scope is refused, with what to do about it.
        unscoped = ["--token", REGISTRATION, "--labels", "web", "--state", str(tmp_path / "unscoped.json")]
        refused = subprocess.run(
            [*REPROBOT, "runner", "--server", url, *unscoped],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert refused.returncode == 2 and "scope: required" in refused.stderr and "deployment" in refused.stderr

        # The admin, and only the admin, issues a scoped registration token; it names tenants, not the deployment.
        grants = f"{url}/api/runners/grants"
        assert httpx.post(grants, headers=_bearer(REGISTRATION), json={"scope": ["github:2"]}).status_code == 401
        assert httpx.post(grants, headers=_bearer(ADMIN), json={"scope": "deployment"}).status_code == 400
        issued = httpx.post(grants, headers=_bearer(ADMIN), json={"scope": ["github:2"], "note": "tenant two"})
        assert issued.status_code == 201
        grant_token, grant_id = issued.json()["token"], issued.json()["grant"]["id"]
        # A scoped token cannot register for more than its scope.
        assert _register(url, grant_token, scope="deployment").status_code == 403
        assert _register(url, grant_token, scope=["github:1", "github:2"]).status_code == 403
        assert _register(url, "rbg_not-a-token").status_code == 401

        first = runners.start("first", "web", scope="github:1")
        second = runners.start("second", "web", scope=None, token=grant_token)
        wait_until(lambda: _job(store, one).status == _job(store, two).status == "done", "both tenants' jobs")
        assert _job(store, one).lease_owner == runner_owner(_runner_id(store, "first"))
        assert _job(store, two).lease_owner == runner_owner(_runner_id(store, "second"))
        # Neither takes a job outside its scope: another site's, or the deployment's own.
        assert _job(store, site).status == _job(store, own).status == "queued"

        # The registration token and runner tokens do not administer; the admin token lists and removes.
        listed = httpx.get(f"{url}/api/runners", headers=_bearer(REGISTRATION))
        assert listed.status_code == 401 and "REPROBOT_RUNNER_ADMIN_TOKEN" in listed.json()["message"]
        state = (runners.root / "first" / "state.json").read_text()
        runner_token = state.split('"token": "')[1].split('"')[0]
        assert httpx.get(f"{url}/api/runners", headers=_bearer(runner_token)).status_code == 401
        listing = httpx.get(f"{url}/api/runners", headers=_bearer(ADMIN)).json()
        scopes = {r["name"]: (r["scope"], r["grant_id"]) for r in listing["runners"]}
        assert scopes == {"first": (["github:1"], None), "second": (["github:2"], grant_id)}
        assert [g["note"] for g in listing["grants"]] == ["tenant two"]
        first_id = _runner_id(store, "first")
        assert httpx.delete(f"{url}/api/runners/{first_id}", headers=_bearer(REGISTRATION)).status_code == 401
        assert httpx.delete(f"{url}/api/runners/{first_id}", headers=_bearer(ADMIN)).status_code == 200
        assert first.wait(30) == 2 and "the server refuses this runner" in runners.log("first")
        # Revoking the scoped token removes the runners it registered; the token registers nobody any more.
        assert httpx.delete(f"{grants}/{grant_id}", headers=_bearer(ADMIN)).status_code == 200
        assert second.wait(30) == 2
        assert _register(url, grant_token).status_code == 401

        # A runner registered before scopes existed takes nothing until it registers again with one.
        legacy = _register(url, REGISTRATION, scope="deployment").json()
        store.db.execute("UPDATE runners SET scope = NULL WHERE id = ?", (legacy["runner"]["id"],))
        answer = httpx.post(f"{url}/api/runner/claim", headers=_bearer(legacy["token"]), params={"wait": "0"})
        assert answer.status_code == 401 and "without a scope" in answer.json()["message"]

        # The operator names the whole deployment explicitly: that runner takes the rest, the deployment's own too.
        runners.start("wide", "web", scope="deployment")
        wait_until(lambda: _job(store, site).status == _job(store, own).status == "done", "the remaining jobs")


def _runner_id(store: Store, name: str) -> int:
    ids = [r.id for r in store.runners.list_runners() if r.name == name]
    assert len(ids) == 1, store.runners.list_runners()
    return ids[0]
