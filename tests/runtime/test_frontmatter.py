"""The operation-block parser: both forms describe one schema; every publish refusal names file and field."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from skillpress.derive import derive_package
from skillpress.format.declaration import DeclarationError
from skillpress.format.frontmatter import parse_operation_file
from skillpress.runtime.package.model import PackageError
from skillpress.runtime.package.skill import load_skill

_HOLLOWBROOK = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml"

EXAMPLE = Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook-skill"


def parse(front: str, file: str = "op.md"):  # type: ignore[no-untyped-def]
    return parse_operation_file(file, f"---\n{front.strip()}\n---\n\n# op\n\nWhat it does.\n")[1]


def test_flat_lists_and_a_schema_describe_the_same_tool() -> None:
    flat = parse(
        """
operation:
  method: POST
  url: http://api.test/v1/shelves/{shelf}/books
  body: [title, pages, price, tags, in_print, sizes]
  query: [dry]
  optional: [price, tags, dry, sizes]
  integer: [pages, sizes]
  number: [price]
  boolean: [in_print, dry]
  list: [tags, sizes]
"""
    )
    schema = {
        "type": "object",
        "properties": {
            "shelf": {"type": "string"},
            "dry": {"type": "boolean"},
            "title": {"type": "string"},
            "pages": {"type": "integer"},
            "price": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "in_print": {"type": "boolean"},
            "sizes": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["shelf", "title", "pages", "in_print"],
        "additionalProperties": False,
    }
    assert flat is not None
    assert flat.schema == schema
    assert (flat.path_params, flat.query, flat.body) == (
        ("shelf",),
        ("dry",),
        ("title", "pages", "price", "tags", "in_print", "sizes"),
    )
    block = "\n".join("    " + ln for ln in json.dumps(schema, indent=2).splitlines())
    as_schema = parse(
        f"operation:\n  method: POST\n  url: http://api.test/v1/shelves/{{shelf}}/books\n  query: [dry]\n  schema: |\n{block}\n"
    )
    assert as_schema is not None and as_schema.form == "schema"
    assert (as_schema.schema, as_schema.path_params, as_schema.query, set(as_schema.body)) == (
        flat.schema,
        flat.path_params,
        flat.query,
        set(flat.body),
    )


def test_the_seed_hand_written_block_parses() -> None:
    decl = parse(
        """
operation:
  method: POST
  url: http://outturn-hollowbrook:8084/bookings
  body: [room_id, guest_name, arrival, departure]
"""
    )
    assert decl is not None
    assert decl.required == ("room_id", "guest_name", "arrival", "departure")
    assert decl.origin == "outturn-hollowbrook:8084"


def test_a_file_without_an_operation_block_is_prose_only() -> None:
    assert parse_operation_file("notes.md", "# Notes\n\nNothing to call.\n")[1] is None
    assert parse("approval: {matches: GET /x, risk: low}") is None  # a prose-only operation's gate


REFUSALS = [
    (
        "operation:\n  method: POST\n  url: http://a.test/x\n  body: [a]\n  optional: [b]",
        "op.md: operation.optional: names 'b', which is not sent (not in the URL, `body`, `query`, `header` or `cookie`)",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/x\n  body: [a]\n  integer: [aa]",
        "op.md: operation.integer: names 'aa', which is not sent (not in the URL, `body`, `query`, `header` or `cookie`)",
    ),
    (
        "operation:\n  method: GET\n  url: http://a.test/x\n  body: [a]",
        "op.md: operation.body: a GET has no body; list 'a' in `query`",
    ),
    (
        'operation:\n  method: HEAD\n  url: http://a.test/x\n  schema: \'{"type": "object", "properties": {"a": {}}}\'',
        "op.md: operation.schema: a HEAD has no body, but 'a' would be sent as one; list them in `query`",
    ),
    (
        "operation:\n  method: DELETE\n  url: http://a.test/x/{id}\n  path: [ident]",
        "op.md: operation.path: path parameter 'ident' is not in the URL; write it as a segment, /{ident}",
    ),
    (
        'operation:\n  method: GET\n  url: http://a.test/x/{id}\n  schema: \'{"type": "object", "properties": {}}\'',
        "op.md: operation.schema: path parameter {id} of the URL is not in properties",
    ),
    (
        'operation:\n  method: GET\n  url: http://a.test/x\n  query: [q]\n  schema: \'{"type": "object", "properties": {"p": {}}}\'',
        "op.md: operation.query: names 'q', which is not sent: it is not in schema.properties",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/charge\n  body: [amount]\napproval:\n  matches: POST /charges\n  risk: high",
        "op.md: approval.matches: 'POST /charges' does not match this file's operation (POST /charge); a gate in a file with an operation must match it",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/charge\n  body: [amount]\napproval:\n  matches: DELETE /charge",
        "op.md: approval.matches: 'DELETE /charge' does not match this file's operation (POST /charge); a gate in a file with an operation must match it",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/charge\n  body: [amount]\napproval:\n  matches: POST /charge\n  binds: [amount, currency]",
        "op.md: approval.binds: names 'currency', which this operation does not send",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/x\n  body: [a]\nidentity: [b]",
        "op.md: identity: names 'b', which this operation does not send",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/x\n  body: [a]\nidentity: []",
        "op.md: identity: names no field; list the fields that make two writes the same, or leave it out",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/x\n  bdoy: [a]",
        "op.md: operation: unknown key 'bdoy'; did you mean `body`? (it takes method, url, schema, identity, fixed, headers, content_type, style, body_arg, sent_as, files, paging, credential, body, query, header, cookie, path, optional, integer, number, boolean, list)",
    ),
    (
        "operation:\n  method: FETCH\n  url: http://a.test/x",
        "op.md: operation.method: 'FETCH' is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
    ),
    (
        "operation:\n  method: GET\n  url: ftp://a.test/x",
        "op.md: operation.url: 'ftp://a.test/x' is not an absolute http(s) URL (or a path, for a skill given its base URL when it is called)",
    ),
    (
        "operation:\n  method: GET\n  url: http://user:pw@a.test/x",
        "op.md: operation.url: carries credentials; name the header in the skill instead",
    ),
    (
        "operation:\n  method: GET\n  url: http://a.test/x?limit=5",
        "op.md: operation.url: has a query string or fragment; list query parameters in `query`",
    ),
    (
        "operation:\n  method: GET\n  url: http://a.test/x/{id}/y/{id}",
        "op.md: operation.url: names path parameter {id} twice",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/x/{id}\n  body: [id]",
        "op.md: operation.body: 'id' is a path parameter of the URL",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/x\n  body: [a]\n  query: [a]",
        "op.md: operation.query: 'a' is also in `body`; a name lives in one place",
    ),
    (
        "operation:\n  method: GET\n  url: http://a.test/x/{id}\n  optional: [id]",
        "op.md: operation.optional: path parameter 'id' is always required",
    ),
    (
        'operation:\n  method: POST\n  url: http://a.test/x\n  body: [a]\n  schema: \'{"type": "object"}\'',
        "op.md: operation: has both `schema` and the flat list(s) body; use one form",
    ),
    (
        'operation:\n  method: POST\n  url: http://a.test/x\n  schema: \'{"type": "object",}\'',
        "op.md: operation.schema: is not valid JSON (Expecting property name enclosed in double quotes at line 1)",
    ),
    (
        "operation: [GET, /x]",
        "op.md: operation: must be a mapping with method, url and the arguments",
    ),
    (
        "identity: [a]",
        "op.md: identity: needs an `operation:` block: it names fields of the request the block declares",
    ),
    # a misspelled key would drop what it declares: the DELETE would go out ungated
    (
        "operation:\n  method: DELETE\n  url: http://a.test/orders/{id}\naproval:\n  matches: DELETE /orders/{id}",
        "op.md: frontmatter: unknown key 'aproval'; did you mean `approval`? (it takes operation, identity, approval)",
    ),
    (
        "operation:\n  method: POST\n  url: http://a.test/orders\n  body: [order_id]\nidentiy: [order_id]",
        "op.md: frontmatter: unknown key 'identiy'; did you mean `identity`? (it takes operation, identity, approval)",
    ),
    (
        "title: Notes",
        "op.md: frontmatter: unknown key 'title' (it takes operation, identity, approval)",
    ),
    (
        "operation:\n  method: DELETE\n  url: http://a.test/orders/{id}\napproval:\n  matches: DELETE /orders/{id}\n  rsik: high",
        "op.md: approval: unknown key 'rsik'; did you mean `risk`? (it takes matches, risk, binds, amount, currency, auto_below, auto_currency)",
    ),
]


@pytest.mark.parametrize(
    ("front", "message"),
    REFUSALS,
    ids=[m.split(": ", 2)[1] + f"-{i}" for i, (_, m) in enumerate(REFUSALS)],
)
def test_publish_refuses_naming_the_file_and_field(front: str, message: str) -> None:
    with pytest.raises(DeclarationError) as refused:
        parse(front)
    assert str(refused.value) == message


def test_malformed_frontmatter_is_refused_not_guessed() -> None:
    with pytest.raises(
        DeclarationError,
        match=r"^op.md: frontmatter: starts with '---' but has no closing '---' line$",
    ):
        parse_operation_file("op.md", "---\noperation:\n  method: GET\n")
    with pytest.raises(DeclarationError, match=r"^op.md: frontmatter: is not valid YAML"):
        parse_operation_file("op.md", "---\noperation: [\n---\n")
    with pytest.raises(DeclarationError, match=r"^op.md: frontmatter: is not a mapping"):
        parse_operation_file("op.md", "---\n- a\n- b\n---\n")
    bomb = (
        "---\na: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
            for i in range(8)
        )
        + "---\n"
    )
    with pytest.raises(DeclarationError, match=r"^op.md: frontmatter: is not valid YAML"):
        parse_operation_file("op.md", bomb)


def test_a_gate_matches_with_the_servers_base_path_left_out() -> None:
    decl = parse(
        "operation:\n  method: DELETE\n  url: https://api.test/v2/invoices/{id}\napproval:\n  matches: delete /invoices/{id}\n  risk: high"
    )
    assert decl is not None and decl.approval is not None
    assert (decl.approval.matches, decl.approval.binds) == ("DELETE /invoices/{id}", ("id",))


def test_loading_a_package_is_the_publish_check(tmp_path: Path) -> None:
    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    skill = load_skill(files)
    gate = skill.tool("cancel_booking").declaration.approval
    assert gate is not None and (gate.matches, gate.risk, gate.binds) == (
        "DELETE /bookings/{booking_id}",
        "high",
        ("booking_id",),
    )
    broken = dict(files)
    broken["cancel_booking.md"] = files["cancel_booking.md"].replace(
        b"matches: DELETE /bookings/{booking_id}", b"matches: DELETE /booking/{booking_id}"
    )
    with pytest.raises(
        PackageError,
        match=r"^cancel_booking.md: approval.matches: 'DELETE /booking/\{booking_id\}' does not match",
    ):
        load_skill(broken)


def test_a_derived_package_refuses_an_operation_off_its_hosts() -> None:
    spec = (Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml").read_bytes()
    files = dict(derive_package(spec).files)
    files["get_booking.md"] = files["get_booking.md"].replace(
        b"hollowbrook.localhost:8084", b"evil.test"
    )
    with pytest.raises(PackageError) as refused:
        load_skill(files)
    assert (
        str(refused.value)
        == "get_booking.md: operation.url goes to evil.test, which is not one of the skill's hosts (hollowbrook.localhost:8084)"
    )


def test_a_lazy_load_reads_only_the_manifest_and_the_file_of_the_tool_asked_for(
    tmp_path: Path,
) -> None:
    from skillpress.app.base.package_dir import read_package_dir, write_package_dir

    spec = (Path(__file__).parents[2] / "skillpress" / "examples" / "hollowbrook.yaml").read_bytes()
    files = dict(derive_package(spec).files)
    files["list_rooms.md"] = b"---\noperation: [not a mapping\n---\n"  # broken, never asked for
    write_package_dir(files, tmp_path / "pkg")
    on_disk = read_package_dir(tmp_path / "pkg")
    read: list[str] = []
    original = on_disk._read  # type: ignore[attr-defined]
    on_disk._read = lambda name: read.append(name) or original(name)  # type: ignore[attr-defined]
    skill = load_skill(on_disk, lazy=True)
    assert read == ["index.json"]  # not skill.json: a large API's is megabytes
    assert skill.tool("get_booking").declaration.method == "GET"
    assert read == ["index.json", "get_booking.md", "types.json"]
    assert skill.tool("hollowbrook_create_booking").declaration.method == "POST"  # a tool name
    assert read[-1] == "create_booking.md" and "skill.json" not in read
    with pytest.raises(PackageError, match=r"^list_rooms.md: "):
        skill.tool("list_rooms")
    with pytest.raises(PackageError, match=r"^list_rooms.md: "):
        load_skill(on_disk)  # the full load is the publish check: refused whole


def test_a_tool_refers_only_to_types_the_package_has() -> None:
    op = (
        b"---\noperation:\n  method: POST\n  url: http://a.test/pets\n  schema: |\n"
        b'    {"type": "object", "properties": {"pet": {"$ref": "#/types/Pet"}}}\n---\n\n# add\n\nAdd a pet.\n'
    )
    with pytest.raises(
        PackageError,
        match=r"^add.md: operation.schema refers to #/types/Pet, which types.json does not define$",
    ):
        load_skill({"add.md": op}, slug="pets")
    skill = load_skill(
        {
            "add.md": op,
            "types.json": b'{"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}}',
        },
        slug="pets",
    )
    assert skill.tool("add").schema["properties"]["pet"] == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
    }
    other = op.replace(b"#/types/Pet", b"#/components/schemas/Pet")
    with pytest.raises(PackageError, match=r"has a \$ref that is not #/types/Name"):
        load_skill({"add.md": other}, slug="pets")


_SCHEMA = '{"type": "object", "properties": {"q": {"type": "array"}, "body": {"type": "object"}, "x": {"type": "string"}}}'


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "content_type: text/plain",
            "op.md: operation.content_type: 'text/plain' is not one skillpress writes: application/json, a */*+json type, application/x-www-form-urlencoded, multipart/form-data, or any other media type as one whole-body argument (`body_arg`)",
        ),
        (
            'style: {"q": "matrix"}',
            "op.md: operation.style: 'matrix' is not one of form, csv, ssv, tsv, pipes, deepObject, json",
        ),
        (
            'style: {"x": "csv"}',
            "op.md: operation.style: names 'x', which is not a query parameter or a form body field",
        ),
        (
            'sent_as: {"nope": "path"}',
            "op.md: operation.sent_as: names 'nope', which is not a query, header, cookie or body argument",
        ),
        (
            "body_arg: nope",
            "op.md: operation.body_arg: 'nope' is not an argument in schema.properties",
        ),
        (
            "body_arg: body",
            "op.md: operation.body_arg: the body is 'body' whole, so every other argument must be a path or query parameter; 'x' would be sent in the body too",
        ),
    ],
)
def test_how_a_request_is_written_is_checked_at_publish(extra: str, message: str) -> None:
    front = f"""
operation:
  method: POST
  url: https://api.example.test/things
  query: [q]
  {extra}
  schema: '{_SCHEMA}'
"""
    with pytest.raises(DeclarationError) as refused:
        parse(front)
    assert str(refused.value) == message


def test_a_declared_style_content_type_and_whole_body_are_read_back() -> None:
    decl = parse(
        """
operation:
  method: PATCH
  url: https://api.example.test/things
  query: [q]
  content_type: application/merge-patch+json
  style: {"q": "csv"}
  body_arg: body
  schema: '{"type": "object", "properties": {"q": {"type": "array"}, "body": {"type": "object"}}}'
"""
    )
    assert (decl.content_type, decl.style_of("q"), decl.style_of("other"), decl.body_arg) == (
        "application/merge-patch+json",
        "csv",
        "form",
        "body",
    )


def test_the_index_finds_one_operation_by_its_name_or_its_tool_name() -> None:
    from skillpress.format.manifest import Manifest, OperationEntry
    from skillpress.format.skill_index import SkillIndex

    manifest = Manifest.from_json(derive_package(_HOLLOWBROOK.read_bytes()).files["skill.json"])
    tricky = (
        OperationEntry("a_b", "x.md", "GET", "/a", tool="s_b_c"),
        OperationEntry("s_b_c", "y.md", "POST", "/b", tool="s_other"),  # named like a tool
        OperationEntry("n", "n.md", "TRACE", "/n", tool=None, not_tool_reason="TRACE, no"),
    )
    index = SkillIndex.from_json(replace(manifest, operations=tricky).to_index())
    assert index.find("a_b") == ("a_b", "GET", "/a", "s_b_c", None)
    assert index.find("s_b_c") == ("s_b_c", "POST", "/b", "s_other", None)  # the name first
    assert index.find("s_other") == ("s_b_c", "POST", "/b", "s_other", None)
    assert index.find("n") == ("n", "TRACE", "/n", None, "TRACE, no")
    assert index.find("GET") is None and index.find("missing") is None
    assert [r[0] for r in index.rows] == ["a_b", "s_b_c", "n"]


def test_an_index_that_disagrees_with_the_manifest_is_refused_and_an_old_package_loads() -> None:
    files = dict(derive_package(_HOLLOWBROOK.read_bytes()).files)
    edited = dict(files)
    edited["index.json"] = files["index.json"].replace(b"get_booking", b"get_bookinG", 1)
    with pytest.raises(PackageError, match=r"^index.json: does not match skill.json"):
        load_skill(edited)
    older = {k: v for k, v in files.items() if k != "index.json"}  # derived before the index
    assert load_skill(older, lazy=True).tool("get_booking").declaration.method == "GET"
    assert load_skill(older).tool_count == load_skill(files).tool_count


@pytest.mark.parametrize("size", [100, 10_000])
def test_one_call_costs_the_same_memory_for_any_number_of_operations(size: int) -> None:
    import tracemalloc

    from tests.synthetic import synthetic_spec

    files = dict(derive_package(synthetic_spec(size)).files)
    name = "create_res0_sub0"
    tracemalloc.start()
    try:
        skill = load_skill(files, lazy=True)
        assert skill.tool(name).name
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200_000, f"{peak:,} bytes to load and build one tool of {size:,}"


def test_a_gate_binds_every_argument_and_auto_below_is_never_negative_or_foreign() -> None:
    from skillpress.runtime.calling.gates import check_gate
    from skillpress.runtime.package.skill import load_skill

    delete = parse(
        "operation:\n  method: DELETE\n  url: http://a.test/pets/{id}\n  query: [cascade]\n"
        '  schema: \'{"type": "object", "properties": {"id": {"type": "string"},'
        ' "cascade": {"type": "boolean"}}, "required": ["id"]}\'\n'
        "approval:\n  matches: DELETE /pets/{id}"
    )
    assert delete is not None and delete.approval is not None
    assert delete.approval.binds == ("id", "cascade")  # the query too: what a person saw
    pay = (
        "---\noperation:\n  method: POST\n  url: http://a.test/payments\n  body: [amount, currency]\n"
        "  number: [amount]\napproval:\n  matches: POST /payments\n  amount: amount\n"
        "  currency: currency\n  auto_below: 10\n  auto_currency: eur\n---\n\n# pay\n\nPays.\n"
    )
    skill = load_skill({"pay.md": pay.encode()}, slug="p")
    tool = skill.tool("pay")
    small = check_gate(tool, {"amount": 5, "currency": "EUR"})
    assert small is not None and small.auto
    for args in (
        {"amount": -5_000_000, "currency": "EUR"},  # below zero is never small
        {"amount": 5, "currency": "BTC"},  # another currency than the gate's
        {"amount": 50, "currency": "EUR"},
    ):
        gate = check_gate(tool, args)
        assert gate is not None and not gate.auto, args
    assert check_gate(tool, {"amount": 5, "currency": "EUR"}).bound == {  # type: ignore[union-attr]
        "amount": 5,
        "currency": "EUR",
    }


def test_a_threshold_that_reads_a_currency_but_names_none_is_refused_on_every_face() -> None:
    # #43.8: `auto_below` with `currency` and no `auto_currency` treated every currency as
    # not named and approved nothing, silently; the file, annotate, the API and the console
    # (all through check_shape) now refuse it and say why
    from skillpress.derive.annotations import AnnotationRefused, check_shape
    from skillpress.runtime.package.model import PackageError
    from skillpress.runtime.package.skill import load_skill

    pay = (
        "---\noperation:\n  method: POST\n  url: http://a.test/payments\n  body: [amount, currency]\n"
        "  number: [amount]\napproval:\n  matches: POST /payments\n  amount: amount\n"
        "  currency: currency\n  auto_below: 10\n---\n\n# pay\n\nPays.\n"
    )
    with pytest.raises(PackageError, match=r"approval\.auto_currency: the gate reads the currency"):
        load_skill({"pay.md": pay.encode()}, slug="p")
    rule = {
        "matches": "POST /payments",
        "amount": "amount",
        "currency": "currency",
        "auto_below": 10,
    }
    with pytest.raises(AnnotationRefused, match="no call would ever be approved automatically"):
        check_shape("approval", "operation:pay", rule)
    check_shape("approval", "operation:pay", rule | {"auto_currency": "EUR"})


def test_a_threshold_on_an_amount_with_no_currency_is_refused_on_every_face() -> None:
    # #55.1: a gate that read no currency counted a bare amount, so 40 of anything went by
    # itself under `auto_below: 50`; the file (every face loads through it) and annotate, the
    # API and the console (through check_shape) refuse it, and the gate itself approves
    # nothing automatically without one
    from skillpress.derive.annotations import AnnotationRefused, check_shape
    from skillpress.runtime.calling.gates import check_gate
    from skillpress.runtime.package.model import PackageError
    from skillpress.runtime.package.skill import load_skill

    pay = (
        "---\noperation:\n  method: POST\n  url: http://a.test/payments\n  body: [amount]\n"
        "  number: [amount]\napproval:\n  matches: POST /payments\n  amount: amount\n"
        "  auto_below: 50\n---\n\n# pay\n\nPays.\n"
    )
    with pytest.raises(PackageError, match=r"approval\.currency: auto_below needs `currency`"):
        load_skill({"pay.md": pay.encode()}, slug="p")
    rule = {"matches": "POST /payments", "amount": "amount", "auto_below": 50}
    with pytest.raises(AnnotationRefused, match="no currency: 50 of what"):
        check_shape("approval", "operation:pay", rule)
    with pytest.raises(AnnotationRefused, match="needs the field that holds the amount"):
        check_shape("approval", "operation:pay", {"matches": "POST /payments", "auto_below": 5})
    gated = pay.replace("  auto_below: 50\n", "")
    tool = load_skill({"pay.md": gated.encode()}, slug="p").tool("pay")
    decl = tool.declaration
    assert decl.approval is not None
    lax = replace(decl, approval=replace(decl.approval, auto_below=50.0))  # as no file says
    check = check_gate(replace(tool, declaration=lax), {"amount": 40})
    assert check is not None and not check.auto, "a bare amount is never approved by itself"
