"""A version's files read from its derivation's pack: the derivation each version was made from.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("versions") as batch:
        batch.add_column(sa.Column("derivation_blob", sa.String(64), nullable=True))


def downgrade() -> None:
    # a version made since keeps its files in its derivation's pack alone until it is published:
    # make each a blob of its own first, or the older release cannot read it
    with op.batch_alter_table("versions") as batch:
        batch.drop_column("derivation_blob")
