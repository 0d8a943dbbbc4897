"""Dead letters record their replay: when, and under which message id.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("dead_letters") as batch:
        batch.add_column(sa.Column("replayed_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("replayed_as", sa.String(256), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("dead_letters") as batch:
        batch.drop_column("replayed_as")
        batch.drop_column("replayed_at")
