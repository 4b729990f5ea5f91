"""A container runtime for the image tests: Docker's daemon, a base image, a local torch index.

These machines reach Debian's mirror and PyPI but no image registry, so the pieces the real
Dockerfile would pull are made here instead:
  * the daemon is Debian's `dockerd`, started with the flags that work in this sandbox (no
    iptables, no default bridge; overlay2 storage, else vfs) when none runs and we are root;
  * the base image named in the Dockerfile's FROM lines is a stand-in built by `debootstrap`
    from Debian bookworm with Debian's python3.11 (the official python:3.11-slim-bookworm is
    the same Debian release with a python.org build of 3.11), labelled so it can be told apart;
  * the stand-in trusts the local CA certificates this machine trusts, so pip inside the build
    reaches PyPI through the same TLS egress as pip outside it;
  * torch comes from a simple index served on loopback with the CPU wheel and its
    dependencies, passed through the Dockerfile's own TORCH_INDEX_URL build argument.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.config import ROOT_DIR

STAND_IN_LABEL = "org.shardlab.stand-in=debootstrap"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
# No iptables and no default bridge: this sandbox allows neither; compose makes its own network.
DOCKERD_FLAGS = ["--iptables=false", "--bridge=none"]
# overlay2 where the kernel mounts overlayfs (a full build in about 80 s here); vfs, which
# copies every layer whole, works anywhere but took 8.5 min for the same build.
STORAGE_DRIVERS = ("overlay2", "vfs")


class RuntimeMissing(Exception):
    """No container runtime can run here; the message says what was tried."""


def run(args: list[str], *, timeout_s: float = 60, check: bool = True, **kwargs: object):
    return subprocess.run(
        args, capture_output=True, text=True, timeout=timeout_s, check=check, **kwargs
    )


def _daemon_answers() -> bool:
    try:
        return run(["docker", "info"], timeout_s=20, check=False).returncode == 0
    except subprocess.TimeoutExpired:
        return False


@contextmanager
def docker_daemon(log_dir: Path) -> Iterator[None]:
    """A Docker daemon that answers: the one already running, or dockerd started here."""
    if shutil.which("docker") is None:
        raise RuntimeMissing("no docker client (Debian: apt-get install docker.io)")
    if _daemon_answers():
        yield
        return
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        raise RuntimeMissing("no Docker daemon answers, and dockerd cannot be started here")
    failures = []
    for driver in STORAGE_DRIVERS:
        log_path = log_dir / f"dockerd-{driver}.log"
        with log_path.open("w") as log:
            daemon = subprocess.Popen(
                ["dockerd", "--storage-driver", driver, *DOCKERD_FLAGS], stdout=log, stderr=log
            )
        deadline = time.monotonic() + 60
        while not _daemon_answers() and daemon.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        if daemon.poll() is None and _daemon_answers():
            break
        _stop(daemon)
        failures.append(f"{driver}: {log_path.read_text()[-1000:]}")
    else:
        raise RuntimeMissing("dockerd did not start: " + " | ".join(failures))
    try:
        yield
    finally:
        _stop(daemon)


def _stop(daemon: subprocess.Popen) -> None:
    daemon.terminate()
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()


def compose_command() -> list[str]:
    """Compose v2 (`docker compose`) where it is installed, else Debian 12's docker-compose."""
    if run(["docker", "compose", "version"], check=False).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise RuntimeMissing("no Compose (Debian: apt-get install docker-compose)")


def base_images(dockerfile: Path = ROOT_DIR / "Dockerfile") -> list[str]:
    """The images a Dockerfile starts FROM (its stages' own names excluded)."""
    text = dockerfile.read_text()
    stages = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", text, flags=re.M | re.I))
    return sorted(set(re.findall(r"^FROM\s+(\S+)", text, flags=re.M)) - stages)


def ensure_base_image(name: str, work_dir: Path) -> str:
    """'present' when the daemon has `name`, else builds the Debian stand-in and says so."""
    if run(["docker", "image", "inspect", name], check=False).returncode == 0:
        return "present"
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        raise RuntimeMissing(f"{name} is missing and debootstrap cannot build a stand-in")
    rootfs = work_dir / "rootfs"
    run(
        [
            "debootstrap",
            "--variant=minbase",
            "--include=python3,python3-venv,python-is-python3,ca-certificates",
            "bookworm",
            str(rootfs),
            DEBIAN_MIRROR,
        ],
        timeout_s=900,
    )
    # The build reaches PyPI through this machine's network, so the image trusts what this
    # machine trusts (here: the sandbox's TLS egress CA); a machine without local CAs adds none.
    for cert in Path("/usr/local/share/ca-certificates").glob("*.crt"):
        shutil.copy(cert, rootfs / "usr/local/share/ca-certificates" / cert.name)
    run(["chroot", str(rootfs), "update-ca-certificates"], timeout_s=120)
    for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for entry in (rootfs / cache).glob("*"):
            if entry.is_file():
                entry.unlink()
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    run(
        [
            "docker", "import",
            "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change", "ENV LANG=C.UTF-8",
            "--change", f"LABEL {STAND_IN_LABEL}",
            "--change", 'CMD ["python3"]',
            "-", name,
        ],
        stdin=tar.stdout,
        timeout_s=300,
    )  # fmt: skip
    tar.wait()
    shutil.rmtree(rootfs, ignore_errors=True)
    return "debootstrap stand-in"


@contextmanager
def local_torch_index(work_dir: Path, requirement: str) -> Iterator[str]:
    """A PEP 503 simple index on loopback holding `requirement` and what it depends on."""
    wheels = work_dir / "wheels"
    # This machine's pip finds the CPU wheel on disk; a CUDA build never enters the image.
    run(
        [sys.executable, "-m", "pip", "download", "--quiet", "-d", str(wheels), requirement],
        timeout_s=600,
    )
    for wheel in wheels.glob("*.whl"):
        project = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
        page = work_dir / "simple" / project / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f'<a href="../../wheels/{wheel.name}">{wheel.name}</a>\n')
    handler = functools.partial(QuietHandler, directory=str(work_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib's name
        pass


def torch_requirement() -> str:
    """The torch pin from pyproject.toml, which the Dockerfile installs first."""
    match = re.search(r'"(torch==[^"]+)"', (ROOT_DIR / "pyproject.toml").read_text())
    assert match, "pyproject.toml pins no torch"
    return match.group(1)


def build_image(tag: str, torch_index_url: str | None, context: Path = ROOT_DIR) -> float:
    """`docker build` of the Dockerfile in `context` (the repository's, by default); returns
    the seconds it took. torch_index_url is the app image's TORCH_INDEX_URL; None for an
    image that installs no torch (deploy/postgres).

    The classic builder: BuildKit is not part of Debian 12's docker.io. The build's RUN
    steps use the host's network (no bridge here) to reach PyPI, Debian's mirror and the
    loopback index.
    """
    started = time.monotonic()
    env = {**os.environ, "DOCKER_BUILDKIT": "0"}
    build_args = (
        [] if torch_index_url is None else ["--build-arg", f"TORCH_INDEX_URL={torch_index_url}"]
    )
    result = run(
        [
            "docker", "build", "--network", "host", *build_args,
            "--tag", tag, str(context),
        ],
        timeout_s=2400,
        check=False,
        env=env,
    )  # fmt: skip
    if result.returncode != 0:
        raise AssertionError(f"docker build failed:\n{result.stdout[-4000:]}\n{result.stderr}")
    return time.monotonic() - started


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="shardlab-container-"))
