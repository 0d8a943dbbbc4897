"""Dead letters, as the delivery contract keeps them: a message no handler could take, or one
whose deliveries ran out unacknowledged, kept with its error for a person to replay."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import col, select

from skillpress.app.base.context import AppContext
from skillpress.schemas.records import DeadLetter

__all__ = ["dead_letter", "exhausted_letter", "letters_to_replay", "mark_replayed"]


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


def letters_to_replay(ctx: AppContext, ids: list[int] | None) -> list[DeadLetter]:
    """The dead letters numbered `ids` (those that exist), or every one not yet replayed."""
    with ctx.records.session() as s:
        if ids is None:
            query = select(DeadLetter).where(col(DeadLetter.replayed_at).is_(None))
        else:
            query = select(DeadLetter).where(col(DeadLetter.id).in_(ids))
        rows = list(s.exec(query.order_by(col(DeadLetter.id))).all())
        s.expunge_all()
    return rows


def mark_replayed(ctx: AppContext, sent: list[tuple[int, str]], now: datetime) -> None:
    """Each dead letter (id) replayed at `now` as the message id beside it."""
    with ctx.records.session() as s:
        for letter_id, msg_id in sent:
            stored = s.get(DeadLetter, letter_id)
            assert stored is not None
            stored.replayed_at, stored.replayed_as = now, msg_id
