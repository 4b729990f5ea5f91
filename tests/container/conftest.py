"""Fixtures for the image tests: the real Dockerfile built, and compose.yaml started.

Skipped, with the reason, where no container runtime can run; SHARDLAB_REQUIRE_CONTAINER=1
(set by .ci/run, which installs the runtime) turns that skip into a failure.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from app.config import ROOT_DIR
from tests.container import runtime
from tests.utils import free_port

IMAGE_TAG = "shardlab:test"
PROJECT = "shardlab-test"
HEALTHY_WITHIN_S = 150  # the HEALTHCHECK's start period and interval are 30 s each


@pytest.fixture(scope="session")
def container_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    try:
        with runtime.docker_daemon(tmp_path_factory.mktemp("dockerd")):
            yield
    except runtime.RuntimeMissing as missing:
        if os.environ.get("SHARDLAB_REQUIRE_CONTAINER") == "1":
            pytest.fail(f"no container runtime, but SHARDLAB_REQUIRE_CONTAINER=1: {missing}")
        pytest.skip(f"no container runtime here: {missing}")


@pytest.fixture(scope="session")
def image(container_daemon: None, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The image built from the repository's Dockerfile, tagged IMAGE_TAG."""
    for base in runtime.base_images():
        runtime.ensure_base_image(base, tmp_path_factory.mktemp("base"))
    index_dir = tmp_path_factory.mktemp("torch-index")
    with runtime.local_torch_index(index_dir, runtime.torch_requirement()) as index_url:
        runtime.build_image(IMAGE_TAG, index_url)
    # Earlier test builds of the same tag are now untagged layers of a GB each (vfs).
    runtime.run(["docker", "image", "prune", "--force"], timeout_s=300, check=False)
    return IMAGE_TAG


@dataclass
class Stack:
    """A compose file (compose.yaml unless told) started as `project`, its app published on
    base_url."""

    compose: list[str]
    env: dict[str, str]
    base_url: str
    healthy_after_s: float = 0.0
    project: str = PROJECT
    compose_file: str = "compose.yaml"

    def __call__(self, *args: str, stdin: str | None = None, timeout_s: float = 120) -> str:
        result = runtime.run(
            [*self.compose, "-p", self.project, "-f", self.compose_file, *args],
            timeout_s=timeout_s,
            check=False,
            cwd=ROOT_DIR,
            env=self.env,
            input=stdin,
        )
        assert result.returncode == 0, (
            f"compose {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
        )
        return result.stdout

    def container_id(self) -> str:
        return self("ps", "-q", "app").strip()

    def inspect(self) -> dict:
        out = runtime.run(["docker", "inspect", self.container_id()]).stdout
        return json.loads(out)[0]

    def wait_healthy(self) -> float:
        """Seconds until Docker's own HEALTHCHECK reports the container healthy."""
        started = time.monotonic()
        while True:
            state = self.inspect()["State"]
            if state.get("Health", {}).get("Status") == "healthy":
                return time.monotonic() - started
            assert state["Running"], f"the container stopped: {self('logs', 'app')[-3000:]}"
            if time.monotonic() - started > HEALTHY_WITHIN_S:
                raise AssertionError(f"not healthy: {state.get('Health')}")
            time.sleep(1)

    def wait_serving(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the app did not come back"
            time.sleep(0.5)


@pytest.fixture(scope="module")
def stack(image: str) -> Iterator[Stack]:
    port = free_port()
    env = {
        **os.environ,
        "IMAGE": image,
        "PUBLISH": f"127.0.0.1:{port}",
        # Never the default volume: a real instance on this host keeps its data.
        "DATA_VOLUME": f"{PROJECT}-data",
        "SHARDLAB_SECRET_KEY": secrets.token_hex(32),
        # Two ranks: CI has two cores, and the demo's checks hold for any N.
        "SHARDLAB_WORKER_RANKS": "2",
    }
    compose = runtime.compose_command()
    stack = Stack(compose, env, f"http://127.0.0.1:{port}")
    stack("down", "--volumes", "--remove-orphans")  # what a killed earlier run left
    try:
        stack("up", "--detach", "--no-build", "app", timeout_s=300)
        stack.healthy_after_s = stack.wait_healthy()
        yield stack
    finally:
        stack("down", "--volumes", "--timeout", "20", timeout_s=180)
