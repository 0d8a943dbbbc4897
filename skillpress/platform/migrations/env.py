"""Alembic environment: run against the connection the record store hands over."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import skillpress.schemas.records  # noqa: F401  (registers the tables)

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through skillpress.platform.records.RecordStore.migrate()")
context.configure(connection=connection, target_metadata=SQLModel.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
