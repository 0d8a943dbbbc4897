"""Every spec of the corpus derives within the budgets, or is refused with a one-line reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from skillpress.derive import SpecRefused, derive_package
from skillpress.derive.render import MAX_FILE_BYTES, MAX_FILE_LINES
from skillpress.format.expand import has_ref_keyword
from skillpress.runtime.interop.tool_lists import package_tools
from tests.conftest import GITHUB, SPECS, corpus, spec_bytes
from tests.derived import derived
from tests.navigation import listing_files, reads_to_operations
from tests.synthetic import synthetic_spec

REFUSED = {
    "adyen-management-notification-v3.json": "only webhooks",
}
TOOL_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@pytest.mark.corpus
@pytest.mark.parametrize("spec", corpus(), ids=lambda p: p.name)
def test_spec_derives_within_budgets_or_is_refused_clearly(spec: Path) -> None:
    data = spec_bytes(spec)
    if spec.name in REFUSED:
        with pytest.raises(SpecRefused) as info:
            derive_package(data)
        reason = str(info.value)
        assert REFUSED[spec.name] in reason and "\n" not in reason
        return
    package = derived(spec)
    meta = json.loads(package.files["skill.json"])
    assert meta["stats"]["operations"] == len(meta["operations"]) > 0
    for path, content in package.files.items():
        if path in ("types.json", "skill.json", "index.json"):  # for machines, not agents
            continue
        text = content.decode()
        assert len(content) <= MAX_FILE_BYTES, f"{path} is {len(content)} bytes"
        assert text.count("\n") + 1 <= MAX_FILE_LINES, path
    body = package.files["body.md"].decode()
    assert len(body.encode()) <= 8 * 1024
    assert "http://" not in body and "https://" not in body, "the manifest never shows a URL"
    names = [op["name"] for op in meta["operations"]]
    assert len(set(names)) == len(names)
    _navigable(package.files)
    for op in meta["operations"]:
        assert f"{op['name']}.md" in package.files
    tools = package_tools(package.files, "anthropic")
    assert len(tools) == meta["stats"]["tools"]
    seen = set()
    for tool in tools:
        assert 1 <= len(tool["name"]) <= 64 and set(tool["name"]) <= TOOL_NAME_CHARS
        assert tool["name"] not in seen
        seen.add(tool["name"])
        schema = tool["input_schema"]
        Draft202012Validator.check_schema(schema)
        assert not has_ref_keyword(schema)
        assert len(json.dumps(schema, separators=(",", ":")).encode()) <= 24 * 1024
        assert schema["type"] == "object"


def _navigable(files: dict[str, bytes]) -> None:
    """Every operation two reads from the body (three past 3,000 operations), listed in exactly one
    file, and no two files with names a case-insensitive file system would take for one."""
    reads = reads_to_operations(files)
    most = 2 if len(reads) <= 3000 else 3
    far = {name: n for name, n in reads.items() if n is None or n > most}
    assert not far, f"{len(far)} operations further than {most} reads, e.g. {sorted(far)[:3]}"
    listed = {name: where for name, where in listing_files(files).items() if len(where) != 1}
    assert not listed, f"operations not listed exactly once: {sorted(listed.items())[:3]}"
    lowered = [p.lower() for p in files]
    assert len(set(lowered)) == len(lowered)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "spec", [p for p in corpus() if p.name not in REFUSED][:8], ids=lambda p: p.name
)
def test_same_input_gives_byte_identical_package(spec: Path) -> None:
    a = derived(spec)  # derived earlier in this session, by another test
    b = derive_package(spec_bytes(spec))
    assert a.files == b.files
    assert a.version_id == b.version_id


def test_a_changed_spec_gives_a_different_version_id() -> None:
    spec = (Path(__file__).parents[1] / "fixtures/specs/oai-petstore-expanded.yaml").read_bytes()
    changed = spec.replace(b"Creates a new pet in the store.", b"Adds a pet to the store.")
    assert derive_package(spec).version_id != derive_package(changed).version_id


@pytest.mark.corpus
@pytest.mark.parametrize(
    "spec",
    [SPECS / n for n in ("adyen-checkout-v70.json", "stripe.json", "jira.json", "kubernetes.json")]
    + [SPECS / "slack.json", GITHUB],
    ids=lambda p: p.name,
)
def test_every_operation_of_the_apis_people_bring_is_a_tool(spec: Path) -> None:
    package = derived(spec)
    stats = package.manifest.stats
    assert stats.tools == stats.operations, dict(stats.not_tools)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "spec", [p for p in corpus() if p.name not in REFUSED], ids=lambda p: p.name
)
def test_every_tool_of_every_package_loads_and_is_listed_over_mcp(spec: Path) -> None:
    """Not sampled: each tool through the runtime's own loader, and all of them in one eager
    tools/list of the SDK's client against the MCP server."""
    import asyncio

    from mcp import Client

    from skillpress.mcp.server import BASE_TOOLS, build_mcp_server
    from skillpress.runtime.package.skill import load_skill

    package = derived(spec, "https://api.example.test")
    skill = load_skill(package.files, lazy=True)
    names = [e.tool for e in skill.operations if e.tool]
    assert len(names) == package.manifest.stats.tools
    for name in names:
        skill.tool(name)  # raises PackageError naming the file for any that does not load

    async def listed() -> list[str]:
        server = build_mcp_server(load_skill(package.files, lazy=True), package.files, eager=True)
        async with Client(server) as client:
            return [t.name for t in (await client.list_tools()).tools]

    tools = asyncio.run(listed())
    assert [t for t in tools if t not in BASE_TOOLS] == names


def test_a_credential_the_api_takes_as_a_parameter_is_never_an_argument() -> None:
    package = derived(SPECS / "slack.json")
    offered = [
        t["name"]
        for t in package_tools(package.files, "anthropic")
        if "token" in t["input_schema"]["properties"]
    ]
    assert offered == []
    assert (
        package.manifest.auth.header == "Authorization" and package.manifest.auth.kind == "bearer"
    )


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("operations", "roots", "reads", "sections"),
    [(3000, False, 2, 0), (10000, False, 2, 0), (20000, True, 3, 6)],
    ids=["3k", "10k", "20k-flat-roots"],
)
def test_navigation_holds_at_any_size(
    operations: int, roots: bool, reads: int, sections: int
) -> None:
    package = derive_package(synthetic_spec(operations, roots=roots))
    files = package.files
    assert len(files["body.md"]) <= 8 * 1024
    assert len(package_tools(files, "mcp")) == operations  # every tool, through the loader
    assert set(reads_to_operations(files).values()) == {reads}
    assert len(package.manifest.sections) == sections
    _navigable(files)
    for path, content in files.items():
        if path.endswith(".md"):
            assert len(content) <= MAX_FILE_BYTES and content.count(b"\n") < MAX_FILE_LINES, path
    if sections:
        body = files["body.md"].decode()
        assert "- `section_1` — 3345 operations in 223 categories: res0 … res222." in body
