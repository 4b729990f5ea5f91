# syntax=docker/dockerfile:1
# ShardLab on one CPU box: the web app plus a local demo worker of gloo ranks.
# Settings: SHARDLAB_* environment variables (docs/self-hosting.md has the table).
FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /build
RUN python -m venv /opt/venv
ENV PATH="/opt/venv/bin:$PATH"
# CPU torch from PyTorch's CPU index, first: PyPI's default Linux wheel depends on the
# CUDA stack (gigabytes this image never uses). compose.gpu.yaml builds the GPU worker's
# image with TORCH_INDEX_URL=https://pypi.org/simple, whose Linux wheel brings CUDA and NCCL.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN pip install --index-url "${TORCH_INDEX_URL}" torch==2.13.0
COPY pyproject.toml README.md ./
COPY app ./app
COPY demos ./demos
# Dependencies only: the app runs from /app (its templates, static files and content sit
# beside the code), so the installed copy of the package itself is removed again.
RUN pip install . && pip uninstall --yes shardlab

FROM python:3.11-slim-bookworm
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PATH="/opt/venv/bin:$PATH" \
    SHARDLAB_DATA_DIR=/data
# pg_dump, pg_restore and psql, which `python -m app.admin backup`/`restore` run when the
# database is PostgreSQL (compose.cohort.yaml): Debian's client of the same major version as
# deploy/postgres's server. About 40 MB; a single box on SQLite never calls them.
# The package name pins the major version; an exact Debian version would stop building at the
# next security update, which removes the old one from the archive.
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends postgresql-client-15 \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 shardlab \
    && useradd --system --no-log-init --uid 10001 --gid 10001 --home-dir /app --no-create-home shardlab \
    && mkdir -p /data && chown 10001:10001 /data
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY --chown=10001:10001 . .
# Static files at their fingerprinted paths with gzip and brotli siblings (build/static/),
# made here once rather than by each container; owned by root, the app only reads them.
RUN python -m scripts.build_static
USER 10001:10001
# The SQLite file (with its -wal and -shm) lives here: a local volume, never a network share.
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"]
# One process: SQLite writes, rate limits and the demo worker's lifecycle belong to one app.
# A bounded graceful shutdown, so open demo streams cannot hold up `docker stop`.
# --no-proxy-headers: the app reads X-Forwarded-For/-Proto itself, from the proxies in
# SHARDLAB_TRUSTED_PROXIES only (app/proxy_headers.py); uvicorn's own reading, on by default,
# would rewrite the client first from its FORWARDED_ALLOW_IPS.
CMD ["uvicorn", "--factory", "app.main:create_app", "--host", "0.0.0.0", "--port", "8000", "--no-proxy-headers", "--timeout-graceful-shutdown", "5", "--loop", "asyncio", "--timeout-keep-alive", "75"]
