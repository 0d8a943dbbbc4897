"""Who gets in: named operator tokens in a private file, signed sessions, CSRF tokens, and no
listening beyond loopback without a token made first."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from skillpress.api.auth import TokenRefused, add_token, load_operators
from tests.cli.test_up import home_env


def test_the_first_loopback_start_generates_a_private_token(tmp_path: Path) -> None:
    operators = load_operators(tmp_path, None, "127.0.0.1")
    path = tmp_path / "operator-tokens"
    assert operators.generated and operators.who(operators.generated) == "operator"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "session-key").stat().st_mode) == 0o600
    again = load_operators(tmp_path, None, "127.0.0.1")
    assert again.generated is None and again.tokens == operators.tokens


def test_no_token_no_listening_beyond_loopback(tmp_path: Path) -> None:
    with pytest.raises(TokenRefused, match=r"skillpress token add NAME"):
        load_operators(tmp_path, None, "0.0.0.0")
    assert not (tmp_path / "operator-tokens").exists()
    secret = add_token(tmp_path / "operator-tokens", "ops-alice")
    operators = load_operators(tmp_path, None, "0.0.0.0")
    assert operators.who(secret) == "ops-alice" and operators.who(secret + "x") is None
    with pytest.raises(TokenRefused, match="already has a token"):
        add_token(tmp_path / "operator-tokens", "ops-alice")
    with pytest.raises(TokenRefused, match="token name"):
        add_token(tmp_path / "operator-tokens", "Bad Name")


@pytest.mark.integration  # the command line or a server as a process, beside a server
def test_serve_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "skillpress.cli.main", "serve", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        env=home_env(tmp_path / "home"),
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: refusing to listen on 0.0.0.0 with no operator token")


@pytest.mark.integration  # the command line or a server as a process, beside a server
def test_serve_on_a_port_in_use_says_so_in_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "skillpress.cli.main", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            env=home_env(tmp_path / "home", log_format="json"),
            timeout=20,
        )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "never retrieved" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: cannot serve on http://127.0.0.1:{port}: port {port} on 127.0.0.1 is in use by"
        " another program: pick another with --port (0: any free one)"
    )


def test_sessions_and_csrf_tokens_are_signed_and_expire(tmp_path: Path) -> None:
    operators = load_operators(tmp_path, None, "127.0.0.1")
    cookie = operators.session("operator", now=1000.0)
    assert operators.session_operator(cookie, now=1001.0) == "operator"
    assert operators.session_operator(cookie, now=1000.0 + 13 * 3600) is None  # expired
    name, expires, sid, mac = cookie.split(":")
    assert operators.session_operator(f"admin:{expires}:{sid}:{mac}", now=1001.0) is None
    assert (
        operators.session_operator(f"{name}:{int(expires) + 9999}:{sid}:{mac}", now=1001.0) is None
    )
    assert operators.session_operator(f"{name}:{expires}:other:{mac}", now=1001.0) is None
    assert operators.csrf_ok(cookie, operators.csrf(cookie))
    assert not operators.csrf_ok(cookie, operators.csrf(cookie + "x"))
    assert not operators.csrf_ok(None, operators.csrf(cookie))


def test_a_signed_out_session_stops_working_on_every_server_of_the_home(tmp_path: Path) -> None:
    first = load_operators(tmp_path, None, "127.0.0.1")
    second = load_operators(tmp_path, None, "127.0.0.1")  # another replica on the same home
    kept, ended = first.session("operator"), first.session("operator")
    assert second.session_operator(ended) == "operator"
    first.sign_out(ended)
    assert first.session_operator(ended) is None and second.session_operator(ended) is None
    assert second.session_operator(kept) == "operator"  # only that session
    assert oct((tmp_path / "signed-out").stat().st_mode & 0o777) == "0o600"
    old = first.session("operator", now=1000.0)
    first.sign_out(old, now=1001.0)
    first.sign_out(first.session("operator"))
    lines = (tmp_path / "signed-out").read_text().splitlines()
    assert len(lines) == 2, "an expired session is not kept on the list"


@pytest.mark.integration  # the command line or a server as a process, beside a server
def test_a_revoked_token_and_its_sessions_stop_working_on_a_running_server(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    env = home_env(home)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "skillpress.cli.main", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    made = cli("token", "add", "ops-alice")
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip()
    # the next token is an operator's to make
    assert cli("token", "add", "ops-bob").returncode == 2
    env["SKILLPRESS_OPERATOR_TOKEN"] = secret
    assert cli("token", "add", "ops-bob").returncode == 0
    assert [ln.split()[:2] for ln in cli("token", "list").stdout.splitlines()] == [
        ["ops-alice", "operator"],
        ["ops-bob", "operator"],
    ]
    operators = load_operators(home, None, "127.0.0.1")  # a server running on this home
    cookie = operators.session("ops-alice")
    assert operators.who(secret) == "ops-alice" and operators.session_operator(cookie)
    gone = cli("token", "revoke", "ops-alice")
    assert gone.returncode == 0, gone.stderr
    assert operators.who(secret) is None and operators.session_operator(cookie) is None
    assert [ln.split()[0] for ln in cli("token", "list").stdout.splitlines()] == ["ops-bob"]
    again = cli("token", "revoke", "ops-alice")
    assert again.returncode == 2
    assert again.stderr.startswith("error: SKILLPRESS_OPERATOR_TOKEN holds no token known here")
