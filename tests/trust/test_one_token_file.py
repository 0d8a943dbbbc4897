"""Invariant: the token file and the sign-out list change one change at a time, each held to its rule as the file is
then (`platform/operator_tokens._change`: a lock beside the file across processes, the rule
asked inside it, the file replaced whole).

Every face that makes or revokes tokens (`skillpress token add|revoke`, `POST /v1/tokens`, the
bootstrap `up` and `serve` make on a new home) ends there. Attacked with N changes at once: a
token added while another was revoked brought the revoked one back; two operators revoking
each other at once left a home with no operator, whose next token anyone may make; people
making the first token of a home at once each became an operator."""

from __future__ import annotations

from pathlib import Path

from skillpress.app.base.roles import add_token_as, revoke_as, tokens_file
from skillpress.errors import Refused
from skillpress.platform.operator_tokens import OPERATOR, RUNTIME, read_tokens
from skillpress.platform.settings import Settings
from tests.trust.harness import N, race

ROUNDS = 25  # each race is short: run it again


def _settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", refresh_interval=0)


def test_the_first_token_of_a_home_is_made_once(tmp_path: Path) -> None:
    for n in range(ROUNDS):
        settings = _settings(tmp_path / str(n))
        outcomes = race(N, lambda i, s=settings: add_token_as(s, f"op{i}", OPERATOR, None))
        made = [o for o in outcomes if isinstance(o, str)]
        assert len(made) == 1, outcomes
        assert all(isinstance(o, (str, Exception)) for o in outcomes)
        operators = [t for t in read_tokens(tokens_file(settings)).values() if t.role == OPERATOR]
        assert len(operators) == 1, operators


def test_a_revoked_token_stays_revoked_while_others_are_made(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    alice = add_token_as(settings, "alice", OPERATOR, None)
    for n in range(ROUNDS):
        add_token_as(settings, f"victim{n}", RUNTIME, alice)

        def change(i: int, n: int = n) -> object:
            if i == 0:
                return revoke_as(settings, f"victim{n}", alice)
            return add_token_as(settings, f"r{n}-{i}", RUNTIME, alice)

        outcomes = race(N, change)
        assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
        names = set(read_tokens(tokens_file(settings)))
        assert f"victim{n}" not in names, n
        assert {f"r{n}-{i}" for i in range(1, N)} <= names, (n, sorted(names))


def test_two_operators_revoking_each_other_at_once_leave_one(tmp_path: Path) -> None:
    for n in range(ROUNDS):
        settings = _settings(tmp_path / str(n))
        alice = add_token_as(settings, "alice", OPERATOR, None)
        bob = add_token_as(settings, "bob", OPERATOR, alice)
        mine = {"alice": alice, "bob": bob}
        outcomes = race(
            2,
            lambda i, s=settings, m=mine: revoke_as(s, ["bob", "alice"][i], m[["alice", "bob"][i]]),
        )
        # the second finds its own token revoked, or its peer the last operator
        refused = [o for o in outcomes if isinstance(o, Refused)]
        assert len(refused) == 1, outcomes
        operators = [t for t in read_tokens(tokens_file(settings)).values() if t.role == OPERATOR]
        assert len(operators) == 1, (n, operators)


def test_sessions_signed_out_at_once_on_two_servers_stay_signed_out(tmp_path: Path) -> None:
    """The console's sign-out list (`signed-out` in the home) is shared by every server of the
    home: two servers signing sessions out at once each wrote the list it had read, so the
    first one's session worked again on the others."""
    from skillpress.api.auth import load_operators

    home = tmp_path / "home"
    servers = [load_operators(home, None, "127.0.0.1") for _ in range(N)]
    for n in range(ROUNDS):
        cookies = [server.session("operator") for server in servers]
        race(N, lambda i, c=cookies: servers[i].sign_out(c[i]))
        fresh = load_operators(home, None, "127.0.0.1")  # a server started after
        assert [fresh.session_operator(c) for c in cookies] == [None] * N, n
