"""Approval requests name the token that asked, and one exact call has one open request: a
runtime reads and consumes only the requests it made, and identical calls asking at the same
moment share one request instead of each making their own.

Revision ID: 0009
Revises: 0008
"""

import hashlib
import json

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_OPEN = "status IN ('pending', 'granted')"


def _key(skill: str, operation: str, bound_json: str, token: str | None) -> str:
    # the same as app/records/approval_requests.ask_key, written out so this step never changes
    text = json.dumps([skill, operation, bound_json, token], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def upgrade() -> None:
    with op.batch_alter_table("approval_requests") as batch:
        batch.add_column(sa.Column("token", sa.String(64), nullable=True))
        batch.add_column(sa.Column("ask_key", sa.String(64), nullable=True))
    conn = op.get_bind()
    rows = conn.execute(
        sa.text(
            "SELECT id, skill, operation, bound_json, status FROM approval_requests ORDER BY id"
        )
    ).fetchall()
    seen: set[str] = set()
    for row_id, skill, operation, bound_json, status in rows:
        key = _key(skill, operation, bound_json, None)
        conn.execute(
            sa.text("UPDATE approval_requests SET ask_key = :k WHERE id = :i"),
            {"k": key, "i": row_id},
        )
        if status in ("pending", "granted"):
            if key in seen:  # a duplicate an earlier release let two callers make: the first stands
                conn.execute(
                    sa.text("UPDATE approval_requests SET status = 'expired' WHERE id = :i"),
                    {"i": row_id},
                )
            seen.add(key)
    op.create_index(
        "approval_requests_one_open",
        "approval_requests",
        ["ask_key"],
        unique=True,
        sqlite_where=sa.text(_OPEN),
        postgresql_where=sa.text(_OPEN),
    )


def downgrade() -> None:
    op.drop_index("approval_requests_one_open", table_name="approval_requests")
    with op.batch_alter_table("approval_requests") as batch:
        batch.drop_column("ask_key")
        batch.drop_column("token")
