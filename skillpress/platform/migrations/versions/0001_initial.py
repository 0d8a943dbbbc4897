"""The first records: skills, sources, revisions, versions, publications, action items, dead letters.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "skills",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("slug", sa.String(64), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("live_version_id", sa.String(64), nullable=True),
        sa.Column("detached", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_skills_slug", "skills", ["slug"], unique=True)
    op.create_table(
        "sources",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("skill_id", sa.String(64), sa.ForeignKey("skills.id"), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("fetched_from", sa.String(2048), nullable=True),
        sa.Column("base_url", sa.String(2048), nullable=True),
        sa.Column("auth_header", sa.String(128), nullable=True),
        sa.Column("credential_env", sa.String(128), nullable=True),
    )
    op.create_index("ix_sources_skill_id", "sources", ["skill_id"])
    op.create_table(
        "source_revisions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("source_id", sa.String(64), sa.ForeignKey("sources.id"), nullable=False),
        sa.Column("spec_sha256", sa.String(64), nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("refusal_reason", sa.Text(), nullable=True),
        sa.UniqueConstraint("source_id", "spec_sha256", name="uq_revision_source_sha"),
    )
    op.create_index("ix_source_revisions_source_id", "source_revisions", ["source_id"])
    op.create_table(
        "versions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("skill_id", sa.String(64), sa.ForeignKey("skills.id"), nullable=False),
        sa.Column(
            "revision_id", sa.String(64), sa.ForeignKey("source_revisions.id"), nullable=True
        ),
        sa.Column("annotations_as_of", sa.DateTime(timezone=True), nullable=True),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("renderer", sa.String(64), nullable=False),
        sa.Column("files_json", sa.Text(), nullable=False),
        sa.Column("hosts_json", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("skill_id", "content_hash", name="uq_version_skill_content"),
    )
    op.create_index("ix_versions_skill_id", "versions", ["skill_id"])
    op.create_table(
        "publications",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("skill_id", sa.String(64), sa.ForeignKey("skills.id"), nullable=False),
        sa.Column("version_id", sa.String(64), sa.ForeignKey("versions.id"), nullable=False),
        sa.Column("published_by", sa.String(128), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_publications_skill_id", "publications", ["skill_id"])
    op.create_table(
        "action_items",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("skill_id", sa.String(64), sa.ForeignKey("skills.id"), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("version_id", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_action_items_skill_id", "action_items", ["skill_id"])
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("subject", sa.String(256), nullable=False),
        sa.Column("worker", sa.String(64), nullable=False),
        sa.Column("msg_id", sa.String(256), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    for table in (
        "dead_letters",
        "action_items",
        "publications",
        "versions",
        "source_revisions",
        "sources",
        "skills",
    ):
        op.drop_table(table)
