"""NATS JetStream: connect, and make sure the SKILLPRESS stream exists over the subject catalogue."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import nats
from nats.aio.client import Client
from nats.js.api import KeyValueConfig, StreamConfig
from nats.js.errors import BucketNotFoundError, NotFoundError

from skillpress.errors import Permanent, Unavailable
from skillpress.platform.nats_roles import EXHAUSTED_STREAM, LIVE_BUCKET
from skillpress.platform.nats_urls import carries_credentials, server_list, shown_url
from skillpress.schemas.subjects import STREAM, STREAM_SUBJECTS

if TYPE_CHECKING:
    from skillpress.platform.settings import Settings

__all__ = [
    "broker_options",
    "connect",
    "nats_options",
    "shown_url",
    "ensure_stream",
    "patiently",
    "set_replicas",
    "stream_states",
    "StreamState",
    "BrokerUnavailable",
    "StreamReplicasRefused",
    "stop_broker",
    "EXHAUSTED_STREAM",
    "STREAM_MAX_AGE",
    "EXHAUSTED_SUBJECTS",
    "LIVE_BUCKET",
    "live_subject",
    "live_pointers",
    "server_list",
]

# how long the pipeline's stream keeps a message: a story's events are followed and replayed
# within minutes, a message no worker could take is kept whole in its dead letter (a replay
# sends that copy), and every outcome is in the records; older ones are dropped, not kept forever
STREAM_MAX_AGE = 30 * 24 * 3600.0

T = TypeVar("T")

# the live version of each skill, a key-value bucket: one watch gives a runtime the current state
# and every change, with catch-up for free (a KV put is a publish to `$KV.<bucket>.<key>`)


def live_subject(slug: str) -> str:
    return f"$KV.{LIVE_BUCKET}.{slug}"


async def live_pointers(nc: Client) -> dict[str, bytes]:
    """Every live pointer in the bucket, by skill: the subjects the stream holds (its own count,
    asked of the server) each read, a deleted one left out.

    Not nats-py's `KeyValue.keys()`: it starts a push watch and reads the consumer's pending
    count, and a pointer delivered between the two is counted neither as pending nor as received,
    so under load it answered "no keys" for a bucket holding some (seen in CI)."""
    from nats.js.errors import KeyNotFoundError

    js = nc.jetstream(timeout=10)
    prefix = live_subject("")
    info = await js.stream_info(f"KV_{LIVE_BUCKET}", subjects_filter=f"{prefix}>")
    kv = await js.key_value(LIVE_BUCKET)
    out: dict[str, bytes] = {}
    for subject in sorted(info.state.subjects or {}):
        key = subject.removeprefix(prefix)
        try:
            entry = await kv.get(key)
        except KeyNotFoundError:  # deleted or purged: its marker is all the stream holds
            continue
        if entry.value is not None:
            out[key] = entry.value
    return out


# JetStream's advisory for a message whose deliveries ran out unacknowledged (its last holder died
# or ran past ack_wait), kept in a stream of its own so no advisory is missed while no worker runs
EXHAUSTED_SUBJECTS = f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{STREAM}.*"


def nats_options(
    settings: Settings, url: str, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """How this process proves itself to the NATS at `url`, as nats-py (and FastStream) take
    it: a credentials file, a user and password, or a token (each secret read from the variable
    the settings name, never from a setting), and TLS against a CA bundle (a client certificate
    too, for mutual TLS). A URL that carries its own user and password (the embedded server's,
    generated for its processes) takes none of the configured credentials. SettingsRefused,
    naming the variable, for one that cannot be used."""
    import os
    import ssl

    from skillpress.platform.settings import SettingsRefused

    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    if carries_credentials(url):
        return out
    if settings.nats_creds is not None:
        if not settings.nats_creds.is_file():
            raise SettingsRefused(
                f"SKILLPRESS_NATS_CREDS={str(settings.nats_creds)!r}: no such file (a .creds"
                " file: the user's JWT and NKey seed)"
            )
        out["user_credentials"] = str(settings.nats_creds)
    token = (env.get(settings.nats_token_env) or "").strip()
    if settings.nats_user:
        password = (env.get(settings.nats_password_env) or "").strip()
        if not password:
            raise SettingsRefused(
                f"SKILLPRESS_NATS_USER is {settings.nats_user!r}: its password goes in"
                f" ${settings.nats_password_env}, which is not set"
            )
        if token:
            raise SettingsRefused(
                f"both SKILLPRESS_NATS_USER and ${settings.nats_token_env} are set: a NATS"
                " client proves itself one way, drop one"
            )
        out["user"], out["password"] = settings.nats_user, password
    elif token:
        out["token"] = token
    if settings.nats_ca or settings.nats_cert:
        try:
            context = ssl.create_default_context(
                cafile=str(settings.nats_ca) if settings.nats_ca else None
            )
            if settings.nats_cert:
                context.load_cert_chain(
                    str(settings.nats_cert), str(settings.nats_key) if settings.nats_key else None
                )
        except (OSError, ssl.SSLError) as exc:
            raise SettingsRefused(
                f"SKILLPRESS_NATS_CA / SKILLPRESS_NATS_CERT / SKILLPRESS_NATS_KEY cannot be read"
                f" as TLS files ({exc})"
            ) from None
        out["tls"] = context
    return out


class BrokerUnavailable(Unavailable):
    """NATS cannot be reached."""


class StreamReplicasRefused(Permanent):
    """A stream's replica count differs from the one configured and the server would not change it."""

    problem = "replicas-refused"


def broker_options(settings: Settings, url: str) -> dict[str, Any]:
    """`nats_options` as FastStream's NatsBroker takes them: one `security` object."""
    from faststream.nats.security import (
        NatsCredentials,
        NatsSecurity,
        NatsToken,
        NatsUserPassword,
    )

    found = nats_options(settings, url)
    tls = found.get("tls")
    security: NatsSecurity | None = None
    if "user_credentials" in found:
        security = NatsCredentials(found["user_credentials"], ssl_context=tls)
    elif "user" in found:
        security = NatsUserPassword(found["user"], found["password"], ssl_context=tls)
    elif "token" in found:
        security = NatsToken(found["token"], ssl_context=tls)
    elif tls is not None:
        security = NatsSecurity(ssl_context=tls)
    return {"security": security} if security is not None else {}


async def connect(
    url: str,
    name: str = "skillpress",
    *,
    attempts: int = 3,
    options: Mapping[str, Any] | None = None,
) -> Client:
    """A connection to NATS, its troubles logged as one structured event each (never the
    library's tracebacks); BrokerUnavailable when it cannot be reached after `attempts` tries
    half a second apart (a command line gives up in a few seconds). `options`: how it proves
    itself (`nats_options`); the embedded server's credentials ride in its URL."""
    from skillpress.platform.logging import get_logger

    shown = shown_url(url)
    log = get_logger("broker").bind(nats=shown, client=name)
    last: list[str] = []

    async def on_error(exc: Exception) -> None:
        last[:] = [f"{type(exc).__name__}: {exc}"]
        log.info("nats.error", error=last[0])

    held: list[Client] = []  # the client, once made: which server it lost or found
    on: list[str | None] = [None]  # the server it was last connected to

    def server() -> str | None:
        found = held[0].connected_url if held else None
        on[0] = found.netloc.rpartition("@")[2] if found is not None else on[0]
        return on[0]

    async def on_disconnected() -> None:
        if held and held[0].is_closed:  # closed on purpose: nothing was lost
            return
        log.warning("nats.disconnected", server=on[0])

    async def on_reconnected() -> None:
        log.warning("nats.reconnected", server=server())

    servers = server_list(url)
    try:
        # bounded here too: nats-py keeps trying a server whose TLS certificate it refused
        # well past its own attempts (a wrong CA bundle would hang a command line forever)
        client = await asyncio.wait_for(
            nats.connect(
                servers,
                name=name,
                connect_timeout=2,
                reconnect_time_wait=0.5,
                max_reconnect_attempts=attempts,
                allow_reconnect=True,
                error_cb=on_error,
                disconnected_cb=on_disconnected,
                reconnected_cb=on_reconnected,
                **dict(options or {}),
            ),
            timeout=(2.5 * len(servers)) * (attempts + 1) + 2,
        )
    except Exception as exc:  # nats-py raises several unrelated types for a refused connection
        why = last[0] if last else f"{type(exc).__name__}: {exc}"
        if "authorization violation" in why.lower():
            why += "; this NATS asks for credentials (SKILLPRESS_NATS_CREDS, _USER, _TOKEN_ENV)"
        raise BrokerUnavailable(f"cannot reach NATS at {shown} ({why})") from None
    held.append(client)
    log.info("nats.connected", server=server())
    return client


async def ensure_stream(
    nc: Client,
    replicas: int = 1,
    patience: float = 30.0,
    waiting: Callable[[str], None] = lambda error: None,
    bucket: bool = True,
) -> StreamConfig:
    """Create the streams and the live bucket with `replicas` copies each where they are missing,
    and bring an existing stream's subjects up to date; returns the main stream's configuration.

    An existing stream's replica count is never changed here: any client calls this on start, and
    one started without SKILLPRESS_STREAM_REPLICAS would otherwise bring a cluster's R3 streams
    down to one copy. A count that differs from `replicas` is a warning naming both; only
    `set_replicas` (the operator's `skillpress streams --replicas N`) changes it. A JetStream API
    that does not answer (a cluster electing a leader) is asked again for up to `patience` s,
    `waiting` told each time. `bucket` False leaves the live bucket alone (a stage's user may
    not touch it: `nats_roles`)."""
    return await patiently(
        lambda: _ensure_all(nc, replicas, change=False, bucket=bucket), patience, waiting
    )


async def set_replicas(nc: Client, replicas: int, patience: float = 60.0) -> list[StreamState]:
    """The operator's change: every stream and the live bucket brought to `replicas` copies
    (created where missing); StreamReplicasRefused, saying what to do, when the server will not
    (a single server holds one). Each stream's state afterwards."""
    await patiently(lambda: _ensure_all(nc, replicas, change=True), patience)
    return await stream_states(nc)


@dataclass(frozen=True)
class StreamState:
    """A stream's name, its replica count, and the cluster nodes holding it (leader first)."""

    name: str
    replicas: int
    nodes: tuple[str, ...]
    messages: int


async def stream_states(nc: Client) -> list[StreamState]:
    """Each skillpress stream as the server holds it (missing ones left out)."""
    js = nc.jetstream(timeout=10)
    out = []
    for name in (STREAM, EXHAUSTED_STREAM, f"KV_{LIVE_BUCKET}"):
        try:
            info = await js.stream_info(name)
        except NotFoundError:
            continue
        cluster = info.cluster
        nodes: tuple[str, ...] = ()
        if cluster is not None:
            named = [cluster.leader, *(r.name for r in cluster.replicas or [])]
            nodes = tuple(n for n in named if n)
        out.append(
            StreamState(name, info.config.num_replicas or 1, nodes, info.state.messages or 0)
        )
    return out


async def patiently(
    make: Callable[[], Awaitable[T]],
    patience: float,
    waiting: Callable[[str], None] = lambda error: None,
) -> T:
    """`make()`, asked again every half second while JetStream does not answer (a cluster just
    formed or electing a leader: its API requests time out or answer 503), `waiting` told each time; after
    `patience` s, BrokerUnavailable in one line."""
    import asyncio
    import time

    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.errors import (
        ServiceUnavailableError,
    )  # 503: "JetStream system temporarily unavailable"

    deadline = time.monotonic() + patience
    while True:
        try:
            return await make()
        except (NatsTimeout, NoRespondersError, ServiceUnavailableError, TimeoutError) as exc:
            if time.monotonic() > deadline:
                raise BrokerUnavailable(
                    f"JetStream did not answer for {patience:g} s (a cluster without a leader?)"
                ) from None
            waiting(f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(0.5)


async def _ensure_all(
    nc: Client, replicas: int, *, change: bool, bucket: bool = True
) -> StreamConfig:
    # moving a stream's copies between nodes takes longer than the 5 s a plain request waits
    js = nc.jetstream(timeout=30 if change else 5)
    await _ensure(
        js,
        StreamConfig(
            name=EXHAUSTED_STREAM,
            subjects=[EXHAUSTED_SUBJECTS],
            max_age=STREAM_MAX_AGE,
            num_replicas=replicas,
        ),
        change=change,
    )
    if bucket:
        try:
            await js.key_value(LIVE_BUCKET)
        except (NotFoundError, BucketNotFoundError):
            config = KeyValueConfig(bucket=LIVE_BUCKET, history=5, replicas=replicas)
            await js.create_key_value(config)
        else:
            await _ensure(js, None, f"KV_{LIVE_BUCKET}", replicas, change=change)
    return await _ensure(
        js,
        StreamConfig(
            name=STREAM,
            subjects=list(STREAM_SUBJECTS),
            duplicate_window=120.0,
            max_age=STREAM_MAX_AGE,
            num_replicas=replicas,
        ),
        change=change,
    )


async def _ensure(
    js: Any,
    config: StreamConfig | None,
    name: str | None = None,
    replicas: int | None = None,
    *,
    change: bool,
) -> StreamConfig:
    """The stream `config` names (created when missing), its subjects made as given, its replicas
    changed to the ones given only when `change` (else a differing count is a warning)."""
    name = name or (config.name if config is not None else None)
    want: int = replicas or (config.num_replicas if config is not None else None) or 1
    try:
        info = await js.stream_info(name)
    except NotFoundError:
        assert config is not None
        made: StreamConfig = (await _refusing(js.add_stream(config), name, 0, want)).config
        return made
    current: StreamConfig = info.config
    had: int = current.num_replicas or 1
    if had != want and not change:
        from skillpress.platform.logging import get_logger

        get_logger("broker").warning(
            "broker.stream_replicas_differ",
            stream=name,
            replicas=had,
            setting=want,
            message=f"stream {name} keeps {had} replica{'s' if had != 1 else ''} and this"
            f" client's SKILLPRESS_STREAM_REPLICAS is {want}: left at {had} (a client never"
            f" changes it; `skillpress streams --replicas {want}` does)",
        )
        want = had
    subjects = config.subjects if config is not None else current.subjects
    max_age = config.max_age if config is not None else current.max_age
    if (
        sorted(current.subjects or []) == sorted(subjects or [])
        and had == want
        and round(current.max_age or 0) == round(max_age or 0)
    ):
        return current
    current.subjects, current.num_replicas, current.max_age = subjects, want, max_age
    updated: StreamConfig = (await _refusing(js.update_stream(current), name, had, want)).config
    return updated


async def _refusing(call: Any, name: str | None, had: int, want: int) -> Any:
    from nats.js.errors import APIError

    try:
        return await call
    except APIError as exc:
        if want == had:
            raise
        if had:  # the operator's change
            why = f"stream {name} has {had} replica{'s' if had != 1 else ''} and {want} were asked for"
            fix = f"or keep {had}"
        else:
            why = f"stream {name} does not exist yet and SKILLPRESS_STREAM_REPLICAS asks for {want}"
            fix = "or set SKILLPRESS_STREAM_REPLICAS=1"
        raise StreamReplicasRefused(
            f"{why}; NATS refused ({exc.description or exc}). A single server holds 1: run a"
            f" cluster of at least {want} nodes, {fix}"
        ) from None


async def stop_broker(broker: Any, who: str) -> None:
    """Stop a FastStream broker as a process ends: drained when NATS answers; when it does not
    (gone, or reconnecting after a node came back) there is nothing left to drain, and that is a
    warning line (`<who>.stopped_without_drain`), never a traceback out of a clean stop."""
    try:
        await broker.stop()
    except Exception as exc:  # noqa: BLE001 (NATS gone or reconnecting: nothing to drain)
        from skillpress.platform.logging import get_logger

        get_logger(who).warning(
            f"{who}.stopped_without_drain", error=f"{type(exc).__name__}: {exc}"
        )
