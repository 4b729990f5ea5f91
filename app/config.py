"""All settings, read once from SHARDLAB_* environment variables (or a .env file)."""

from __future__ import annotations

import secrets
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from app.proxy_headers import parse_trusted_proxies
from app.ratelimit import parse_rate

ROOT_DIR = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SHARDLAB_",
        env_file=".env",
        env_ignore_empty=True,
        extra="ignore",
        # A refused setting's message names the field, never its value: a database URL holds
        # a password.
        hide_input_in_errors=True,
    )

    data_dir: Path = Field(
        default=Path("data"), description="Where the SQLite file and generated secrets live."
    )
    # The property database_url is what everyone reads; this is what was set. The env name
    # stays SHARDLAB_DATABASE_URL; the field name is accepted too, for Settings(...) in code.
    database_url_setting: str | None = Field(
        default=None,
        validation_alias=AliasChoices("SHARDLAB_DATABASE_URL", "database_url_setting"),
        description="The database: unset for the SQLite file in data_dir, or "
        "postgresql+psycopg://user:password@host:5432/name for PostgreSQL (cohort mode).",
    )
    content_dir: Path = Field(
        default=ROOT_DIR / "content", description="Cards (cards/*.md) and quiz items (quiz/)."
    )
    secret_key: str | None = Field(
        default=None,
        description="Signs session cookies. Unset: generated once and kept in data_dir.",
    )
    worker_address: str = Field(
        default="127.0.0.1:29581", description="host:port where the demo worker's rank 0 listens."
    )
    worker_addresses: str = Field(
        default="",
        description="A pool of demo workers, comma-separated host:port (each a rank 0 on its "
        "own host); runs go to the least loaded. Empty: the one worker at worker_address.",
    )
    worker_spawn: bool = Field(
        default=True,
        description="Start a local demo worker with the app. False: use one already running "
        "at worker_address (for example under torchrun on a GPU box).",
    )
    worker_ranks: int = Field(default=4, ge=1, le=64, description="Ranks of the local worker.")
    worker_pg_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="A collective of the local worker waiting longer than this fails its job "
        "(a hung rank); every demo step is bounded well below it.",
    )
    demo_stall_timeout_s: float = Field(
        default=15.0,
        gt=0,
        le=600,
        description="A running demo that sends nothing for this long is failed, and a local "
        "worker restarted.",
    )
    heavy_work_slots: int = Field(
        default=1,
        ge=1,
        le=64,
        description="CPU-heavy requests (the planner's search, progress imports and exports) "
        "computing at once; others wait a few seconds for a slot, then get 503. Python runs one "
        "thread at a time, so each one more slows every page: raise it only with spare cores.",
    )
    hashing_slots: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="Password hashes (log-in, sign-up, password change) computing at once, "
        "64 MiB each. Unset: one per core.",
    )
    demo_queue_max: int = Field(
        default=8, ge=0, le=1000, description="Demo runs that may wait for the worker at once."
    )
    worker_backend: Literal["auto", "gloo", "nccl"] = Field(
        default="auto", description="auto: NCCL when every rank has a GPU, else gloo."
    )
    worker_token: str | None = Field(
        default=None,
        description="Shared secret between app and worker. Unset: generated once in data_dir.",
    )
    registration: Literal["open", "invite", "closed"] = Field(
        default="open",
        description="Who may create an account: anyone (open), holders of an invite code "
        "(invite), or nobody but the admin CLI (closed).",
    )
    cookie_secure: bool = Field(
        default=False,
        description="Mark the session cookie Secure: set true when users reach the app over "
        "https (behind a TLS reverse proxy).",
    )
    trusted_proxies: str | None = Field(
        default=None,
        description="Reverse proxies whose X-Forwarded-For/-Proto are believed: addresses and "
        "networks, comma-separated (172.31.254.10, 10.0.0.0/8). Unset: none, so the client is "
        "whoever connects.",
    )
    login_rate_limit: str = Field(
        default="10/minute",
        description="Log-in attempts per client address, and failed ones per username.",
    )
    register_rate_limit: str = Field(
        default="20/hour", description="Registrations per client address."
    )
    demo_rate_limit: str = Field(
        default="10/minute", description="Demo launches per user and per client address."
    )
    calibrate_rate_limit: str = Field(
        default="10/minute",
        description="Performance-profile fits (the planner's calibration, page and API) per "
        "user and per client address.",
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="text for people, json for one JSON object per line."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="The least severe log level written."
    )

    @field_validator("worker_address")
    @classmethod
    def _host_and_port(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("worker_address must look like host:port")
        return value

    @field_validator("database_url_setting")
    @classmethod
    def _a_database_we_run_on(cls, value: str | None) -> str | None:
        if value is not None:
            database_kind(value)  # raises ValueError with the accepted forms
        return value

    @field_validator("worker_addresses")
    @classmethod
    def _hosts_and_ports(cls, value: str) -> str:
        addresses = [address.strip() for address in value.split(",") if address.strip()]
        for address in addresses:
            host, sep, port = address.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"worker_addresses: {address!r} must look like host:port")
        if len(set(addresses)) < len(addresses):
            raise ValueError("worker_addresses: an address is listed twice")
        return ",".join(addresses)

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses_or_networks(cls, value: str | None) -> str | None:
        parse_trusted_proxies(value)  # raises ValueError naming the entry
        return value

    @field_validator(
        "login_rate_limit", "register_rate_limit", "demo_rate_limit", "calibrate_rate_limit"
    )
    @classmethod
    def _a_rate(cls, value: str) -> str:
        parse_rate(value)  # raises ValueError with the accepted forms
        return value

    @property
    def database_url(self) -> str:
        """The one URL the app, the migrations and the admin commands connect to."""
        return self.database_url_setting or f"sqlite:///{self.data_dir / 'shardlab.db'}"

    @property
    def database_kind(self) -> Literal["sqlite", "postgresql"]:
        return database_kind(self.database_url)

    @property
    def database_path(self) -> Path:
        """The SQLite file, for code that works on the file itself (backups); PostgreSQL
        has none, and asking for it is a mistake in that code, not a setting to guess."""
        if self.database_kind != "sqlite":
            raise ValueError("the database is PostgreSQL: there is no SQLite file")
        return Path(make_url(self.database_url).database or "")

    @property
    def worker_pool(self) -> list[str]:
        """The demo workers runs are dispatched to (app/live/worker_pool.py)."""
        return self.worker_addresses.split(",") if self.worker_addresses else [self.worker_address]

    @cached_property
    def session_secret(self) -> str:
        return self.secret_key or _persistent_secret(self.data_dir / "secret_key")

    @cached_property
    def worker_secret(self) -> str:
        return self.worker_token or _persistent_secret(self.data_dir / "worker_token")


DATABASE_URL_FORMS = (
    "sqlite:////absolute/path/shardlab.db, or postgresql+psycopg://user:password@host:5432/database"
)


def database_kind(url: str) -> Literal["sqlite", "postgresql"]:
    """Which database a URL names, or ValueError: SQLite files and PostgreSQL through
    psycopg 3 are the two the migrations and tests run on."""
    try:
        parsed: URL = make_url(url)
    except ArgumentError:
        raise ValueError(f"not a database URL; use {DATABASE_URL_FORMS}") from None
    if parsed.drivername == "sqlite":
        # In memory, every connection would get a database of its own.
        if parsed.database in (None, "", ":memory:"):
            raise ValueError("a sqlite URL must name a file: sqlite:////path/to/file.db")
        return "sqlite"
    if parsed.drivername == "postgresql+psycopg":
        if not parsed.database:
            raise ValueError("a postgresql URL must name the database after the host: .../database")
        return "postgresql"
    hint = " (write postgresql+psycopg://)" if parsed.get_backend_name() == "postgresql" else ""
    raise ValueError(f"{parsed.drivername}:// is not supported{hint}; use {DATABASE_URL_FORMS}")


def _persistent_secret(path: Path) -> str:
    """A random secret kept in a file, so sessions survive restarts without any set-up."""
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(32)
    path.write_text(value)
    path.chmod(0o600)
    return value
