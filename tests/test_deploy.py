"""Deployment files agree with the code: compose names real settings, the docs list them all."""

from __future__ import annotations

import ipaddress
import re

import pytest
import yaml
from pydantic import AliasChoices
from pydantic.fields import FieldInfo

from app.config import ROOT_DIR, Settings
from tests.utils import dockerfile_command

PREFIX = "SHARDLAB_"


def _compose(name: str) -> dict:
    return yaml.safe_load((ROOT_DIR / name).read_text())


def _env_name(name: str, field: FieldInfo) -> str:
    """The variable a setting is read from: its alias where it has one (the field
    database_url_setting is SHARDLAB_DATABASE_URL), else the prefix and the field's name."""
    if isinstance(field.validation_alias, AliasChoices):
        return next(
            choice
            for choice in field.validation_alias.choices
            if isinstance(choice, str) and choice.startswith(PREFIX)
        )
    return PREFIX + name.upper()


def _setting_names() -> set[str]:
    return {_env_name(name, field) for name, field in Settings.model_fields.items()}


def test_compose_files_set_only_settings_that_exist() -> None:
    names = _setting_names()
    for file in ("compose.yaml", "compose.gpu.yaml", "compose.cohort.yaml"):
        for service, spec in _compose(file)["services"].items():
            for key in spec.get("environment", {}):
                if key.startswith(PREFIX):
                    assert key in names, f"{file}: {service} sets unknown {key}"


def test_the_settings_table_lists_every_setting_with_its_default() -> None:
    doc = (ROOT_DIR / "docs/self-hosting.md").read_text()
    rows = dict(re.findall(r"^\| `(SHARDLAB_[A-Z_]+)` \| ([^|]+) \|", doc, flags=re.M))
    assert set(rows) == _setting_names()
    for name, field in Settings.model_fields.items():
        default = field.default
        if default is None or name in ("content_dir", "data_dir"):
            continue  # generated or a path; described in words
        shown = str(default).lower() if isinstance(default, bool) else str(default)
        row = rows[_env_name(name, field)]
        assert f"`{shown}`" in row, (name, row)


def test_the_readme_points_at_the_one_table() -> None:
    readme = (ROOT_DIR / "README.md").read_text()
    assert "docs/self-hosting.md#settings" in readme
    assert "| `SHARDLAB_" not in readme  # one table, not two


def test_the_gpu_worker_listens_where_the_app_looks_and_shares_its_token() -> None:
    gpu = _compose("compose.gpu.yaml")["services"]
    app_env, worker = gpu["app"]["environment"], gpu["worker"]
    host, port = app_env["SHARDLAB_WORKER_ADDRESS"].split(":")
    command = " ".join(worker["command"])
    assert host == "worker" and f"--listen=0.0.0.0:{port}" in command
    assert command.startswith("torchrun") and "-m demos.worker" in command
    assert "--backend=nccl" in command and app_env["SHARDLAB_WORKER_SPAWN"] == "false"
    assert app_env["SHARDLAB_WORKER_TOKEN"] == worker["environment"]["SHARDLAB_WORKER_TOKEN"]
    assert "ports" not in worker  # only the app, on the compose network, reaches it
    assert worker["build"]["args"]["TORCH_INDEX_URL"] == "https://pypi.org/simple"


def test_the_cpu_app_keeps_its_data_on_the_volume_and_publishes_on_loopback() -> None:
    app = _compose("compose.yaml")["services"]["app"]
    assert "shardlab-data:/data" in app["volumes"]
    assert app["environment"]["SHARDLAB_DATA_DIR"] == "/data"
    assert app["ports"] == ["${PUBLISH:-127.0.0.1:8000}:8000"]


def test_the_image_runs_unprivileged_with_a_health_check_and_no_secrets() -> None:
    dockerfile = (ROOT_DIR / "Dockerfile").read_text()
    assert re.search(r"^USER 10001:10001$", dockerfile, flags=re.M)
    assert "HEALTHCHECK" in dockerfile and "/healthz" in dockerfile
    assert "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in dockerfile
    ignored = (ROOT_DIR / ".dockerignore").read_text().split()
    assert {".env", "data", ".venv", ".git"} <= set(ignored)


@pytest.mark.parametrize("file", ["compose.yaml", "compose.cohort.yaml"])
def test_the_app_trusts_forwarded_headers_from_the_bundled_caddy_alone(file: str) -> None:
    # Issue #25, finding 3: FORWARDED_ALLOW_IPS=* let any client name its own address.
    compose = _compose(file)
    trusted = compose["services"]["app"]["environment"]["SHARDLAB_TRUSTED_PROXIES"]
    caddy = compose["services"]["caddy"]["networks"]["default"]["ipv4_address"]
    assert trusted == f"${{SHARDLAB_TRUSTED_PROXIES:-{caddy}}}"
    (ipam,) = compose["networks"]["default"]["ipam"]["config"]
    subnet, dynamic = ipaddress.ip_network(ipam["subnet"]), ipaddress.ip_network(ipam["ip_range"])
    caddy_address = ipaddress.ip_address(caddy)
    # On the network, never handed to another container, and not the gateway that a
    # published port's connections come from.
    assert caddy_address in subnet and dynamic.subnet_of(subnet)
    assert caddy_address not in dynamic and caddy != ipam["gateway"]
    assert "FORWARDED_ALLOW_IPS" not in compose["services"]["app"]["environment"]
    # uvicorn must not rewrite the client before the app reads the headers itself.
    assert '"--no-proxy-headers"' in (ROOT_DIR / "Dockerfile").read_text()


def test_the_cohort_app_finds_its_database_and_worker_on_the_compose_network() -> None:
    cohort = _compose("compose.cohort.yaml")["services"]
    app_env, db, worker = cohort["app"]["environment"], cohort["db"], cohort["worker"]
    # The user and database deploy/postgres makes on its first start, with the one password.
    postgres = (ROOT_DIR / "deploy/postgres/Dockerfile").read_text()
    assert "POSTGRES_USER=shardlab POSTGRES_DB=shardlab" in postgres
    password = db["environment"]["POSTGRES_PASSWORD"]
    assert password.startswith("${POSTGRES_PASSWORD:?")
    url = app_env["SHARDLAB_DATABASE_URL"]
    assert url == f"postgresql+psycopg://shardlab:{password}@db:5432/shardlab"
    assert app_env["SHARDLAB_WORKER_ADDRESSES"] == "${SHARDLAB_WORKER_ADDRESSES:-worker:29581}"
    assert "--listen=0.0.0.0:29581" in worker["command"]
    assert app_env["SHARDLAB_WORKER_TOKEN"] == worker["environment"]["SHARDLAB_WORKER_TOKEN"]
    assert app_env["SHARDLAB_WORKER_TOKEN"].startswith("${SHARDLAB_WORKER_TOKEN:?")
    assert app_env["SHARDLAB_WORKER_SPAWN"] == "false"
    # Several processes sign one session cookie: none may generate a key of its own.
    assert app_env["SHARDLAB_SECRET_KEY"].startswith("${SHARDLAB_SECRET_KEY:?")
    assert "ports" not in db and "ports" not in worker  # the compose network only
    assert cohort["app"]["depends_on"]["db"] == {"condition": "service_healthy"}


def test_the_cohort_runs_several_web_processes_as_the_image_runs_one() -> None:
    command = _compose("compose.cohort.yaml")["services"]["app"]["command"]
    assert command[:3] == ["uvicorn", "--factory", "app.main:create_app"]
    assert "--workers=${WEB_WORKERS:-4}" in command
    image = dockerfile_command()
    # Whatever else the image's own command says stays true with several processes.
    for flag in ("--no-proxy-headers", "--timeout-graceful-shutdown", "--loop"):
        assert flag in image and any(part.startswith(flag) for part in command)


def test_one_process_runs_the_standard_event_loop_and_several_run_uvloop() -> None:
    # uvloop takes one waiting connection per turn of its loop: one process answering pages on
    # the loop made a burst of new connections wait turn after turn (p99 0.3-1 s), while
    # several processes sharing a port share the burst that way (docs/benchmarks.md).
    image = dockerfile_command()
    cohort = _compose("compose.cohort.yaml")["services"]["app"]["command"]
    serve = (ROOT_DIR / "scripts" / "serve").read_text()
    assert image[image.index("--loop") + 1] == "asyncio"
    assert re.search(r"^\s+--loop asyncio\b", serve, re.M)
    assert "--loop=uvloop" in cohort


def test_every_deployment_keeps_an_idle_connection_75_s() -> None:
    # A learner's pause between pages is longer than uvicorn's default 5 s: the image's own
    # server is asked twice on one connection in tests/test_kept_connections.py.
    image = dockerfile_command()
    cohort = _compose("compose.cohort.yaml")["services"]["app"]["command"]
    serve = (ROOT_DIR / "scripts" / "serve").read_text()
    assert image[image.index("--timeout-keep-alive") + 1] == "75"
    assert "--timeout-keep-alive=75" in cohort
    assert re.search(r"--timeout-keep-alive 75\b", serve)


def test_the_cohort_and_the_single_box_can_share_a_host() -> None:
    def subnet(file: str) -> ipaddress.IPv4Network:
        (ipam,) = _compose(file)["networks"]["default"]["ipam"]["config"]
        return ipaddress.ip_network(ipam["subnet"])

    assert not subnet("compose.yaml").overlaps(subnet("compose.cohort.yaml"))
    single = _compose("compose.yaml")["volumes"]["shardlab-data"]["name"]
    cohort = {v["name"] for v in _compose("compose.cohort.yaml")["volumes"].values() if v}
    assert single not in cohort
