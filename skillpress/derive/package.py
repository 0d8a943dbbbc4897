"""Derive a whole skill package from a document: the one pure entry point of the core."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from skillpress.derive.annotations import (
    AnnotationRefused,
    Applied,
    apply_annotations,
)
from skillpress.derive.auth import analyse_auth, person_credential
from skillpress.derive.categories import (
    Grouping,
)
from skillpress.derive.layout import choose_layout, render_files
from skillpress.derive.model import Operation
from skillpress.derive.naming import api_slug, assign_names, shorter_forms, too_long
from skillpress.derive.operations import METHODS as PATH_METHODS
from skillpress.derive.operations import (
    extract_operations,
    extract_webhooks,
    operation_id_of,
)
from skillpress.derive.package_json import build_manifest, render_types, types_json, workflows_yaml
from skillpress.derive.package_types import (
    ApiSource,
    DeriveOptions,
    SkillPackage,
    package_id,
)
from skillpress.derive.purpose import skill_purpose
from skillpress.derive.read_aside import read_json_aside
from skillpress.derive.refs import Resolver
from skillpress.derive.render import render_operation
from skillpress.derive.schema import SchemaTranslator
from skillpress.derive.servers import (
    placeholder_host,
    relative_server,
    server_from_list,
    swagger2_server,
)
from skillpress.derive.shapes import as_dict, as_list
from skillpress.derive.split import fork_map
from skillpress.derive.tools import declare_tool
from skillpress.format.credentials import credential_env_refusal, default_credential_env
from skillpress.format.declaration import path_template_names
from skillpress.format.errors import SpecRefused
from skillpress.format.expand import ExpandedSizes
from skillpress.format.gc_pause import gc_paused
from skillpress.format.load import load_document
from skillpress.format.manifest import (
    AuthInfo,
)
from skillpress.format.text import short_text

__all__ = [
    "declare_tools",
    "derive_bytes",
    "derive_document",
    "derive_package",
    "read_api",
    "read_document",
    "spec_sha256",
]


def derive_package(data: bytes, options: DeriveOptions | None = None) -> SkillPackage:
    """Bytes of an OpenAPI document → a skill package. Raises `SpecRefused` for refused input."""
    return derive_bytes(data, options or DeriveOptions())[0]


def derive_bytes(data: bytes, options: DeriveOptions) -> tuple[SkillPackage, dict[str, Any]]:
    """The package and the document it came from. Where `options.processes` allows, a large
    JSON document is parsed fast while a forked child reads it as `load_document` does, and
    the package is handed out only when the child agrees (`read_aside`): refused in its words
    when it refuses, derived again from its reading when it reads another document."""
    # one pause from the read to the package: resuming between them would walk the whole
    # document at the next allocation (and the child reads with no collection either)
    with gc_paused():
        return _derive_bytes(data, options)


def _derive_bytes(data: bytes, options: DeriveOptions) -> tuple[SkillPackage, dict[str, Any]]:
    fast = read_json_aside(data, options.limits) if options.processes > 1 else None
    if fast is not None:
        document, aside = fast
        _read(data, options)
        try:
            package = derive_document(document, aside.sha256, options)
        except Exception:
            if aside.agrees():  # (a refusal of the child's is raised in its place)
                raise
        else:
            if aside.agrees():
                return package, document
    document = read_document(data, options)
    return derive_document(document, spec_sha256(data), options), document


def read_document(data: bytes, options: DeriveOptions) -> dict[str, Any]:
    """The document in `data`, parsed within the options' bounds (SpecRefused otherwise)."""
    with gc_paused():
        doc = load_document(data, options.limits)
    _read(data, options)
    return doc


def _read(data: bytes, options: DeriveOptions) -> None:
    if options.on_stage:
        options.on_stage(f"read the document ({len(data):,} bytes)")


def spec_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _base_url(
    doc: dict[str, Any], given: str | None, warnings: list[str]
) -> tuple[str | None, str | None]:
    """(the absolute base URL or None, what operation URLs start with when there is none: a
    relative server's path, so a base URL given when the skill is called still reaches /api/v1)."""
    if "swagger" in doc:
        resolved, raw = swagger2_server(doc, given)
    else:
        resolved, raw = server_from_list(doc.get("servers"), given)
    if given:
        if raw and resolved and "swagger" not in doc and relative_server(doc.get("servers")):
            return resolved, resolved
        return given.rstrip("/"), given.rstrip("/")
    if resolved is None:
        stand_in = placeholder_host(raw) if raw else None
        if stand_in:
            warnings.append(
                f"server URL {raw!r} is a placeholder ({stand_in}): operations are declared as paths;"
                " give the real base URL with --base-url (here, or when the skill is called)"
            )
        elif raw:
            warnings.append(
                f"server URL {raw!r} is relative or templated: pass --base-url to resolve it"
            )
        else:
            warnings.append("the document names no server: pass --base-url")
        if raw and raw.startswith("/") and not raw.startswith("//") and "{" not in raw:
            return None, raw.rstrip("/") or None
    return resolved, resolved


def read_api(doc: dict[str, Any], options: DeriveOptions, warnings: list[str]) -> ApiSource:
    """The document's operations, named, with its title, slug and servers; refused when it has none."""
    resolver = Resolver(doc)
    translator = SchemaTranslator(resolver, swagger2="swagger" in doc)
    info = as_dict(doc.get("info"))
    title = short_text(str(info.get("title") or "API"), 120) or "API"
    base_url, url_base = _base_url(doc, options.base_url, warnings)
    # named by the document alone: the same API given another base URL (a mock, a region) keeps
    # its slug, and so its tools' names and its credential's variable
    own = base_url if not options.base_url else _base_url(doc, None, [])[0]
    slug = options.slug or api_slug(title, own, info)
    # shortening long operation ids by meaning is a tenth of reading a large API, and needs
    # nothing but the ids: a forked child works it out while this process extracts
    long_ids = _long_operation_ids(doc)
    forms = fork_map(shorter_forms, long_ids, options.processes)
    ops, op_warnings = extract_operations(doc, resolver, translator, options.base_url, own)
    warnings += op_warnings
    if not ops:
        hooks = doc.get("webhooks")
        if isinstance(hooks, dict) and hooks:
            raise SpecRefused(
                f"the document describes only webhooks ({len(hooks)}), calls the API makes to you;"
                " it has no operations for an agent to call"
            )
        raise SpecRefused("the document has no operations under 'paths'; there is nothing to call")
    assign_names(ops, slug, known_forms=dict(zip(long_ids, forms.results(), strict=True)))
    tag_docs = {
        str(t.get("name")): str(t.get("description") or "")
        for t in as_list(doc.get("tags"))
        if isinstance(t, dict) and t.get("name") is not None
    }
    description = skill_purpose(title, str(info.get("description") or ""), ops)
    hooks = extract_webhooks(doc, resolver, translator, {op.name for op in ops})
    return ApiSource(
        doc, translator, title, description, slug, base_url, url_base, ops, tag_docs, hooks
    )


def _long_operation_ids(doc: dict[str, Any]) -> list[str]:
    """The operation ids written in `paths` (path items as written, not referenced ones) that
    are too long to be names as they are; any other an operation has is shortened later."""
    found: dict[str, None] = {}
    paths = doc.get("paths")
    for item in paths.values() if isinstance(paths, dict) else ():
        if not isinstance(item, dict):
            continue
        for method in PATH_METHODS:
            op_id = operation_id_of(item.get(method))
            if op_id and too_long(op_id):
                found[op_id] = None
    return list(found)


def declare_tools(
    ops: list[Operation],
    types: dict[str, Any],
    warnings: list[str],
    slug: str,
    base_url: str | None = None,
) -> list[Operation]:
    """Each operation with its tool declaration, or the reason it has none. One process declares
    them all: most of the work is sizing the shared types' expansions, which every later tool
    reuses, so a second process would repeat it rather than share it."""
    sizes = ExpandedSizes(types)
    ops = [_sent_params(op, warnings) for op in ops]
    for op in ops:
        _style_doubts(op, warnings, slug)
    return [op.with_tool(*declare_tool(op, types, sizes, base_url)) for op in ops]


def _style_doubts(op: Operation, warnings: list[str], slug: str) -> None:
    """A query object (or list of objects) the spec writes exploded (`field=desc`, OpenAPI's
    default) while its own description shows another form (`sort_by[field]=desc`): sent as the
    spec says, and said, with the annotation that changes it."""
    for p in op.params:
        schema = p.schema if isinstance(p.schema, dict) else {}
        items = schema.get("items") if schema.get("type") == "array" else None
        objectish = schema.get("type") == "object" or (
            isinstance(items, dict) and items.get("type") == "object"
        )
        if p.location != "query" or p.style != "form" or not objectish:
            continue
        if f"{p.name}[" in (p.long_description or "") or f"{p.name}%5B" in (
            p.long_description or ""
        ):
            warnings.append(
                f"{op.name}: query parameter {p.name} is an object the spec writes as its fields"
                f" (style form), but its description shows {p.name}[…]=…; if the API reads that,"
                f" skillpress annotate {slug} -o {op.name} --style {p.name}=deepObject"
            )


def _sent_params(op: Operation, warnings: list[str]) -> Operation:
    """The operation without path parameters its URL has no place for (said in `warnings`)."""
    declared_path = {p.name for p in op.params if p.location == "path"}
    template = set(path_template_names(op.path))
    for missing in sorted(declared_path - template):
        warnings.append(
            f"{op.name}: path parameter {missing!r} is not in the URL {op.path}; it is not sent"
        )
    params = [p for p in op.params if not (p.location == "path" and p.name not in template)]
    return replace(op, params=params) if len(params) != len(op.params) else op


def derive_document(doc: dict[str, Any], spec_sha256: str, options: DeriveOptions) -> SkillPackage:
    """read_api → declare_tools → apply_annotations → choose_layout → render_files → build_manifest."""
    with gc_paused():
        return _derive_document(doc, spec_sha256, options)


def _credential(
    api: ApiSource, ops: list[Operation], applied: Applied, options: DeriveOptions
) -> tuple[AuthInfo, list[Operation]]:
    """The skill's credential (as the document says it, the variable chosen for it, a person's
    credential annotation), and each operation with the scheme it is sent where not that one."""
    analysed = analyse_auth(api.doc, api.translator.resolver, ops, api.slug)
    auth = AuthInfo.from_dict(analysed)
    per_op = analysed.get("per_operation") or {}
    ops = [replace(op, credential=per_op[op.name]) if op.name in per_op else op for op in ops]
    chosen_env = options.credential_env
    if chosen_env and chosen_env != default_credential_env(api.slug):
        if (why := credential_env_refusal(chosen_env, api.slug)) is not None:
            raise SpecRefused(f"credential variable {why}")
        auth = replace(auth, env=chosen_env)
    if (person := applied.credential) is not None:
        env = str(person.body.get("env") or "")
        why = credential_env_refusal(env, api.slug) if env else None
        if why is not None and env != default_credential_env(api.slug):
            raise AnnotationRefused(f"credential {person.id}: its variable {why}")
        auth = person_credential(auth, person.body, person.id, len(ops))
    return auth, ops


def _derive_document(doc: dict[str, Any], spec_sha256: str, options: DeriveOptions) -> SkillPackage:
    warnings: list[str] = []
    said = options.on_stage or (lambda _: None)
    api = read_api(doc, options, warnings)
    said(f"found {len(api.ops):,} operations")
    ops = declare_tools(api.ops, api.translator.types, warnings, api.slug, api.base_url)
    said(f"declared {sum(1 for op in ops if op.tool is not None):,} tools")
    ops, applied = apply_annotations(ops, options.annotations, strict=options.strict_annotations)
    warnings += applied.warnings
    auth, ops = _credential(api, ops, applied, options)
    # operation files depend on their operation alone: a forked child may render a share of them
    # while this process decides the layout and renders the rest
    url_base, header, shared = api.url_base, auth.header, api.translator.types
    files_of = fork_map(
        lambda op: render_operation(op, url_base, header, shared), ops, options.processes
    )
    layout = choose_layout(api, ops, auth, applied, options, warnings)
    said(
        f"laid out {len(layout.categories)} categories"
        if layout.categories
        else "laid out a flat body"
    )
    rendered = files_of.results()
    # the operation files, handed over as soon as they are all there (a caller writes them
    # while the rest is built)
    if options.on_files:
        options.on_files({f"{op.name}.md": data for op, data in zip(ops, rendered, strict=True)})
    out = render_files(api, ops, layout, warnings, rendered)
    said(f"rendered {len(out):,} files")
    types = render_types(api.translator, ops)
    manifest = build_manifest(
        api, ops, auth, layout, applied, out, types, spec_sha256, options, warnings
    )
    out["types.json"] = types_json(types).encode()
    out["skill.json"] = manifest.to_json()
    out["index.json"] = manifest.to_index()
    if applied.workflows:
        out["workflows.yaml"] = workflows_yaml(applied.workflows)
    out = dict(sorted(out.items()))
    decided = Grouping(
        layout.source,
        layout.tag_failure,
        manifest.mode,
        tuple(
            (c.name, c.title, c.description, tuple(op.name for op in c.ops))
            for c in layout.grouping
        ),
        tuple(sorted((c.name, c.parent) for c in layout.grouping if c.parent)),
    )
    if options.on_done_with:
        options.on_done_with(locals())  # (every working value, kept from being freed here)
    return SkillPackage(
        files=out,
        manifest=manifest,
        version_id=package_id(out),
        warnings=warnings,
        grouping=decided,
    )
