"""The command line's path through a running server reads each answer into the same view the
local path returns (#41.2): a field the view lacks is kept, an answer of another shape is one
line and exit 1, never a KeyError further on."""

from __future__ import annotations

import json

import pytest
from typer import Exit

from skillpress.app.base.views import AnnotationView, VersionRow
from skillpress.cli.remote import Remote
from skillpress.platform.local_api import LocalApi

LINK = LocalApi("http://127.0.0.1:9", "t", "cli", 1)
ROW = {
    "version_id": "a" * 64,
    "status": "proposed",
    "live": False,
    "created_at": "2026-12-03T00:00:00",
    "diff": {"added": 1},
    "revision_id": None,
    "base_version_id": None,
}


def test_an_answer_is_read_into_its_view_keeping_what_the_view_does_not_name() -> None:
    data = json.dumps([ROW | {"newer_field": 7}]).encode()
    rows = Remote(LINK)._read(data, list[VersionRow], "/skills/x/versions")
    assert rows == [ROW | {"newer_field": 7}]


def test_an_answer_of_another_shape_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises((SystemExit, Exit)) as ended:
        Remote(LINK)._read(b'{"not": "a list"}', list[AnnotationView], "/skills/x/annotations")
    code = ended.value.exit_code if isinstance(ended.value, Exit) else ended.value.code
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the running server at http://127.0.0.1:9 answered")
    assert "/skills/x/annotations" in err and "\n" not in err
