"""Submission outcomes: how a submission ended when it made no revision of its own (refused
before its bytes were stored, or the same bytes again), so its status always ends.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "submission_outcomes",
        sa.Column("submission", sa.String(128), primary_key=True),
        sa.Column("skill", sa.String(128), nullable=False, index=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("revision_id", sa.String(64), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("submission_outcomes")
