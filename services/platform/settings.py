"""Settings from the environment (prefix `SKILLPRESS_`). Secrets are never settings: only the
*names* of the environment variables that hold them are."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SKILLPRESS_", extra="ignore")

    home: Path = Field(default_factory=lambda: Path.home() / ".skillpress", description="embedded state lives here")
    max_spec_bytes: int = 32 * 1024 * 1024
    log_format: str = "auto"  # auto | json | console
    log_level: str = "info"

    nats_url: str | None = None  # None: the embedded nats-server
    database_url: str | None = None  # None: SQLite file under home
    s3_endpoint: str | None = None  # host:port; None: a local blob directory under home
    s3_bucket: str = "skillpress"
    s3_secure: bool = False
    s3_access_key_env: str = "SKILLPRESS_S3_ACCESS_KEY"
    s3_secret_key_env: str = "SKILLPRESS_S3_SECRET_KEY"

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
