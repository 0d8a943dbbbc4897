"""Following publications over skillpress's HTTP API (`follow --api`), for a runtime with no
access to the store or the broker: the same folder `follow` keeps, its pointers read from
`/v1/live` (a look held open by the API while following, answered as soon as something changes)
and each version's files from its archive, every file checked against the sha256 its pointer
names. What is written, and where, is `followers.materialize`'s: the same invariant."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from skillpress.app.serving.followers import (
    FollowRefused,
    hold_pins,
    materialize,
    say_refused,
)
from skillpress.schemas.events import LiveVersion

__all__ = ["HELD_OPEN", "ApiFollower", "follow_api"]


HELD_OPEN = 20.0  # seconds a following look is held open by the API (below the client's timeout)


class ApiFollower:
    """The same following over skillpress's HTTP API, for a runtime with no access to the store
    or the broker: the live versions polled from `/v1/live`, each file fetched from
    `/v1/skills/<slug>/versions/<id>/archive` (the version's every file in one request) and
    refused unless its sha256 is the one the live pointer names."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self.client = httpx.Client(
            base_url=self.base_url, headers=self._headers, timeout=timeout, follow_redirects=False
        )
        self._held: httpx.AsyncClient | None = None  # for looks held open (cancelled on a stop)
        self._archives: dict[str, dict[str, bytes]] = {}
        self._tag: str | None = None  # the ETag of the last look whose pointers were kept
        self._looked: str | None = None  # the last look's

    def _get(self, path: str, **request: Any) -> Any:
        import httpx

        from skillpress.app.base.bus import StackError

        try:
            response = self.client.get(path, **request)
        except httpx.HTTPError as exc:
            raise StackError(f"{self.client.base_url}{path}: {type(exc).__name__}: {exc}") from None
        return _checked(path, response)

    def _look(self, skills: set[str] | None, wait: float) -> dict[str, Any]:
        params: dict[str, Any] = {"skill": sorted(skills)} if skills is not None else {}
        if wait and self._tag:
            params["wait"] = wait
        return {"params": params, "headers": {"If-None-Match": self._tag} if self._tag else {}}

    def live(self, skills: set[str] | None = None) -> list[LiveVersion]:
        """The live pointers the API answers (of `skills` only, when named), each held to a
        pointer's form (one that is not is left out, and said). A look sends the ETag of the
        last look whose pointers were all kept (`settled`); while nothing changed since, the API
        answers 304 with no body, and there is nothing new: []."""
        return self._pointers(self._get("/v1/live", **self._look(skills, 0)))

    async def held_live(self, skills: set[str] | None, wait: float) -> list[LiveVersion]:
        """`live`, the look held open by the API up to `wait` seconds and answered as soon as
        something changes (an API that does not hold looks answers at once: the same answers,
        polled). Cancelling it (a follower stopping) ends the request at once."""
        import httpx

        from skillpress.app.base.bus import StackError

        if self._held is None:
            self._held = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self._headers,
                timeout=wait + 30,
                follow_redirects=False,
            )
        try:
            response = await self._held.get("/v1/live", **self._look(skills, wait))
        except httpx.HTTPError as exc:
            raise StackError(f"{self.base_url}/v1/live: {type(exc).__name__}: {exc}") from None
        return self._pointers(_checked("/v1/live", response))

    def _pointers(self, response: Any) -> list[LiveVersion]:
        from pydantic import ValidationError

        if response.status_code == 304:
            return []
        out = []
        for value in response.json():
            try:
                out.append(LiveVersion.model_validate(value))
            except ValidationError as exc:
                say_refused(
                    f"a live pointer that is not one was refused ({exc.errors()[0]['msg']})"
                )
        self._looked = response.headers.get("etag")
        return out

    def settled(self) -> None:
        """Every pointer of the last look is kept: the next look asks only whether anything
        changed since (a look that failed half-way asks for them all again)."""
        self._tag = self._looked

    def pinned(self, slug: str, ref: str) -> LiveVersion:
        return LiveVersion.model_validate(self._get(f"/v1/skills/{slug}/versions/{ref}").json())

    def read(self, live: LiveVersion, path: str, digest: str) -> bytes:
        """A file of `live`, from the version's archive (fetched once per version, in one
        request), refused unless its sha256 is the one the live pointer names."""
        import hashlib

        files = self._archives.get(live.version_id)
        if files is None:
            files = self._archives[live.version_id] = self._archive(live)
            for old in [v for v in self._archives if v != live.version_id]:
                del self._archives[old]  # one version at a time is being written
        data = files.get(path)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            raise FollowRefused(
                f"{live.skill} {live.version_id[:12]} {path}: the bytes served are not the ones"
                " the live pointer names (sha256 differs); nothing was swapped"
            )
        return data

    def _archive(self, live: LiveVersion) -> dict[str, bytes]:
        import io
        import tarfile

        raw = self._get(f"/v1/skills/{live.skill}/versions/{live.version_id}/archive").content
        files: dict[str, bytes] = {}
        try:
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
                for member in tar.getmembers():
                    handle = tar.extractfile(member) if member.isfile() else None
                    if handle is not None:
                        files[member.name] = handle.read()
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise FollowRefused(
                f"{live.skill} {live.version_id[:12]}: the archive served is unreadable ({exc})"
            ) from None
        return files

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        """Close what `held_live` opened (and the rest)."""
        if self._held is not None:
            await self._held.aclose()
            self._held = None
        self.close()


def _checked(path: str, response: Any) -> Any:
    """The response, or the refusal or failure it says, in words."""
    from skillpress.app.base.bus import StackError

    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text[:300]
        if response.status_code in (401, 403, 404, 422):
            raise FollowRefused(f"{path}: {response.status_code} {detail}")
        raise StackError(f"{path}: {response.status_code} {detail}")
    return response


async def follow_api(
    follower: ApiFollower,
    out: Path,
    skills: set[str] | None,
    fmt: str,
    pins: dict[str, str],
    stop: asyncio.Event | None,
    on_swap: Callable[[LiveVersion], None],
    interval: float = 2.0,
) -> None:
    """`follow_live` over the HTTP API: catch up, then look again until `stop`, each look held
    open by the API (HELD_OPEN seconds at most: answered as soon as something goes live) and the
    next one `interval` seconds after it.
    Following (`stop` given) is a long-running process: a server that restarts or does not
    answer (a 5xx, a refused connection) is waited out with backoff (1 s doubling to 30 s) and a
    line each try, as a worker waits for its NATS; a refusal of the follower itself (its token)
    ends it. Catching up once (`stop` None) says the first failure."""
    from skillpress.app.base.bus import StackError
    from skillpress.platform.logging import get_logger

    log = get_logger("follow", api=str(follower.client.base_url))
    pinned, backoff = False, 0.0
    while True:
        try:
            if not pinned:
                await hold_pins(follower.read, follower.pinned, out, fmt, pins, on_swap)
                pinned = True
            looked = await _look_or_stop(follower, skills, stop)
            if looked is None:
                return
            for live in looked:
                wanted = live.skill not in pins and (skills is None or live.skill in skills)
                if wanted and await asyncio.to_thread(materialize, follower.read, out, live, fmt):
                    on_swap(live)
            follower.settled()
            if backoff:
                log.info("follow.answering_again")
            backoff, wait = 0.0, interval
        except StackError as exc:
            if stop is None:
                raise
            backoff = min(max(backoff * 2, 1.0), 30.0)
            log.warning("follow.waiting_for_the_api", error=str(exc), retry_in=backoff)
            wait = backoff
        if stop is None:
            return
        try:
            await asyncio.wait_for(stop.wait(), wait)
            return
        except TimeoutError:
            continue


async def _look_or_stop(
    follower: ApiFollower, skills: set[str] | None, stop: asyncio.Event | None
) -> list[LiveVersion] | None:
    """One look: once (`stop` None), or held open by the API while following, given up when
    `stop` is set first (None then)."""
    if stop is None:
        return await asyncio.to_thread(follower.live, skills)
    look = asyncio.ensure_future(follower.held_live(skills, HELD_OPEN))
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({look, stopped}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if not look.done():
        look.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await look
        return None
    return look.result()
