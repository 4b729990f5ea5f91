"""Deployment files agree with the code: compose names real settings, the docs list them all."""

from __future__ import annotations

import ipaddress
import re

import yaml

from app.config import ROOT_DIR, Settings

PREFIX = "SHARDLAB_"


def _compose(name: str) -> dict:
    return yaml.safe_load((ROOT_DIR / name).read_text())


def _setting_names() -> set[str]:
    return {PREFIX + name.upper() for name in Settings.model_fields}


def test_compose_files_set_only_settings_that_exist() -> None:
    names = _setting_names()
    for file in ("compose.yaml", "compose.gpu.yaml"):
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
        assert f"`{shown}`" in rows[PREFIX + name.upper()], (name, rows[PREFIX + name.upper()])


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


def test_the_app_trusts_forwarded_headers_from_the_bundled_caddy_alone() -> None:
    # Issue #25, finding 3: FORWARDED_ALLOW_IPS=* let any client name its own address.
    compose = _compose("compose.yaml")
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
