"""The pipeline's records: grouping and counts on revisions, diffs on versions, suggestions, annotations.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sources") as batch:
        batch.add_column(sa.Column("last_checked_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("source_revisions") as batch:
        batch.add_column(sa.Column("submission", sa.String(128), nullable=True))
        batch.add_column(sa.Column("operations", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("package_blob", sa.String(64), nullable=True))
        batch.add_column(sa.Column("grouping_blob", sa.String(64), nullable=True))
        batch.add_column(sa.Column("grouping_source", sa.String(16), nullable=True))
        batch.add_column(sa.Column("tag_failure", sa.String(32), nullable=True))
        batch.add_column(sa.Column("grouping_note", sa.Text(), nullable=True))
    with op.batch_alter_table("versions") as batch:
        batch.add_column(sa.Column("diff_json", sa.Text(), nullable=False, server_default="{}"))
        batch.add_column(sa.Column("base_version_id", sa.String(64), nullable=True))
    with op.batch_alter_table("publications") as batch:
        batch.add_column(sa.Column("previous_version_id", sa.String(64), nullable=True))
    op.create_table(
        "suggestions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("skill_id", sa.String(64), sa.ForeignKey("skills.id"), nullable=False),
        sa.Column(
            "revision_id", sa.String(64), sa.ForeignKey("source_revisions.id"), nullable=False
        ),
        sa.Column("operation", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("group", sa.String(16), nullable=False),
        sa.Column("body_json", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("revision_id", "operation", "kind", name="uq_suggestion_rev_op_kind"),
    )
    op.create_index("ix_suggestions_skill_id", "suggestions", ["skill_id"])
    op.create_table(
        "annotations",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("skill_id", sa.String(64), sa.ForeignKey("skills.id"), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("target", sa.String(300), nullable=False),
        sa.Column("body_json", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("retired_by", sa.String(128), nullable=True),
    )
    op.create_index("ix_annotations_skill_id", "annotations", ["skill_id"])
    op.create_index("ix_suggestions_revision_id", "suggestions", ["revision_id"])


def downgrade() -> None:
    op.drop_table("annotations")
    op.drop_table("suggestions")
    with op.batch_alter_table("publications") as batch:
        batch.drop_column("previous_version_id")
    with op.batch_alter_table("versions") as batch:
        batch.drop_column("base_version_id")
        batch.drop_column("diff_json")
    with op.batch_alter_table("source_revisions") as batch:
        for name in (
            "grouping_note",
            "tag_failure",
            "grouping_source",
            "grouping_blob",
            "package_blob",
            "operations",
            "submission",
        ):
            batch.drop_column(name)
    with op.batch_alter_table("sources") as batch:
        batch.drop_column("last_checked_at")
