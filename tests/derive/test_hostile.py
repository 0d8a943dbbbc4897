"""Hostile documents are refused quickly, with bounded memory, touching no file or socket."""

from __future__ import annotations

import json
import sys
import time
import tracemalloc

import pytest

from skillpress.derive import LoadLimits, SpecRefused, derive_package

_EVENTS: list[str] = []
_WATCH = {"on": False}


def _audit(event: str, args: tuple) -> None:
    if _WATCH["on"] and (
        event
        in ("open", "socket.connect", "socket.getaddrinfo", "urllib.Request", "subprocess.Popen")
    ):
        _EVENTS.append(f"{event} {args[:1]}")


sys.addaudithook(_audit)

HEAD = 'openapi: 3.0.0\ninfo: {title: t, version: "1"}\n'


def _alias_bomb() -> bytes:
    lines = [HEAD, "x-bomb:", '  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for n in "bcdefghi":
        lines.append(f"  {n}: &{n} [" + ",".join(f"*{prev}" for _ in range(9)) + "]")
        prev = n
    lines.append("paths: {}")
    return "\n".join(lines).encode()


def _ref_cycle_paths() -> bytes:
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"$ref": "#/paths/~1b"}, "/b": {"$ref": "#/paths/~1a"}},
    }
    return json.dumps(doc).encode()


CATALOGUE = {
    "alias bomb": (_alias_bomb(), "alias"),
    "100k-deep JSON": (
        ('{"openapi":"3.0.0","x":' + "[" * 100_000 + "]" * 100_000 + "}").encode(),
        "nested deeper",
    ),
    "100k-deep YAML": ((HEAD + "x: " + "[" * 100_000 + "]" * 100_000).encode(), "nested deeper"),
    "path-item ref cycle": (_ref_cycle_paths(), "reference cycle"),
    "external file ref": (
        json.dumps(
            {
                "openapi": "3.0.0",
                "info": {"title": "t", "version": "1"},
                "paths": {
                    "/a": {
                        "get": {
                            "parameters": [{"$ref": "common.yaml#/components/parameters/Id"}],
                            "responses": {},
                        }
                    }
                },
            }
        ).encode(),
        "bundle",
    ),
    "network ref": (
        json.dumps(
            {
                "openapi": "3.0.0",
                "info": {"title": "t", "version": "1"},
                "paths": {
                    "/a": {
                        "post": {
                            "requestBody": {
                                "content": {
                                    "application/json": {
                                        "schema": {"$ref": "https://evil.example/schema.json"}
                                    }
                                }
                            },
                            "responses": {},
                        }
                    }
                },
            }
        ).encode(),
        "external reference",
    ),
    "duplicate keys JSON": (
        b'{"openapi": "3.0.0", "info": {"title": "a", "title": "b"}, "paths": {}}',
        "duplicate key 'title'",
    ),
    "duplicate keys YAML": ((HEAD + "paths: {}\npaths: {}\n").encode(), "duplicate key 'paths'"),
    "huge string": (
        b'{"openapi": "3.0.0", "info": {"title": "' + b"x" * (33 * 1024 * 1024) + b'"}}',
        "over the",
    ),
    "non-UTF-8": (b'{"openapi": "3.0.0", "info": {"title": "caf\xe9"}}', "not UTF-8"),
    "1e999": (
        b'{"openapi": "3.0.0", "info": {"title": "t", "x": 1e999}, "paths": {}}',
        "out of range",
    ),
    "NaN": (b'{"openapi": "3.0.0", "info": {"title": "t", "x": NaN}, "paths": {}}', "non-finite"),
    "YAML .inf": ((HEAD + "x-n: .inf\npaths: {}\n").encode(), "non-finite"),
    "python tag": (
        (HEAD + "x: !!python/object/apply:os.system ['true']\npaths: {}\n").encode(),
        "not allowed",
    ),
    "set tag": ((HEAD + "x: !!set {a, b}\npaths: {}\n").encode(), "!!set"),
    "not openapi": (b'{"hello": "world"}', "not an OpenAPI document"),
    "array at top": (b"[1, 2, 3]", "not a mapping"),
    "empty": (b"   \n", "empty"),
    "no operations": ((HEAD + "paths: {}\n").encode(), "no operations"),
}


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_hostile_input_is_refused_fast_bounded_and_offline(name: str) -> None:
    data, expected = CATALOGUE[name]
    _EVENTS.clear()
    tracemalloc.start()
    started = time.perf_counter()
    _WATCH["on"] = True
    try:
        with pytest.raises(SpecRefused) as info:
            derive_package(data)
    finally:
        _WATCH["on"] = False
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    reason = str(info.value)
    assert expected in reason, reason
    assert "\n" not in reason and len(reason) < 400
    assert elapsed < 60, f"took {elapsed:.1f}s"  # a hang guard: a bomb never finishes
    assert peak < 400 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"
    assert _EVENTS == [], f"loading touched the outside: {_EVENTS}"


def test_schema_ref_cycles_terminate_and_stop_at_the_types_shape() -> None:
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Tree", "version": "1"},
        "servers": [{"url": "https://t.example"}],
        "paths": {
            "/nodes": {
                "post": {
                    "operationId": "addNode",
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Node"}}
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": {
            "schemas": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "child": {"$ref": "#/components/schemas/Node"},
                        "via": {"$ref": "#/components/schemas/Other"},
                    },
                },
                "Other": {
                    "allOf": [
                        {"$ref": "#/components/schemas/Other"},
                        {
                            "type": "object",
                            "properties": {"back": {"$ref": "#/components/schemas/Node"}},
                        },
                    ]
                },
            }
        },
    }
    package = derive_package(json.dumps(doc).encode())
    from skillpress.runtime.interop.tool_lists import package_tools

    (tool,) = package_tools(package.files, "anthropic")
    # met again on its path, a type is cut: its own type (and what it requires: nothing here)
    cut = {"type": "object", "description": "a Node (not detailed here: see the operation's file)"}
    child = tool["input_schema"]["properties"]["child"]
    assert child["properties"]["child"] == cut
    assert (
        tool["input_schema"]["properties"]["via"]["properties"]["back"]["properties"]["child"]
        == cut
    )


def test_size_limit_is_configurable() -> None:
    data = b'{"openapi": "3.0.0", "info": {"title": "t"}, "paths": {}}'
    from skillpress.derive import DeriveOptions

    with pytest.raises(SpecRefused, match="over the 10-byte limit"):
        derive_package(data, DeriveOptions(limits=LoadLimits(max_bytes=10)))


_ZW, _RTL = "\u200b", "\u202e"


def _invisible_spec(header: str = "X-Key") -> dict[str, object]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Inv", "version": "1", "description": f"Hidden{_ZW} text {_RTL}evil"},
        "servers": [{"url": "https://api.example.com"}],
        "components": {
            "securitySchemes": {"k": {"type": "apiKey", "in": "header", "name": header}}
        },
        "security": [{"k": []}],
        "paths": {
            "/items": {
                "get": {
                    "operationId": f"list{_ZW}Items",
                    "summary": f"List{_ZW} the items {_RTL}desrever",
                    "parameters": [
                        {"name": f"q{_ZW}x", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            },
            f"/items/{{i{_ZW}d}}": {
                "delete": {
                    "operationId": "dropItem",
                    "summary": "Drop an item.",
                    "parameters": [
                        {
                            "name": f"i{_ZW}d",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {"204": {"description": "gone"}},
                }
            },
        },
    }


@pytest.mark.parametrize("escaped", [True, False], ids=["json-escaped", "raw"])
def test_invisible_characters_never_reach_a_model_unseen(escaped: bool) -> None:
    from skillpress.runtime.package.skill import load_skill

    data = json.dumps(_invisible_spec(), ensure_ascii=escaped).encode()
    files = derive_package(data).files
    invisible = (_ZW, _RTL)
    body = files["body.md"].decode()
    assert "Hidden text evil" in body and not any(c in body for c in invisible)
    skill = load_skill(files)
    listed = skill.tool("list_items")
    assert not any(c in json.dumps(listed.input_schema, ensure_ascii=False) for c in invisible)
    assert not any(c in listed.description for c in invisible)
    assert list(listed.schema["properties"]) == ["qx"]  # a clean name, sent as the spec's
    assert listed.declaration.wire_name("qx") == f"q{_ZW}x"
    dropped = next(e for e in skill.operations if e.name == "drop_item")
    assert dropped.tool is None and "invisible character" in (dropped.not_tool_reason or "")
    detail = files["drop_item.md"].decode()
    assert "i\\u200bd" in detail and _ZW not in detail  # shown as its escape, never hidden


def test_a_credential_header_that_is_no_header_name_is_refused_where_it_is_declared(
    tmp_path: object,
) -> None:
    from skillpress.runtime.package.model import PackageError
    from skillpress.runtime.package.skill import load_skill

    files = derive_package(json.dumps(_invisible_spec('X-Key"><script>')).encode()).files
    meta = json.loads(files["skill.json"])
    assert meta["auth"].get("header") is None  # never recorded as the skill's credential
    hand = {
        "body.md": b'---\nname: bad\nauth:\n  header: X-Key"><script>\n---\n\n# Bad\n',
        "ping.md": b"---\noperation:\n  method: GET\n  url: https://api.example.com/ping\n---\n\n# ping\n",
    }
    with pytest.raises(PackageError, match="is not a header name"):
        load_skill(hand)
