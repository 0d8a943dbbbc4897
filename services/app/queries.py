"""Lists the operators read: open action items and dead letters."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from schemas.records import ActionItem, DeadLetter
from services.app.context import AppContext

__all__ = ["dead_letters", "open_actions"]


def open_actions(ctx: AppContext) -> list[dict[str, Any]]:
    """Action items no one has resolved yet: proposals a scheduled refresh made."""
    with ctx.records.session() as s:
        rows = s.exec(
            select(ActionItem)
            .where(col(ActionItem.resolved_at).is_(None))
            .order_by(col(ActionItem.id))
        ).all()
        return [
            {
                "id": a.id,
                "kind": a.kind,
                "version_id": a.version_id,
                "created_at": a.created_at.isoformat(),
                "message": a.message,
            }
            for a in rows
        ]


def dead_letters(ctx: AppContext) -> list[dict[str, Any]]:
    """Messages no worker could handle, oldest first, with their error and payload."""
    with ctx.records.session() as s:
        rows = s.exec(select(DeadLetter).order_by(col(DeadLetter.id))).all()
        return [
            {
                "id": d.id,
                "worker": d.worker,
                "subject": d.subject,
                "msg_id": d.msg_id,
                "error": d.error,
                "created_at": d.created_at.isoformat(),
                "payload": d.payload,
                "replayed_at": d.replayed_at.isoformat() if d.replayed_at else None,
                "replayed_as": d.replayed_as,
            }
            for d in rows
        ]
