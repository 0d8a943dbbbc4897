"""Settings from the environment (prefix `SKILLPRESS_`). Secrets are never settings: only the
*names* of the environment variables that hold them are."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from skillpress.errors import Permanent
from skillpress.format.load import MAX_SPEC_BYTES

__all__ = ["Settings", "SettingsRefused", "load_settings"]


class SettingsRefused(Permanent):
    """A setting in the environment cannot be used; the message names the variable and the fix."""

    problem = "settings-refused"


def load_settings(**given: Any) -> Settings:
    """The settings from the environment (and `given`), or SettingsRefused naming each variable
    that cannot be used, in one line each: never a validation traceback."""
    try:
        return Settings(**given)
    except ValidationError as exc:
        lines = []
        for e in exc.errors():
            field = ".".join(str(p) for p in e.get("loc", ()))
            said = str(e.get("msg", "is not valid")).removeprefix("Value error, ")
            if not field:  # a check across fields names its own variables
                lines.append(said)
                continue
            value = e.get("input")
            shown = f"={value!r}" if isinstance(value, str | int | float) else ""
            lines.append(f"SKILLPRESS_{field.upper()}{shown}: {said}")
        raise SettingsRefused("; ".join(lines)) from None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SKILLPRESS_", extra="ignore")

    home: Path = Field(
        default_factory=lambda: Path.home() / ".skillpress", description="embedded state lives here"
    )
    max_spec_bytes: int = MAX_SPEC_BYTES
    log_format: str = "auto"  # auto | json | console
    log_level: str = "info"

    nats_url: str | None = (
        None  # None: the embedded nats-server; several: comma-separated (a cluster)
    )
    # how a client proves itself to a configured NATS (the embedded one makes its own): a
    # credentials file (JWT and NKey seed), or a user with the password in the variable
    # nats_password_env names, or a token in the variable nats_token_env names; TLS with a
    # `tls://` URL, against the CA bundle nats_ca (and a client certificate, for mutual TLS)
    # the embedded nats-server's client port (`up`, `serve` without SKILLPRESS_NATS_URL; None:
    # one the system picks, written to the home for the command lines on it)
    nats_port: int | None = Field(default=None, ge=1, le=65535)
    nats_creds: Path | None = None
    nats_user: str | None = None
    nats_password_env: str = "SKILLPRESS_NATS_PASSWORD"
    nats_token_env: str = "SKILLPRESS_NATS_TOKEN"
    nats_ca: Path | None = None
    nats_cert: Path | None = None
    nats_key: Path | None = None
    stream_replicas: int = Field(
        default=1,
        ge=1,
        le=5,
        description="replicas of each JetStream stream and bucket (3 in a cluster)",
    )
    worker_concurrency: int = Field(
        default=1, ge=1, le=64, description="messages a worker process handles at once, per step"
    )
    database_url: str | None = None  # None: SQLite file under home
    # whether a process brings the records' schema up to date as it starts; None: a SQLite file
    # does (one machine's), PostgreSQL does not (shared by every process: `skillpress migrate`
    # is one explicit step of an upgrade, and a process meeting an older schema refuses)
    migrate_on_start: bool | None = None
    # seconds a stopping `serve` lets the requests it holds finish (new ones are refused with a
    # 503 at once) before it cancels them, each answered 503
    stop_grace: float = Field(default=10.0, ge=0, le=300)
    # where a worker process answers /healthz, /readyz and /metrics (None: it does not listen;
    # 0: any free port, said in the log); `serve` answers them on its own port
    probe_port: int | None = Field(default=None, ge=0, le=65535)
    probe_host: str = "127.0.0.1"
    # host:port, or http(s)://host:port (the scheme sets s3_secure); None: a local blob directory
    s3_endpoint: str | None = None
    s3_bucket: str = "skillpress"
    s3_secure: bool = False
    s3_access_key_env: str = "SKILLPRESS_S3_ACCESS_KEY"
    s3_secret_key_env: str = "SKILLPRESS_S3_SECRET_KEY"

    # delivery: a handler that raises is retried after spaced delays, at most max_deliver times,
    # then its message becomes a dead-letter record; a message not acked within ack_wait is
    # redelivered (to another replica when its worker died)
    max_deliver: int = 5
    retry_delays: tuple[float, ...] = (1.0, 5.0, 20.0, 60.0)
    ack_wait: float = 60.0
    # a dependency down (the records, the blob store, a model: nothing wrong with the message)
    # is waited for by the worker holding the message, on this schedule (the last delay
    # repeats) for up to outage_limit seconds, without spending its deliveries; then the
    # message is a dead letter like any other
    outage_delays: tuple[float, ...] = (2.0, 5.0, 15.0, 30.0, 60.0)
    outage_limit: float = 3600.0

    # where a runtime (call, run, mcp) settles gated calls: the approvals of this skillpress API
    # (http(s)://host:port), with its runtime token in SKILLPRESS_RUNTIME_TOKEN; None: the records
    approvals_url: str | None = None
    # a gated call's request for approval stays open this long (seconds); then it is expired
    # (no one can grant it) and the same call asks anew; a grant not used in as long expires too
    approval_expiry: float = Field(default=3600.0, gt=0)

    # blobs this process wrote or read lately, held in memory (MB; 0: none): the pipeline's
    # steps read back what the step before them wrote
    blob_cache_mb: int = Field(default=64, ge=0, le=65536)

    # fetching specs by URL
    fetch_timeout: float = 20.0
    fetch_allow_private: bool = (
        False  # loopback/private/link-local targets; for tests and trusted networks
    )
    refresh_interval: float = (
        3600.0  # seconds between scheduled re-fetches of URL sources (0: never)
    )

    # the HTTP API and console (skillpress serve, skillpress up)
    api_host: str = "127.0.0.1"
    api_port: int = 8787
    operator_tokens_file: Path | None = None  # default: <home>/operator-tokens (mode 0600)

    # categories from a model when tags fail: any OpenAI-compatible chat-completions endpoint (off when unset)
    llm_base_url: str | None = None  # e.g. https://api.openai.com/v1
    llm_model: str | None = None
    llm_api_key_env: str | None = None  # the *name* of the variable holding the key
    llm_timeout: float = 60.0
    llm_context_budget: int = 12_000  # characters of operation listing per request

    @model_validator(mode="after")
    def _s3_endpoint_as_host_port(self) -> Self:
        """An endpoint given as a URL becomes host:port, its scheme deciding `s3_secure`; a path,
        a query or credentials in it are refused, saying what form is wanted."""
        given = (self.s3_endpoint or "").strip()
        if not given:
            self.s3_endpoint = None
            return self
        wanted = "give host:port (like 127.0.0.1:8333) or http(s)://host:port"
        parts = urlsplit(given if "://" in given else f"//{given}")
        # said back without any credentials it carries
        named = f"SKILLPRESS_S3_ENDPOINT={given.replace(parts.netloc, parts.netloc.rpartition('@')[2])!r}"
        if "://" not in given:
            if "/" in given or "@" in given or "?" in given:
                raise ValueError(f"{named} is not host:port: {wanted}")
            self.s3_endpoint = given
            return self
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{named} is not an http(s) endpoint: {wanted}")
        if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
            raise ValueError(
                f"{named} has a path, a query or credentials; an S3 endpoint has none: {wanted}"
                " (the bucket is SKILLPRESS_S3_BUCKET, the keys are read from the variables"
                " SKILLPRESS_S3_ACCESS_KEY_ENV and SKILLPRESS_S3_SECRET_KEY_ENV name)"
            )
        if "s3_secure" in self.model_fields_set and self.s3_secure != (parts.scheme == "https"):
            raise ValueError(
                f"{named} says {parts.scheme} but SKILLPRESS_S3_SECURE says"
                f" {str(self.s3_secure).lower()}: drop one of them"
            )
        self.s3_secure = parts.scheme == "https"
        self.s3_endpoint = parts.netloc
        return self

    @property
    def sqlite_url(self) -> str:
        return f"sqlite:///{self.home / 'skillpress.db'}"

    @property
    def records_url(self) -> str:
        return self.database_url or self.sqlite_url

    @property
    def migrates_on_start(self) -> bool:
        if self.migrate_on_start is not None:
            return self.migrate_on_start
        return self.records_url.startswith("sqlite")

    @property
    def blob_dir(self) -> Path:
        return self.home / "blobs"

    @property
    def nats_dir(self) -> Path:
        return self.home / "nats"
