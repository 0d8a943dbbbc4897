"""Settings from the environment: an S3 endpoint given as a URL is taken (its scheme deciding TLS)
or refused saying what form is wanted, and any setting that cannot be used stops a command in one
line naming its variable, never a validation traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skillpress.platform.settings import Settings, SettingsRefused, load_settings


@pytest.mark.parametrize(
    ("given", "endpoint", "secure"),
    [
        ("127.0.0.1:8333", "127.0.0.1:8333", False),
        ("http://127.0.0.1:8333", "127.0.0.1:8333", False),
        ("http://127.0.0.1:8333/", "127.0.0.1:8333", False),
        ("https://s3.example.com", "s3.example.com", True),
        ("  ", None, False),
    ],
)
def test_an_s3_endpoint_is_host_port_or_a_url(
    given: str, endpoint: str | None, secure: bool, tmp_path: Path
) -> None:
    chosen = load_settings(home=tmp_path, s3_endpoint=given)
    assert (chosen.s3_endpoint, chosen.s3_secure) == (endpoint, secure)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("http://127.0.0.1:8333/bucket", "has a path, a query or credentials"),
        ("http://key:secret@127.0.0.1:8333", "has a path, a query or credentials"),
        ("ftp://127.0.0.1:21", "is not an http(s) endpoint"),
        ("127.0.0.1:8333/bucket", "is not host:port"),
    ],
)
def test_an_s3_endpoint_that_is_not_one_is_refused_saying_the_form(
    given: str, said: str, tmp_path: Path
) -> None:
    with pytest.raises(SettingsRefused, match="SKILLPRESS_S3_ENDPOINT") as refused:
        load_settings(home=tmp_path, s3_endpoint=given)
    assert said in str(refused.value) and "host:port" in str(refused.value)
    assert "secret" not in str(refused.value)  # a credential in it is never said back


def test_a_scheme_and_an_explicit_secure_setting_must_agree(tmp_path: Path) -> None:
    with pytest.raises(SettingsRefused, match="says https but SKILLPRESS_S3_SECURE says false"):
        load_settings(home=tmp_path, s3_endpoint="https://s3.example.com", s3_secure=False)


@pytest.mark.integration  # the command line as a process (tests/conftest.py)
@pytest.mark.parametrize(
    ("env", "said"),
    [
        (
            {"SKILLPRESS_S3_ENDPOINT": "http://127.0.0.1:9/bucket"},
            "SKILLPRESS_S3_ENDPOINT",
        ),
        (
            {"SKILLPRESS_STREAM_REPLICAS": "abc"},
            "SKILLPRESS_STREAM_REPLICAS='abc': Input should be a valid integer",
        ),
    ],
    ids=["s3-url-with-a-path", "replicas-not-a-number"],
)
def test_a_setting_that_cannot_be_used_stops_a_command_in_one_line(
    env: dict[str, str], said: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "skillpress.cli.main", "versions", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SKILLPRESS_HOME": str(tmp_path / "home"), **env},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and said in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_nats_credentials_come_from_the_variables_the_settings_name(tmp_path: Path) -> None:
    from skillpress.platform.broker import nats_options

    url = "nats://nats.internal:4222"
    plain = Settings(home=tmp_path)
    assert nats_options(plain, url, {}) == {}
    token = nats_options(plain, url, {"SKILLPRESS_NATS_TOKEN": "t0k\n"})
    assert token == {"token": "t0k"}
    user = Settings(home=tmp_path, nats_user="svc", nats_password_env="MY_NATS_PW")
    assert nats_options(user, url, {"MY_NATS_PW": "pw"}) == {"user": "svc", "password": "pw"}
    with pytest.raises(
        SettingsRefused, match=r"its password goes in \$MY_NATS_PW, which is not set"
    ):
        nats_options(user, url, {})
    with pytest.raises(SettingsRefused, match="drop one"):
        nats_options(user, url, {"MY_NATS_PW": "pw", "SKILLPRESS_NATS_TOKEN": "t"})
    creds = Settings(home=tmp_path, nats_creds=tmp_path / "missing.creds")
    with pytest.raises(
        SettingsRefused, match="SKILLPRESS_NATS_CREDS='.*missing.creds': no such file"
    ):
        nats_options(creds, url, {})
    # the embedded server's URL carries its own: the configured ones are not sent there
    assert nats_options(user, "nats://skillpress:pw@127.0.0.1:4222", {}) == {}


def test_the_workers_broker_is_given_the_same_credentials_as_every_client(tmp_path: Path) -> None:
    import os

    from faststream.nats.security import NatsToken, NatsUserPassword

    from skillpress.platform.broker import broker_options

    url = "nats://nats.internal:4222"
    user = Settings(home=tmp_path, nats_user="svc", nats_password_env="MY_NATS_PW")
    os.environ["MY_NATS_PW"] = "pw"
    try:
        security = broker_options(user, url)["security"]
        assert isinstance(security, NatsUserPassword)
        assert (security.username, security.password) == ("svc", "pw")
    finally:
        del os.environ["MY_NATS_PW"]
    os.environ["SKILLPRESS_NATS_TOKEN"] = "t0k"
    try:
        assert isinstance(broker_options(Settings(home=tmp_path), url)["security"], NatsToken)
    finally:
        del os.environ["SKILLPRESS_NATS_TOKEN"]
    assert broker_options(Settings(home=tmp_path), url) == {}
