"""deploy/: the compose file passes `docker compose config` (or docker-compose's), the kustomize overlay renders
with `kubectl kustomize` and holds what a deployment needs, and the image builds here from the locally built base
and runs non-root."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
COMPOSE_ENV = {
    "POSTGRES_PASSWORD": "pw",
    "REPROBOT_GITHUB_APP_ID": "1",
    "REPROBOT_GITHUB_PRIVATE_KEY": "pem",
    "REPROBOT_GITHUB_WEBHOOK_SECRET": "hook",
}


def tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (Debian package {package}; .ci/system-packages test)")
    return found


def compose_command() -> list[str]:
    """`docker compose` (the plugin) when the docker CLI has it, else docker-compose; skips when neither is here."""
    docker = shutil.which("docker")
    if docker is not None:
        plugin = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=60)
        if plugin.returncode == 0:
            return [docker, "compose"]
    return [tool("docker-compose", "docker-compose")]


def compose_config(extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPROBOT_", "POSTGRES_"))} | extra_env
    return subprocess.run(
        [*compose_command(), "-f", str(DEPLOY / "docker-compose.yml"), "config"],
        cwd=DEPLOY,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_compose_config() -> None:
    run = compose_config(COMPOSE_ENV)
    assert run.returncode == 0, run.stderr
    config = yaml.safe_load(run.stdout)
    services = config["services"]
    assert set(services) == {"web", "worker", "postgres", "data-dir"}
    # The Compose Specification: no `version:` key (docker compose warns that it is obsolete).
    assert "version" not in yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    assert services["worker"]["scale"] >= 2
    assert services["web"]["build"]["dockerfile"] == "deploy/Dockerfile"
    assert services["web"]["build"]["args"]["BASE_IMAGE"] == "python:3.11-slim-bookworm"
    assert "pgdata" in config["volumes"]
    assert any(str(v).startswith("pgdata:") for v in services["postgres"]["volumes"])
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["REPROBOT_DATABASE_URL"] == "postgresql://reprobot:pw@postgres:5432/reprobot"
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["worker"]["environment"]["REPROBOT_METRICS_PORT"] == "9100"
    for name, port in (("web", 8000), ("worker", 9100)):  # liveness: /healthz (worker: on its metrics port)
        assert f"http://127.0.0.1:{port}/healthz" in " ".join(services[name]["healthcheck"]["test"])
    # A missing secret is refused by name rather than deployed empty.
    missing = compose_config({k: v for k, v in COMPOSE_ENV.items() if k != "REPROBOT_GITHUB_WEBHOOK_SECRET"})
    assert missing.returncode != 0 and "REPROBOT_GITHUB_WEBHOOK_SECRET" in missing.stderr


def _binds(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(source, target) of a service's volumes, in the short or the long syntax `config` prints."""
    out = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            out.append((str(volume["source"]), str(volume["target"])))
        else:
            source, target = str(volume).split(":")[:2]
            out.append((source, target))
    return out


@pytest.mark.parametrize("host_dir", [None, "/srv/reprobot-data"])
def test_compose_data_dir_is_the_same_path_everywhere_and_owned_by_the_app_user(host_dir: str | None) -> None:
    """REPROBOT_HOST_DATA_DIR is the bind source and the path inside (the engine resolves sandbox mounts with
    host paths), and the one-shot data-dir service hands it to uid 10001 before web and workers start."""
    extra = {"REPROBOT_HOST_DATA_DIR": host_dir} if host_dir else {}
    run = compose_config(COMPOSE_ENV | extra)
    assert run.returncode == 0, run.stderr
    services = yaml.safe_load(run.stdout)["services"]
    path = host_dir or "/var/lib/reprobot"
    init = services["data-dir"]
    assert (path, path) in _binds(init)
    assert init["command"] == ["chown", "10001:10001", path] and str(init["user"]).startswith("0")
    for name in ("web", "worker"):
        assert (path, path) in _binds(services[name])
        assert services[name]["environment"]["REPROBOT_DATA_DIR"] == path
        assert services[name]["depends_on"]["data-dir"]["condition"] == "service_completed_successfully"


def render(overlay: str, *, secrets: bool = True) -> subprocess.CompletedProcess[str]:
    """`kubectl kustomize` of a copy of deploy/k8s, with the overlay's secrets.env made from its template, as a
    user makes it (the checkout's own secrets.env, git-ignored, is neither read nor written)."""
    kubectl = tool("kubectl", "kubernetes-client")
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "k8s"
        shutil.copytree(DEPLOY / "k8s", tree, ignore=shutil.ignore_patterns("secrets.env"))
        folder = tree / "overlays" / overlay
        if secrets:
            shutil.copy2(folder / "secrets.env.example", folder / "secrets.env")
        return subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=60)


def kustomize(overlay: str = "example") -> list[dict[str, Any]]:
    run = render(overlay)
    assert run.returncode == 0, run.stderr
    return [doc for doc in yaml.safe_load_all(run.stdout) if doc]


def test_the_overlay_reads_the_secrets_file_the_user_creates() -> None:
    missing = render("example", secrets=False)
    assert missing.returncode != 0 and "secrets.env" in missing.stderr
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "deploy/k8s/overlays/example/secrets.env"], cwd=ROOT, timeout=60
    )
    assert ignored.returncode == 0, "secrets.env must be git-ignored"
    by = {(d["kind"], d["metadata"]["name"]): d for d in kustomize()}
    secret = by[("Secret", next(n for k, n in by if k == "Secret"))]
    assert "REPROBOT_GITHUB_WEBHOOK_SECRET" in secret["data"]


def test_pods_get_no_service_account_token() -> None:
    by = {(d["kind"], d["metadata"]["name"]): d for d in kustomize()}
    assert by[("ServiceAccount", "reprobot")]["automountServiceAccountToken"] is False
    for name in ("reprobot-web", "reprobot-worker"):
        spec = by[("Deployment", name)]["spec"]["template"]["spec"]
        assert spec["automountServiceAccountToken"] is False and spec["serviceAccountName"] == "reprobot"
    worker = by[("Deployment", "reprobot-worker")]["spec"]["template"]["spec"]["containers"][0]
    assert worker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}


def test_kustomize_overlay_renders_a_complete_deployment() -> None:
    docs = kustomize()
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    for key in [
        ("Deployment", "reprobot-web"),
        ("Deployment", "reprobot-worker"),
        ("Service", "reprobot-web"),
        ("Ingress", "reprobot-web"),
        ("Secret", "reprobot-secrets"),
        ("ConfigMap", "reprobot-config"),
        ("PodDisruptionBudget", "reprobot-web"),
        ("PodDisruptionBudget", "reprobot-worker"),
    ]:
        assert key in by, key
        assert by[key]["metadata"]["namespace"] == "reprobot"
    web, worker = by[("Deployment", "reprobot-web")], by[("Deployment", "reprobot-worker")]
    assert worker["spec"]["replicas"] == 3  # the overlay's count
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["image"] == "registry.example.org/reprobot/app:0.1.0"
    for deployment in (web, worker):
        spec = deployment["spec"]["template"]["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in deployment["spec"]["selector"]["matchLabels"].items())
        for c in spec["containers"]:
            assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
            assert c["securityContext"]["allowPrivilegeEscalation"] is False
            refs = {r.get("configMapRef", r.get("secretRef", {})).get("name") for r in c["envFrom"]}
            assert refs == {"reprobot-config", "reprobot-secrets"}
    service = by[("Service", "reprobot-web")]
    assert service["spec"]["selector"].items() <= web["spec"]["template"]["metadata"]["labels"].items()
    backend = by[("Ingress", "reprobot-web")]["spec"]["rules"][0]
    assert backend["host"] == "reprobot.example.com"
    assert backend["http"]["paths"][0]["backend"]["service"]["name"] == "reprobot-web"
    for name in ("reprobot-web", "reprobot-worker"):
        pdb = by[("PodDisruptionBudget", name)]
        target = by[("Deployment", name)]["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= target.items()
    assert by[("ConfigMap", "reprobot-config")]["data"]["REPROBOT_MAX_RUNNING_JOBS"] == "6"


def _routes(path: str, rule: dict[str, Any]) -> bool:
    """True when an Ingress path rule sends `path` to its backend (Prefix matches whole path elements)."""
    if rule.get("pathType") == "Exact":
        return bool(path == rule["path"])
    prefix = str(rule["path"]).rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def test_ingress_and_service_do_not_expose_metrics() -> None:
    """/metrics is on REPROBOT_METRICS_PORT, which the Service does not carry, and no Ingress path routes it."""
    docs = kustomize()
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    rules = [r for rule in by[("Ingress", "reprobot-web")]["spec"]["rules"] for r in rule["http"]["paths"]]
    assert not [r["path"] for r in rules if _routes("/metrics", r)]
    # What the outside needs is still routed: webhooks, the dashboard, the runner API and its artifacts.
    for path in ("/webhooks/github", "/webhooks/jira", "/dashboard/login", "/api/runner/claim", "/artifacts/a/b"):
        assert any(_routes(path, r) for r in rules), path
    metrics_port = int(by[("ConfigMap", "reprobot-config")]["data"]["REPROBOT_METRICS_PORT"])
    pod = by[("Deployment", "reprobot-web")]["spec"]["template"]
    ports = {p["name"]: p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]}
    assert ports["metrics"] == metrics_port and ports["http"] != metrics_port
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(metrics_port)
    targets = [p["targetPort"] for p in by[("Service", "reprobot-web")]["spec"]["ports"]]
    assert targets and all(t in ("http", ports["http"]) for t in targets)
    # The dashboard's OAuth callback and form origin are the Ingress host's, not whatever Host a client sends.
    host = by[("Ingress", "reprobot-web")]["spec"]["rules"][0]["host"]
    assert by[("ConfigMap", "reprobot-config")]["data"]["REPROBOT_PUBLIC_URL"] == f"https://{host}"
    # Compose: the web's published port is not its metrics port.
    run = compose_config(COMPOSE_ENV)
    assert run.returncode == 0, run.stderr
    web = yaml.safe_load(run.stdout)["services"]["web"]
    assert web["environment"]["REPROBOT_METRICS_PORT"] == "9100"
    assert all(str(p["target"]) != "9100" for p in web["ports"])


def test_dockerfile_structure() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert lines[0] == "ARG BASE_IMAGE=python:3.11-slim-bookworm"
    assert sum(1 for line in lines if line.startswith("FROM ${BASE_IMAGE}")) == 2  # multi-stage, one base
    users = [line for line in lines if line.startswith("USER ")]
    assert users[-1] == "USER 10001:10001"  # the image runs non-root
    assert "COPY --from=build /opt/reprobot /opt/reprobot" in lines


def _docker_ready() -> str:
    from sandboxes.baseimage import image_exists, image_tag
    from sandboxes.factory import available_backends

    problem = available_backends()["docker"]
    if problem is not None:
        pytest.skip(f"no docker engine here: {problem}")
    tag = image_tag()
    if not image_exists(tag):
        pytest.skip(f"the local base image {tag} is not built (reprobot sandbox build-base)")
    return tag


def _wheels(into: Path) -> None:
    """The dependencies' wheels from `make image-wheels` (the build then reaches no package index)."""
    have = ROOT / ".reprobot" / "image-wheels"
    if not (have / ".stamp").exists():
        pytest.skip(f"no dependency wheels in {have}: run `make image-wheels` (make test does it first)")
    into.mkdir(parents=True)
    for wheel in have.glob("*.whl"):
        os.link(wheel, into / wheel.name)


# The first build here installs the apt packages and every wheel (minutes on a busy machine); later builds
# reuse the cached layers and take seconds.
@pytest.mark.timeout(1800)
def test_image_builds_from_the_local_base_and_runs_non_root(tmp_path: Path) -> None:
    base = _docker_ready()
    context = tmp_path / "context"
    context.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for item in ("bot", "handlers", "agents", "sandboxes", "patch_selectors"):
        shutil.copytree(ROOT / item, context / item, ignore=ignore)
    for item in ("pyproject.toml", "README.md", ".dockerignore"):
        shutil.copy2(ROOT / item, context / item)
    (context / "deploy").mkdir()
    shutil.copy2(DEPLOY / "Dockerfile", context / "deploy" / "Dockerfile")
    _wheels(context / "deploy" / "wheels")
    image = "reprobot/app:test"
    build = subprocess.run(
        ["docker", "build", "-q", "-f", "deploy/Dockerfile", "--build-arg", f"BASE_IMAGE={base}", "-t", image, "."],
        cwd=context,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    # Run the image this build made, by its id (what -q prints): a test run beside this one (another worker,
    # another checkout on the machine) may move the shared tag meanwhile.
    built = build.stdout.strip().splitlines()[-1]
    assert built.startswith("sha256:"), build.stdout[-3000:]
    run = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            built,
            "sh",
            "-c",
            "id -u && reprobot --help >/dev/null && python3 -c 'import bot.dashboard, prometheus_client' && echo ok",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    uid, ok = run.stdout.split()
    assert uid == "10001" and ok == "ok"
