"""App credentials that cannot fail late: every key form starts a worker, a bad one stops it, doctor names each fault.

The worker runs as `reprobot worker` against the GitHub double. An `installation` delivery queues the trigger
labels job, which mints an installation token with the key and creates the labels (named by the repo's policy).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from bot.cli import EXIT_ENVIRONMENT, EXIT_USAGE
from bot.cli.app_checks import github_app_checks
from bot.settings.config import Settings
from bot.store import JobRow
from tests.gh_env import INSTALLATION, GitHubEnv, load_payload
from tests.runner_procs import REPROBOT, _env

POLICY = "triggers:\n  labels:\n    fix: needs-fix\n"


def _key_forms(pem: str, tmp_path: Path) -> dict[str, dict[str, str]]:
    """Each way a deployment may hold the App's key, as the variables it sets."""
    key_file = tmp_path / "app.pem"
    key_file.write_text(pem)
    return {
        "pem": {"REPROBOT_GITHUB_PRIVATE_KEY": pem},
        "escaped": {"REPROBOT_GITHUB_PRIVATE_KEY": pem.strip().replace("\n", "\\n")},
        "base64": {"REPROBOT_GITHUB_PRIVATE_KEY": base64.b64encode(pem.encode()).decode()},
        "path": {"REPROBOT_GITHUB_PRIVATE_KEY": str(key_file)},
        "path variable": {"REPROBOT_GITHUB_PRIVATE_KEY_PATH": str(key_file)},
    }


def _app_env(env: GitHubEnv, **extra: str) -> dict[str, str]:
    """A worker's (or doctor's) environment: the double's addresses, the test store, no App credentials yet."""
    return _env(
        {
            "REPROBOT_DATA_DIR": str(env.settings.data_dir),
            "REPROBOT_GITHUB_API_URL": env.double.url,
            "REPROBOT_GITHUB_GIT_URL": env.double.git_url,
            "REPROBOT_GITHUB_RETRY_BASE": "0.05",
            "REPROBOT_WORKER_POLL": "0.1",
        }
        | extra
    )


async def _until_done(env: GitHubEnv, delivery: str, proc: asyncio.subprocess.Process) -> JobRow:
    """The labels job of `delivery`, once the worker process finished it."""
    for _ in range(300):
        jobs = await asyncio.to_thread(env.store.jobs.list_jobs)
        found = [j for j in jobs if j.kind == "github.labels" and j.payload.get("delivery_id") == delivery]
        if found and found[0].status in ("done", "dead"):
            return found[0]
        assert proc.returncode is None, "the worker exited"
        await asyncio.sleep(0.1)
    raise AssertionError(f"the labels job of {delivery} did not finish")


async def _stop(proc: asyncio.subprocess.Process) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = await asyncio.wait_for(proc.communicate(), 20)
    except TimeoutError:
        proc.kill()
        _, err = await proc.communicate()
    return err.decode(errors="replace")


def _installation(repo: str) -> dict[str, Any]:
    data = load_payload("installation", "created")
    data["installation"] = dict(data["installation"], id=INSTALLATION)
    data["repositories"] = [{"id": 1, "node_id": "R_1", "name": repo.split("/")[1], "full_name": repo}]
    return data


async def test_a_worker_starts_with_each_key_form_and_creates_the_trigger_labels(
    tmp_path: Path, settings: Settings
) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        src = tmp_path / "src"
        (src / ".github").mkdir(parents=True)
        (src / "m.py").write_text("X = 1\n")
        (src / ".github" / "reprobot.yml").write_text(POLICY)
        repo = env.double.add_repo("octo/app", src, installation_id=INSTALLATION)
        results = {}
        for form, variables in _key_forms(env.double.private_key_pem, tmp_path).items():
            delivery = f"install-{form}"
            status, answer = await env.send("installation", _installation("octo/app"), delivery_id=delivery)
            assert (status, answer["jobs"]) == (202, ["github.labels"])
            minted = sum(c[0] == "apps/create-installation-access-token" for c in env.double.calls)
            proc = await asyncio.create_subprocess_exec(
                *REPROBOT,
                "worker",
                env=_app_env(env, REPROBOT_GITHUB_APP_ID=env.double.app_id, **variables),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            try:
                job = await _until_done(env, delivery, proc)
            finally:
                log = await _stop(proc)
            assert job.status == "done", (form, job.last_error, log)
            assert sum(c[0] == "apps/create-installation-access-token" for c in env.double.calls) == minted + 1, form
            results[form] = job.result
        # The policy names the fix label; the reproduce label keeps its default. The first install creates both;
        # every later one finds them (GitHub's 422 already_exists) and is done all the same.
        assert set(repo.label_defs) == {"needs-fix", "reprobot:reproduce"}
        assert results["pem"] == {"status": "done", "created": ["needs-fix", "reprobot:reproduce"], "existed": []}
        for form in ("escaped", "base64", "path", "path variable"):
            assert results[form]["existed"] == ["needs-fix", "reprobot:reproduce"], form
        creates = [c for c in env.double.calls if c[0] == "issues/create-label"]
        assert len(creates) == 2 * len(results)


@pytest.mark.parametrize(
    "bad",
    [
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-not-a-key",
        "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkq\\n-----END PRIVATE KEY-----",
    ],
    ids=["garbage", "truncated-pem"],
)
async def test_a_worker_refuses_to_start_with_a_key_it_cannot_read(
    tmp_path: Path, settings: Settings, bad: str
) -> None:
    env = _env({"REPROBOT_DATA_DIR": str(settings.data_dir), "REPROBOT_GITHUB_APP_ID": "4242"})
    proc = await asyncio.create_subprocess_exec(
        *REPROBOT,
        "worker",
        env=env | {"REPROBOT_GITHUB_PRIVATE_KEY": bad},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == EXIT_USAGE
    text = (out + err).decode()
    assert "REPROBOT_GITHUB_PRIVATE_KEY" in text and "MIIEvQIBADANBgkq" not in text


async def _doctor(env: dict[str, str]) -> tuple[int, dict[str, dict[str, str]]]:
    proc = await asyncio.create_subprocess_exec(
        *REPROBOT, "doctor", "--json", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, {c["name"]: c for c in json.loads(out)["checks"]}


async def test_doctor_json_names_a_bad_key_a_missing_secret_and_a_wrong_app_id(
    tmp_path: Path, settings: Settings
) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        pem = env.double.private_key_pem
        # A key that is no key, and no webhook secret: two checks fail, each by its name; GitHub is not asked.
        code, checks = await _doctor(
            _app_env(env, REPROBOT_GITHUB_APP_ID=env.double.app_id, REPROBOT_GITHUB_PRIVATE_KEY="not-a-key")
        )
        assert code == EXIT_ENVIRONMENT
        assert checks["github app key"]["status"] == "fail" and "not-a-key" not in checks["github app key"]["detail"]
        assert checks["github webhook secret"]["status"] == "fail"
        assert "REPROBOT_GITHUB_WEBHOOK_SECRET" in checks["github webhook secret"]["detail"]
        assert checks["github app id"]["status"] == "warn"
        assert not any(c[0] == "apps/get-authenticated" for c in env.double.calls)
        # A good key with another App's id: GitHub refuses the JWT, and the App id check says so.
        wrong = {"REPROBOT_GITHUB_APP_ID": "999999", "REPROBOT_GITHUB_PRIVATE_KEY": pem}
        code, checks = await _doctor(_app_env(env, REPROBOT_GITHUB_WEBHOOK_SECRET="s3cret-for-doctor", **wrong))
        assert code == EXIT_ENVIRONMENT
        assert checks["github app key"]["status"] == checks["github webhook secret"]["status"] == "ok"
        assert checks["github app id"]["status"] == "fail" and "999999" in checks["github app id"]["detail"]
        assert "s3cret-for-doctor" not in json.dumps(checks)
        # The right id (in-process: the same checks): GET /app names the App, which has the manifest's permissions.
        key, _secret, app_id = await github_app_checks(env.settings)
        assert (key.status, app_id.status) == ("ok", "ok"), app_id
        assert "'reprobot'" in app_id.detail


async def test_doctor_stays_offline_and_green_without_an_app(settings: Settings) -> None:
    assert not any(k.startswith("REPROBOT_GITHUB") for k in os.environ)
    checks = await github_app_checks(settings)
    assert [(c.name, c.status) for c in checks] == [
        ("github app key", "ok"),
        ("github webhook secret", "ok"),
        ("github app id", "ok"),
    ]
    assert all(c.detail.startswith("not configured") for c in checks)


def test_one_parser_reads_every_key_form_and_never_echoes_a_bad_one(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    from bot.forges.github_client import GitHubConfigError, load_private_key

    def pem_of(key: Any) -> str:
        return str(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
            ).decode()
        )

    pem = pem_of(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    forms = [variables.popitem()[1] for variables in _key_forms(pem, tmp_path).values()]
    forms.append(pem.replace("\n", " "))  # a paste that turned the newlines into spaces
    forms.append(pem.replace("\n", "\r\n"))
    assert {load_private_key(form) for form in forms} == {pem}
    body = pem.splitlines()[1]
    for bad in (
        "not-a-key",
        pem.replace(body, body[::-1]),
        str(tmp_path / "missing.pem"),
        pem_of(ec.generate_private_key(ec.SECP256R1())),
    ):
        with pytest.raises(GitHubConfigError, match="REPROBOT_GITHUB_PRIVATE_KEY") as caught:
            load_private_key(bad)
        assert body not in str(caught.value) and "not-a-key" not in str(caught.value)
