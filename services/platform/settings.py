"""Settings from the environment (prefix `SKILLPRESS_`). Secrets are never settings: only the
*names* of the environment variables that hold them are."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from skillpress.services.derive.load import MAX_SPEC_BYTES

__all__ = ["Settings"]


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
    s3_endpoint: str | None = None  # host:port; None: a local blob directory under home
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

    @property
    def sqlite_url(self) -> str:
        return f"sqlite:///{self.home / 'skillpress.db'}"

    @property
    def records_url(self) -> str:
        return self.database_url or self.sqlite_url

    @property
    def blob_dir(self) -> Path:
        return self.home / "blobs"

    @property
    def nats_dir(self) -> Path:
        return self.home / "nats"
