"""The live set's generation: one row whose number moves in the same transaction as any skill's
live pointer, so a follower's idle look reads one row instead of every skill.

Revision ID: 0010
Revises: 0009
"""

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "live_set",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("epoch", sa.String(32), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
    )
    op.bulk_insert(table, [{"id": 1, "epoch": uuid.uuid4().hex, "generation": 0}])


def downgrade() -> None:
    op.drop_table("live_set")
