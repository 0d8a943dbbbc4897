"""publish: `cmd.publish_version` → one live version per skill → `version.published` and the live
pointer, carrying what a runtime needs to load it (every file's blob key, the hosts, the
credential header's name)."""

from __future__ import annotations

from skillpress.app.base.context import AppContext
from skillpress.app.stages.publish import publish_version
from skillpress.platform.broker import live_subject
from skillpress.schemas.events import LiveVersion, PublishVersion, VersionPublished
from skillpress.schemas.subjects import COMMANDS, EVENTS
from skillpress.workers.delivery import Outgoing, Step

__all__ = ["STEP", "publish"]


def publish(ctx: AppContext, cmd: PublishVersion) -> list[Outgoing]:
    done = publish_version(ctx, cmd.skill, cmd.version_id, cmd.remove_gates, cmd.requested_by)
    live = LiveVersion(
        skill=done.skill,
        version_id=done.version_id,
        files=done.files,
        hosts=done.hosts,
        auth_header=done.auth_header,
        pack=done.pack,
    )
    event = VersionPublished(
        version_id=done.version_id,
        skill=done.skill,
        files=done.files,
        hosts=done.hosts,
        auth_header=done.auth_header,
        previous_version_id=done.previous_version_id,
        already_live=done.already_live,
    )
    # the answer names the request it answers: a version already live, asked for again, writes
    # its pointer again and says so, where the publication's own id alone was taken by JetStream
    # for the first answer's duplicate (and the asker waited out its timeout)
    seen = f"{done.version_id}:{done.publication_id}:{cmd.request or ''}"
    return [
        Outgoing(live_subject(done.skill), live, f"live:{seen}"),
        Outgoing(EVENTS.version_published, event, f"published:{seen}"),
    ]


STEP = Step("publish", COMMANDS.publish_version, PublishVersion, publish)
