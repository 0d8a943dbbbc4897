"""Conformance: requests built from generated tool arguments pass Prism's validation of the spec.

For every declared operation of each spec: arguments generated from its tool schema, translated
by the runtime, sent with the skill's credential to a Prism mock of that same spec. Prism judges
the method, path, path parameters, query string, Content-Type, body and credential against the
original document, independently of our derivation.

Header parameters are arguments sent as headers, multipart and raw bodies carry files given as
base64 content, and a JSON-content query parameter goes as JSON: Prism judges all of them too.
The credential's own header is the one header a call never takes from its arguments.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from skillpress.derive import DeriveOptions, derive_package
from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.execute import send
from skillpress.runtime.calling.request import CallRefused
from skillpress.runtime.calling.translate import build_request
from skillpress.runtime.package.model import Skill, Tool
from skillpress.runtime.package.skill import load_skill
from tests.prism import PrismMock, request_violations
from tests.runtime.schema_strategy import ASCII_TEXT, valid_values

pytestmark = pytest.mark.integration  # starts real servers

SPECS = Path(__file__).parents[1] / "fixtures" / "specs"
# Three OpenAPI 3 and two Swagger 2.0 documents: path, query (lists, enums, patterns, formats),
# JSON bodies, API-key, bearer and basic credentials. Prism takes over a minute to start on
# some larger documents (figma, blockfrost), which would dominate the suite's time.
CONFORMANCE = [
    "oai-petstore-expanded.yaml",
    "twilio-insights-v2.json",
    "readme-api.json",
    "jupyter-server.swagger2.yaml",
    "harbor.swagger2.yaml",
    # written for skillpress: every query style, form bodies (flat, nested, lists), merge-patch,
    # a body that clashes with a parameter, a query parameter named like a path parameter
    "../conformance/styles-forms.yaml",
]
EXAMPLES_PER_TOOL = 2


class _Findings:
    def __init__(self) -> None:
        self.violations: list[str] = []
        self.allowed: list[str] = []
        self.mock_failures: list[str] = []
        self.sent = 0


def _exploded_form_array(request: Any, args: dict[str, Any], message: str) -> bool:
    """Prism's misreading, not ours: a form body's array is sent one pair per item
    (`colours=red&colours=blue`: style form, exploded, the default the spec gives form bodies),
    which Prism's form parser refuses as "must be array" however many items there are. Only
    exactly that is let pass: the property was an array argument and went as one pair per item."""
    named = re.fullmatch(r"Request body property (\S+) must be array", message)
    content_type = dict((k.lower(), v) for k, v in request.headers).get("content-type", "")
    if named is None or not content_type.startswith("application/x-www-form-urlencoded"):
        return False
    sent = args.get(named.group(1))
    pairs = parse_qsl((request.body or b"").decode(), keep_blank_values=True)
    values = [value for key, value in pairs if key == named.group(1)]
    return isinstance(sent, list) and bool(sent) and values == [str(item) for item in sent]


def _exercise(
    tool: Tool,
    skill: Skill,
    credential: Credential | None,
    environ: dict[str, str],
    found: _Findings,
) -> None:

    @settings(
        max_examples=EXAMPLES_PER_TOOL,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(valid_values(tool.schema, ASCII_TEXT))
    def conforms(args: dict[str, Any]) -> None:
        try:
            request = build_request(tool, args, skill.hosts)
        except CallRefused as refused:
            # Only the deliberately refused values (a path segment '.' or '..', a header of
            # blanks, which HTTP would send as empty) may stop a valid call.
            assert (
                "is a path segment and cannot be" in refused.reason
                or "is a header and cannot be only blanks" in refused.reason
            ), refused
            return
        result = send(request, credential=credential, environ=environ)
        found.sent += 1
        if result.status == 406:
            # the spec's own `accept` parameter offers a type its responses do not declare
            # (ReadMe's askOwlbot: text/event-stream): Prism cannot answer it, the request is valid
            found.mock_failures.append(
                f"{tool.operation}: 406 for {dict(request.headers).get('accept')}"
            )
            return
        if result.status >= 500:
            # Prism failing to mock a response (a binary or text body it cannot serialise) says
            # nothing of the request, which it validated first; recorded, not judged.
            found.mock_failures.append(f"{tool.operation}: {result.status}")
            return
        for v in request_violations(result.status, result.headers, result.body):
            line = f"{tool.operation}: {request.method} {request.url} → {result.status} {v.get('message')}"
            message = str(v.get("message", ""))
            if _exploded_form_array(request, args, message):
                found.allowed.append(line)
            else:
                found.violations.append(line)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conforms()


@pytest.mark.parametrize("spec_name", CONFORMANCE, ids=lambda n: Path(n).name)
def test_prism_finds_no_request_violations(spec_name: str, tmp_path: Path) -> None:
    spec = SPECS / spec_name
    found = _Findings()
    with PrismMock(spec, tmp_path) as prism:
        package = derive_package(spec.read_bytes(), DeriveOptions(base_url=prism.url))
        skill = load_skill(package.files)
        assert skill.tools, f"{spec_name} declares no tools"
        credential = Credential(skill.auth, "CONFORMANCE_CREDENTIAL") if skill.auth else None
        environ = {
            "CONFORMANCE_CREDENTIAL": "user:secret"
            if skill.auth and skill.auth.kind == "basic"
            else "token-123"
        }
        for tool in skill.tools:
            _exercise(tool, skill, credential, environ, found)
    assert found.sent >= len(skill.tools), (
        f"only {found.sent} requests for {len(skill.tools)} tools"
    )
    assert not found.violations, f"{len(found.violations)} request(s) Prism refused:\n" + "\n".join(
        found.violations[:30]
    )
