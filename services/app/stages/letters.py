"""Dead letters, as the delivery contract keeps them: a message no handler could take, or one
whose deliveries ran out unacknowledged, kept with its error for a person to replay."""

from __future__ import annotations

from sqlmodel import col, select

from skillpress.schemas.records import DeadLetter
from skillpress.services.app.base.context import AppContext

__all__ = ["dead_letter", "exhausted_letter"]


def dead_letter(
    ctx: AppContext, subject: str, worker: str, msg_id: str | None, error: str, payload: str
) -> None:
    """A message no handler could take, kept with its error for a person to replay."""
    with ctx.records.session() as s:
        s.add(
            DeadLetter(
                subject=subject,
                worker=worker,
                msg_id=msg_id,
                error=error[:20_000],
                payload=payload[:200_000],
                created_at=ctx.clock(),
            )
        )


def exhausted_letter(
    ctx: AppContext, subject: str, worker: str, msg_id: str | None, error: str, payload: str
) -> bool:
    """The dead letter of a message whose deliveries ran out unacknowledged; False when a
    redelivered advisory finds it written already."""
    with ctx.records.session() as s:
        exists = s.exec(
            select(DeadLetter.id).where(
                DeadLetter.subject == subject,
                DeadLetter.worker == worker,
                DeadLetter.msg_id == msg_id,
                col(DeadLetter.error).startswith("exhausted:"),
            )
        ).first()
        if exists is not None:
            return False
    dead_letter(ctx, subject, worker, msg_id, error, payload)
    return True
