"""`skillpress publish --all-proposed`: every skill's newest waiting proposal made live, with a
progress bar; through a running server's API in requests of a few skills each (so the bar
moves), else locally; each refusal listed with its reason."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import typer

from skillpress.app.base.views import ManyPublished, SkillView
from skillpress.cli.common import failures, open_ctx
from skillpress.cli.remote import Remote, remote

__all__ = ["publish_all_proposed"]

_BATCH = 20  # skills a request to the API publishes, so the bar moves as they land


def publish_all_proposed(remove_gates: bool, as_json: bool, timeout: float) -> None:
    api = remote()
    with typer.progressbar(
        length=0, label="publishing", file=sys.stderr, show_pos=True, hidden=as_json
    ) as bar:

        def moved(n: int, total: int) -> None:
            bar.length = total
            bar.update(n - bar.pos)

        if api is not None:
            done = _through_api(api, remove_gates, timeout, moved)
        else:
            from skillpress.app.operator.publish_many import publish_proposed

            ctx = open_ctx()
            try:
                with failures():
                    done = publish_proposed(ctx, None, remove_gates, timeout, "cli", moved)
            finally:
                ctx.close()
    _said(done, as_json)


def _through_api(
    api: Remote, remove_gates: bool, timeout: float, moved: Callable[[int, int], None]
) -> ManyPublished:
    """The skills with a proposal waiting, read from the list's pages, published a few at a
    time (each request checks each as a single publish)."""
    waiting: list[str] = []
    after = ""
    while True:
        page = api.get("/skills", list[SkillView], limit="500", after=after)
        waiting += [k["slug"] for k in page if k["proposals"]]
        if len(page) < 500:
            break
        after = page[-1]["slug"]
    out: ManyPublished = {"published": [], "refused": []}
    for start in range(0, len(waiting), _BATCH):
        chosen = waiting[start : start + _BATCH]
        body = {"skills": chosen, "remove_gates": remove_gates, "timeout": min(timeout, 600.0)}
        part = api.post("/publications", body, ManyPublished, wait=timeout)
        out["published"] += part["published"]
        out["refused"] += part["refused"]
        moved(start + len(chosen), len(waiting))
    return out


def _said(done: ManyPublished, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(done, indent=2))
        return
    published, refused = done["published"], done["refused"]
    if not published and not refused:
        typer.echo("no proposal waits to be published")
        return
    typer.echo(f"published {len(published)} skill{'s' if len(published) != 1 else ''}")
    for p in published:
        prev = p["previous_version_id"]
        typer.echo(
            f"  {p['skill']}: version {p['version_id'][:12]}"
            + (
                " (live already)"
                if p["already_live"]
                else f" (replacing {prev[:12]})"
                if prev
                else ""
            )
        )
    if refused:
        typer.echo(f"refused {len(refused)}:")
        for r in refused:
            typer.echo(f"  {r['skill']}: {r['reason']}")
        raise typer.Exit(2)
