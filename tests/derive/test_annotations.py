"""Each annotation kind on the rendered output of a real spec: exactly one thing changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillpress.derive import DeriveOptions, derive_package
from skillpress.derive.annotations import Annotation, AnnotationRefused
from skillpress.format.frontmatter import parse_operation_file
from skillpress.runtime.calling.translate import build_request
from skillpress.runtime.package.skill import load_skill

SPEC = (
    Path(__file__).parents[1] / "fixtures" / "specs" / "oai-petstore-expanded.yaml"
).read_bytes()
PLAIN = derive_package(SPEC).files


def derived(*annotations: Annotation, strict: bool = False) -> dict[str, bytes]:
    return derive_package(
        SPEC, DeriveOptions(annotations=annotations, strict_annotations=strict)
    ).files


def changed(files: dict[str, bytes]) -> list[str]:
    """Files that differ from the plain derivation, skill.json aside (it records what was applied)."""
    return sorted(
        p for p in set(files) | set(PLAIN) if p != "skill.json" and files.get(p) != PLAIN.get(p)
    )


def text(files: dict[str, bytes], path: str) -> str:
    return files[path].decode()


def test_a_note_goes_in_the_operations_file_under_its_own_heading_before_the_call() -> None:
    files = derived(
        Annotation(
            "n1", "note", "operation:delete_pet", {"text": "Only delete pets the owner named."}
        )
    )
    assert changed(files) == ["delete_pet.md"]
    body = text(files, "delete_pet.md")
    assert "\n## Notes\n\nOnly delete pets the owner named.\n\n## Parameters\n" in body
    assert json.loads(files["skill.json"])["annotations"] == {
        "applied": ["n1"],
        "orphaned": [],
        "hidden": [],
    }


def test_prefer_is_shown_in_the_manifest_line_and_the_file() -> None:
    files = derived(
        Annotation("p1", "prefer", "operation:find_pet_by_id", {"operation": "find_pets"})
    )
    assert changed(files) == ["body.md", "find_pet_by_id.md"]
    assert "Prefer `find_pets`." in text(files, "body.md")
    assert "Prefer `find_pets` instead" in text(files, "find_pet_by_id.md")


def test_hidden_leaves_the_operation_out_of_manifest_and_files() -> None:
    files = derived(Annotation("h1", "hidden", "operation:delete_pet", {}))
    assert "delete_pet.md" not in files and "delete_pet" not in text(files, "body.md")
    meta = json.loads(files["skill.json"])
    assert [o["name"] for o in meta["operations"]] == ["find_pets", "add_pet", "find_pet_by_id"]
    assert meta["annotations"]["hidden"] == ["delete_pet"]


def test_an_approval_is_frontmatter_the_publish_parser_reads() -> None:
    files = derived(
        Annotation(
            "a1",
            "approval",
            "operation:delete_pet",
            {"matches": "DELETE /pets/{id}", "risk": "high"},
        )
    )
    assert changed(files) == ["delete_pet.md"]
    _, decl = parse_operation_file("delete_pet.md", text(files, "delete_pet.md"))
    assert decl is not None and decl.approval is not None
    assert (decl.approval.matches, decl.approval.risk, decl.approval.binds) == (
        "DELETE /pets/{id}",
        "high",
        ("id",),
    )


def test_an_example_is_listed_with_the_turn_it_came_from() -> None:
    files = derived(
        Annotation(
            "e1",
            "example",
            "operation:find_pets",
            {"arguments": {"tags": ["dog"], "limit": 2}, "turn": "turn-42"},
        )
    )
    assert changed(files) == ["find_pets.md"]
    assert (
        text(files, "find_pets.md")
        .rstrip()
        .endswith(
            '## Examples\nObserved calls that worked:\n- `{"limit": 2, "tags": ["dog"]}` (turn turn-42)'
        )
    )


def test_a_skill_note_is_a_convention_stated_once_in_the_body() -> None:
    files = derived(
        Annotation("s1", "skill_note", "skill", {"text": "Pet ids are integers; never guess one."})
    )
    assert changed(files) == ["body.md"]
    assert "\n## Conventions\n- Pet ids are integers; never guess one.\n\n## Operations\n" in text(
        files, "body.md"
    )


def test_an_identity_goes_in_the_frontmatter_and_a_field_the_spec_lost_is_dropped_and_said() -> (
    None
):
    package = derive_package(
        SPEC,
        DeriveOptions(
            annotations=(
                Annotation("i1", "identity", "operation:add_pet", {"fields": ["name", "owner"]}),
            )
        ),
    )
    assert changed(package.files) == ["add_pet.md"]
    _, decl = parse_operation_file("add_pet.md", text(package.files, "add_pet.md"))
    assert decl is not None and decl.identity == ("name",)
    assert (
        "identity i1: add_pet no longer sends owner; left out of its identity" in package.warnings
    )


def test_a_fixed_argument_leaves_the_schema_and_is_sent_on_every_call() -> None:
    files = derived(
        Annotation("f1", "fixed", "operation:add_pet", {"name": "tag", "value": "shelter"}),
        Annotation(
            "f2",
            "fixed",
            "operation:add_pet",
            {"name": "X-Tenant", "value": "acme", "in": "header"},
        ),
    )
    assert changed(files) == ["add_pet.md"]
    skill = load_skill(files)
    tool = skill.tool("add_pet")
    assert list(tool.schema["properties"]) == ["name"]
    request = build_request(tool, {"name": "Rex"}, skill.hosts).as_dict()
    assert request["body"] == {"name": "Rex", "tag": "shelter"}
    assert request["headers"]["X-Tenant"] == "acme"
    assert '- `tag` — fixed by this skill: always "shelter" (not an argument)' in text(
        files, "add_pet.md"
    )


def test_a_fixed_value_its_argument_cannot_take_is_dropped_with_a_warning_never_sent() -> None:
    package = derive_package(
        SPEC,
        DeriveOptions(
            annotations=(
                Annotation("f", "fixed", "operation:find_pets", {"name": "limit", "value": "abc"}),
            )
        ),
    )
    assert package.warnings[-1] == (
        "fixed f: find_pets's 'limit' takes no \"abc\": 'abc' is not of type 'integer';"
        " dropped from this version"
    )
    assert package.files["find_pets.md"] == PLAIN["find_pets.md"]
    fine = derived(Annotation("f", "fixed", "operation:find_pets", {"name": "limit", "value": 5}))
    skill = load_skill(fine)
    request = build_request(skill.tool("find_pets"), {}, skill.hosts).as_dict()
    assert request["url"].endswith("/pets?limit=5")


def test_an_annotation_whose_operation_is_gone_is_kept_as_orphaned() -> None:
    files = derived(Annotation("o1", "note", "operation:adopt_pet", {"text": "x"}))
    assert changed(files) == []
    assert json.loads(files["skill.json"])["annotations"]["orphaned"] == ["o1"]


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        (
            (
                Annotation("h", "hidden", "operation:delete_pet", {}),
                Annotation(
                    "g", "approval", "operation:delete_pet", {"matches": "DELETE /pets/{id}"}
                ),
            ),
            "delete_pet is both hidden and gated: hiding leaves its file out, and the gate lives in that file. An operation that must not be called is gated, not hidden: retire one of the two",
        ),
        (
            (
                Annotation(
                    "g", "approval", "operation:delete_pet", {"matches": "DELETE /owners/{id}"}
                ),
            ),
            "approval g: matches 'DELETE /owners/{id}', but delete_pet is DELETE /pets/{id}; a gate must match its operation",
        ),
        (
            (Annotation("i", "identity", "operation:add_pet", {"fields": ["colour"]}),),
            "identity i: names no field add_pet sends (colour); it sends name, tag",
        ),
        (
            (Annotation("i", "identity", "operation:add_pet", {"fields": []}),),
            "an identity names the fields that make two writes the same; it names no field",
        ),
        (
            (Annotation("f", "fixed", "operation:find_pets", {"name": "limit", "value": "abc"}),),
            "fixed f: find_pets's 'limit' takes no \"abc\": 'abc' is not of type 'integer'",
        ),
        (
            (Annotation("f", "fixed", "operation:find_pets", {"name": "tags", "value": 5}),),
            "fixed f: find_pets's 'tags' takes no 5: 5 is not of type 'array'",
        ),
    ],
)
def test_what_cannot_be_meant_is_refused_saying_what_to_fix(
    annotations: tuple[Annotation, ...], message: str
) -> None:
    with pytest.raises(AnnotationRefused) as refused:
        derived(*annotations, strict=True)
    assert str(refused.value) == message


def test_the_same_annotations_make_the_same_version() -> None:
    anns = (
        Annotation("n1", "note", "operation:delete_pet", {"text": "a"}),
        Annotation("s1", "skill_note", "skill", {"text": "b"}),
    )
    assert (
        derive_package(SPEC, DeriveOptions(annotations=anns)).version_id
        == derive_package(SPEC, DeriveOptions(annotations=anns[::-1])).version_id
    )


def test_categories_are_renamed_and_merged_by_name_whatever_grouped_them() -> None:
    spec = (Path(__file__).parents[1] / "fixtures" / "specs" / "discord.json").read_bytes()
    plain = derive_package(spec)
    package = derive_package(
        spec,
        DeriveOptions(
            annotations=(
                Annotation("c1", "category", "skill", {"rename": "guilds", "to": "servers"}),
                Annotation(
                    "c2", "category", "skill", {"merge": ["skus", "sticker_packs"], "to": "store"}
                ),
                Annotation("c3", "category", "skill", {"rename": "no_such", "to": "x_y"}),
            )
        ),
    )
    names = [c["name"] for c in json.loads(package.files["skill.json"])["categories"]]
    before = [c["name"] for c in json.loads(plain.files["skill.json"])["categories"]]
    assert names == [
        ("servers" if n == "guilds" else "store" if n == "skus" else n)
        for n in before
        if n != "sticker_packs"
    ]
    assert "guilds.md" not in package.files and "servers.md" in package.files
    store = package.files["store.md"].decode()
    moved = [
        ln
        for ln in (plain.files["skus.md"] + plain.files["sticker_packs.md"]).decode().splitlines()
        if ln.startswith("- `")
    ]
    assert moved and all(line in store for line in moved) and store.startswith("# Store\n")
    assert (
        "category c3: no category named no_such in this grouping; kept for when there is"
        in package.warnings
    )
    with pytest.raises(AnnotationRefused, match="a category annotation is about the whole skill"):
        derived(Annotation("c", "category", "operation:add_pet", {"rename": "a", "to": "bb"}))


def test_a_note_on_a_category_by_its_tag_goes_in_the_categorys_file() -> None:
    spec = (Path(__file__).parents[1] / "fixtures" / "specs" / "harbor.swagger2.yaml").read_bytes()
    plain = derive_package(spec).files
    package = derive_package(
        spec,
        DeriveOptions(
            annotations=(
                Annotation(
                    "t1",
                    "note",
                    "category:project",
                    {"text": "Project names are unique; prefer them over ids."},
                ),
                Annotation("t2", "note", "category:no_such_tag", {"text": "x"}),
            )
        ),
    )
    changed_files = sorted(
        p for p in package.files if p != "skill.json" and package.files[p] != plain.get(p)
    )
    meta = json.loads(package.files["skill.json"])
    target = next(c for c in meta["categories"] if c["title"] == "project")
    assert changed_files == [target["file"]]
    assert (
        "## Notes\n\nProject names are unique; prefer them over ids.\n"
        in package.files[target["file"]].decode()
    )
    assert (meta["annotations"]["applied"], meta["annotations"]["orphaned"]) == (["t1"], ["t2"])


def test_a_query_object_the_description_writes_otherwise_is_warned_and_a_style_fixes_it() -> None:
    # Files.com: `sort_by` is an object, exploded by the spec's default, described as
    # sort_by[field]=desc; sent as the spec says until a person says otherwise
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Files", "version": "1"},
        "servers": [{"url": "https://files.example"}],
        "paths": {
            "/api_keys": {
                "get": {
                    "operationId": "getApiKeys",
                    "parameters": [
                        {
                            "name": "sort_by",
                            "in": "query",
                            "description": "e.g. sort_by[expires_at]=desc",
                            "schema": {"type": "object"},
                        }
                    ],
                    "responses": {},
                }
            }
        },
    }
    data = json.dumps(spec).encode()
    plain = derive_package(data)
    assert plain.warnings == [
        "get_api_keys: query parameter sort_by is an object the spec writes as its fields (style"
        " form), but its description shows sort_by[…]=…; if the API reads that, skillpress"
        " annotate files -o get_api_keys --style sort_by=deepObject"
    ]
    skill = load_skill(plain.files)
    asked = {"sort_by": {"expires_at": "desc"}}
    assert build_request(skill.tool("get_api_keys"), asked, skill.hosts).url.endswith(
        "/api_keys?expires_at=desc"
    )
    styled = derive_package(
        data,
        DeriveOptions(
            annotations=(
                Annotation(
                    "s1",
                    "style",
                    "operation:get_api_keys",
                    {"name": "sort_by", "style": "deepObject"},
                ),
            )
        ),
    )
    skill = load_skill(styled.files)
    assert build_request(skill.tool("get_api_keys"), asked, skill.hosts).url.endswith(
        "/api_keys?sort_by%5Bexpires_at%5D=desc"
    )
    with pytest.raises(AnnotationRefused, match="style 'matrix' is not one of"):
        derived(
            Annotation("s", "style", "operation:find_pets", {"name": "tags", "style": "matrix"})
        )


SHARED = json.dumps(
    {
        "openapi": "3.0.3",
        "info": {"title": "Shelf", "version": "1"},
        "servers": [{"url": "https://shelf.example"}],
        "components": {
            "parameters": {
                "limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                "tags": {
                    "name": "tags",
                    "in": "query",
                    "description": "Tags to match.",
                    "schema": {"type": "array", "items": {"type": "string"}},
                },
            }
        },
        "paths": {
            f"/{name}": {
                "get": {
                    "operationId": f"list{name.title()}",
                    "parameters": [
                        {"$ref": "#/components/parameters/limit"},
                        {"$ref": "#/components/parameters/tags"},
                    ],
                    "responses": {"200": {"description": "ok"}},
                }
            }
            for name in ("books", "films")
        },
    }
).encode()


def test_an_annotation_on_a_parameter_many_operations_share_changes_only_its_operation() -> None:
    """One parameter object (`#/components/parameters/limit`) is made once for every
    operation that refers to it: a person's change to it in one operation stays there."""
    plain = derive_package(SHARED).files
    annotated = derive_package(
        SHARED,
        DeriveOptions(
            annotations=(
                Annotation("f", "fixed", "operation:list_books", {"name": "limit", "value": 5}),
                Annotation(
                    "s", "style", "operation:list_books", {"name": "tags", "style": "pipes"}
                ),
                Annotation("n", "note", "operation:list_books", {"text": "Shelved ones only."}),
            )
        ),
    ).files
    assert sorted(p for p in plain if p != "skill.json" and plain[p] != annotated[p]) == [
        "list_books.md"
    ]
    books, films = (
        load_skill(annotated).tool("list_books"),
        load_skill(annotated).tool("list_films"),
    )
    assert list(books.schema["properties"]) == ["tags"]
    assert books.declaration.styles == (("tags", "pipes"),)
    assert list(films.schema["properties"]) == ["limit", "tags"]
    assert films.declaration.styles == ()
    assert films.schema == load_skill(plain).tool("list_films").schema
