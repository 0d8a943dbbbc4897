"""A skill's versions from the command line: versions (its list), show (a version's files), diff
(what changed, with the annotations a version orphans), publish (a version made live)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer

from skillpress.cli.common import (
    AsJson,
    Timeout,
    fail,
    failures,
    open_ctx,
)

__all__ = ["diff", "publish", "show", "versions"]


def versions(
    slug: Annotated[str, typer.Argument(help="the skill's slug")], as_json: AsJson = False
) -> None:
    """A skill's versions, newest first, with what each changed and which is live."""
    from skillpress.app.base.views import VersionRow
    from skillpress.cli.remote import through_api

    out = through_api(lambda api: api.get(f"/skills/{slug}/versions", list[VersionRow]))
    if out is None:
        from skillpress.app.records.versions import list_versions

        with failures():
            out = list_versions(open_ctx(), slug)
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    if not out:
        typer.echo(f"{slug} has no versions yet")
    for v in out:
        d = v["diff"]
        mark = "* live" if v["live"] else f"  {v['status']}"
        typer.echo(
            f"{v['version_id'][:12]}  {mark:<12} {v['created_at'][:19]}  +{d.get('added', 0)} -{d.get('removed', 0)} ~{d.get('changed', 0)}"
            + (f"  {d['workflows']} workflow change(s)" if d.get("workflows") else "")
        )


def show(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    file: Annotated[
        str | None, typer.Argument(help="a file of the version (default: list them)")
    ] = None,
    version: Annotated[
        str | None,
        typer.Option("--version", help="a version id or prefix (default: live, else newest)"),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """A version's files, or one file's content."""
    from skillpress.app.base.views import VersionView
    from skillpress.cli.remote import Remote, through_api

    def remotely(api: Remote) -> tuple[Mapping[str, Any], Callable[[str], bytes]]:
        view = api.get(f"/skills/{slug}/versions/{version or 'current'}", VersionView)
        path = f"/skills/{slug}/versions/{view['version_id']}/files/"
        return view, lambda name: api.request("GET", path + name)

    found = through_api(remotely)
    if found is None:
        from skillpress.app.records.versions import version_file, version_view

        ctx = open_ctx()
        with failures():
            local: Mapping[str, Any] = version_view(ctx, slug, version or "current")
        found = local, lambda name: version_file(ctx, slug, local["version_id"], name)
    view, read = found
    version_id, keys = str(view["version_id"]), dict(view["files"])
    if file is None:
        if as_json:
            typer.echo(
                json.dumps(
                    {"version_id": version_id, "status": view["status"], "files": keys}, indent=2
                )
            )
        else:
            state = "live" if view["live"] else view["status"]
            typer.echo(f"{slug} version {version_id[:12]} ({state}), {len(keys)} files:")
            for path in keys:
                typer.echo(f"  {path}")
        return
    if file not in keys:
        fail(f"version {version_id[:12]} has no file {file!r} (skillpress show {slug} lists them)")
    content = read(file)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "version_id": version_id,
                    "file": file,
                    "content": content.decode("utf-8", "replace"),
                }
            )
        )
    else:
        typer.echo(content.decode("utf-8", "replace"), nl=False)


def diff(
    slug: Annotated[str, typer.Argument(help="the skill's slug")],
    a: Annotated[str | None, typer.Argument(help="from (default: the live version)")] = None,
    b: Annotated[str | None, typer.Argument(help="to (default: the newest version)")] = None,
    as_json: AsJson = False,
) -> None:
    """What changed between two versions: operations added, removed, and whose call changed."""
    from skillpress.app.base.views import VersionDiff
    from skillpress.cli.remote import through_api

    ends = {k: v for k, v in (("from", a), ("to", b)) if v is not None}
    result = through_api(lambda api: api.get(f"/skills/{slug}/diff", VersionDiff, **ends))
    if result is None:
        from skillpress.app.records.versions import diff_versions

        with failures():
            result = diff_versions(open_ctx(), slug, a, b)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    _changes(result, slug)


def _proposals(result: Mapping[str, Any]) -> None:
    """When a diff spans several proposals: each, why it was made, and what it brings."""
    proposals = result.get("proposals") or []
    if len(proposals) < 2:
        return
    came: Mapping[str, str] = result.get("came_from") or {}
    typer.echo(f"  from {len(proposals)} proposals (publishing puts live what each made):")
    for p in proposals:
        brings = sorted(n for n, v in came.items() if v == p["version_id"])
        this = " (this one)" if p["version_id"] == result["to"] else ""
        typer.echo(f"    {p['version_id'][:12]}{this}: {p['because']}")
        if brings:
            typer.echo(f"      brings: {', '.join(brings)}")


def _changes(result: Mapping[str, Any], slug: str | None = None) -> None:
    """A diff as lines: operations added, removed, changed (with what changed), orphans."""
    if slug is not None:
        typer.echo(
            f"{slug}: {result['from'][:12] if result['from'] else '(nothing live)'} → {result['to'][:12]}"
        )
    for name in result["added"]:
        typer.echo(f"  + {name}")
    for name in result["removed"]:
        typer.echo(f"  - {name}")
    for ch in result["changed"]:
        typer.echo(
            f"  ~ {ch['operation']}: {', '.join(ch['what'])}"
            + (f" ({ch['before']} → {ch['after']})" if ch["before"] != ch["after"] else "")
        )
        for detail in ch.get("details") or []:
            typer.echo(f"      {detail}")
    for flow in result.get("workflows") or []:
        typer.echo(f"  {flow[0]} workflow {flow[2:]}")
    s_ = result["summary"]
    described = result.get("described") or []
    if described:  # a note, a description: live once published, though no call changes
        more = s_.get("described", len(described)) - len(described)
        typer.echo(
            f"  described anew: {', '.join(described)}" + (f" … and {more} more" if more else "")
        )
    if result.get("credential"):
        typer.echo(f"  credential: {result['credential']}")
    if result.get("other_files"):
        typer.echo(f"  also changes: {', '.join(result['other_files'])}")
    typer.echo(
        f"  {s_['added']} added, {s_['removed']} removed, {s_['changed']} changed"
        + (f", {s_['described']} described anew" if s_.get("described") else "")
        + f"; {s_['files_changed']} files differ"
    )
    _proposals(result)
    for orphan in result["orphaned"]:
        offer = (
            f"; its method and path are now {orphan['rekey_to']}: skillpress rekey {orphan['id']} {orphan['rekey_to']}"
            if orphan.get("rekey_to")
            else ""
        )
        typer.echo(
            f"  ! annotation {orphan['id']} ({orphan['kind']}) is orphaned: {orphan['operation']} is gone{offer}"
        )


def publish(
    slug: Annotated[str | None, typer.Argument(help="the skill's slug")] = None,
    version: Annotated[str | None, typer.Argument(help="a version id or prefix")] = None,
    remove_gates: Annotated[
        bool, typer.Option("--remove-gates", help="allow dropping gates the live version has")
    ] = False,
    all_proposed: Annotated[
        bool,
        typer.Option(
            "--all-proposed",
            help="publish every skill's newest waiting proposal, each checked as one publish is",
        ),
    ] = False,
    as_json: AsJson = False,
    timeout: Timeout = 60.0,
) -> None:
    """Make a version live: the one version agents read, announced on version.published. With
    --all-proposed, every skill's newest waiting proposal (each refusal listed with its reason)."""
    from skillpress.app.base.views import PublicationView
    from skillpress.cli.remote import through_api

    if all_proposed:
        if slug is not None or version is not None:
            fail("--all-proposed publishes every skill's newest proposal: name no skill")
        from skillpress.cli.publish_many import publish_all_proposed

        publish_all_proposed(remove_gates, as_json, timeout)
        return
    if slug is None or version is None:
        fail("name a skill and a version (skillpress versions SLUG lists them), or --all-proposed")

    asked = {"remove_gates": remove_gates, "timeout": min(timeout, 600.0)}
    event = through_api(
        lambda api: api.post(
            f"/skills/{slug}/versions/{version}/publish", asked, PublicationView, wait=timeout
        )
    )
    if event is None:
        from skillpress.app.operator.changes import publish as published

        ctx = open_ctx()
        try:
            with failures():
                event = published(ctx, slug, version, remove_gates, timeout, "cli")
        finally:
            ctx.close()
    version_id = str(event["version_id"])
    if as_json:
        typer.echo(json.dumps(event, indent=2))
    else:
        prev = event.get("previous_version_id")
        typer.echo(
            f"published {slug} version {version_id[:12]}"
            + (
                " (live already: its live pointer written again)"
                if event.get("already_live")
                else (f" (replacing {prev[:12]})" if prev else "")
            )
            + f": {len(event['files'])} files, hosts {', '.join(event['hosts']) or '(none)'}"
        )
        changes = event.get("changes")
        if changes and not prev and not event.get("already_live"):
            # a first publication: every operation is new, and 290 lines say less than one
            typer.echo(f"  the first live version: {changes['summary']['added']} operations")
        elif changes:
            _changes(changes)
