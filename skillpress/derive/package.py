"""Derive a whole skill package from a document: the one pure entry point of the core."""
# size: the core's one entry point and its layout decisions, in order

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from skillpress.derive.annotations import (
    Annotation,
    Applied,
    apply_annotations,
    place_category_notes,
    regroup,
)
from skillpress.derive.auth import analyse_auth
from skillpress.derive.categories import (
    Category,
    Grouping,
    group_by_paths,
    group_by_tags,
    make_sections,
    split_oversize,
    tag_failure,
)
from skillpress.derive.model import Operation, Webhook
from skillpress.derive.naming import api_slug, assign_names, shorter_forms, too_long
from skillpress.derive.operations import METHODS as PATH_METHODS
from skillpress.derive.operations import (
    extract_operations,
    extract_webhooks,
    operation_id_of,
)
from skillpress.derive.purpose import skill_purpose
from skillpress.derive.refs import Resolver
from skillpress.derive.render import MAX_FILE_BYTES, fits_one_read, render_operation
from skillpress.derive.render_body import (
    op_line,
    render_body,
    render_category,
    render_section,
    render_webhook,
    tool_share,
    webhook_lines,
)
from skillpress.derive.schema import SchemaTranslator
from skillpress.derive.servers import (
    host_of,
    placeholder_host,
    relative_server,
    server_from_list,
    swagger2_server,
)
from skillpress.derive.shapes import as_dict, as_list
from skillpress.derive.split import fork_map
from skillpress.derive.tools import declare_tool
from skillpress.format.credentials import credential_env_refusal, default_credential_env
from skillpress.format.declaration import RUNTIME_HEADERS, path_template_names
from skillpress.format.errors import SpecRefused
from skillpress.format.expand import ExpandedSizes
from skillpress.format.gc_pause import gc_paused
from skillpress.format.load import LoadLimits, load_document
from skillpress.format.manifest import (
    AnnotationState,
    AuthInfo,
    CategoryEntry,
    Manifest,
    OperationEntry,
    Stats,
)
from skillpress.format.text import short_text
from skillpress.format.type_refs import refs_in

__all__ = [
    "DeriveOptions",
    "PackageSummary",
    "SkillPackage",
    "derive_package",
    "derive_document",
    "read_document",
    "spec_sha256",
    "RENDERER_VERSION",
    "BODY_BUDGET",
]

RENDERER_VERSION = "skillpress-render/1"
BODY_BUDGET = 8 * 1024


@dataclass(frozen=True)
class DeriveOptions:
    slug: str | None = None
    base_url: str | None = None
    # the variable the credential is read from, as a person chose it (None: <SLUG>_API_KEY)
    credential_env: str | None = None
    limits: LoadLimits = field(default_factory=LoadLimits)
    body_budget: int = BODY_BUDGET
    grouping: Grouping | None = None  # decided by the categorize stage; None: decide here
    annotations: tuple[Annotation, ...] = ()  # people's additions, as of one moment
    strict_annotations: bool = (
        False  # refuse (AnnotationRefused) rather than degrade: checking a new one
    )
    processes: int = 1  # >1: a forked child renders a share of a large API's files (single-threaded callers only)
    # told each stage as it ends (a terminal's progress lines); never changes the package
    on_stage: Callable[[str], None] | None = field(default=None, compare=False)
    # given the Markdown files (path -> bytes, exactly the package's) as soon as they are
    # rendered, before the types and the manifest are built: a caller may start writing them
    on_files: Callable[[dict[str, bytes]], None] | None = field(default=None, compare=False)


@dataclass
class SkillPackage:
    """A derived package: file path → bytes, its metadata, and its content-addressed id."""

    files: dict[str, bytes]
    manifest: Manifest
    version_id: str
    warnings: list[str]
    grouping: Grouping

    def summary(self) -> PackageSummary:
        m = self.manifest
        return PackageSummary(
            slug=m.slug,
            title=m.title,
            version_id=self.version_id,
            operations=m.stats.operations,
            tools=m.stats.tools,
            tools_share=m.stats.tools_share,
            categories=len(m.categories),
            mode=m.mode,
            source=m.source,
            tag_failure=m.tag_failure,
            body_bytes=m.stats.body_bytes,
            files=len(self.files),
            base_url=m.base_url,
            hosts=tuple(m.hosts),
            auth_header=m.auth.header,
            warnings=tuple(self.warnings),
        )


@dataclass(frozen=True)
class PackageSummary:
    """What a derivation made, in a few numbers: what `skillpress derive` prints."""

    slug: str
    title: str
    version_id: str
    operations: int
    tools: int
    tools_share: str
    categories: int
    mode: str  # flat | categories
    source: str  # flat | tags | paths | model: where the grouping came from
    tag_failure: str | None
    body_bytes: int
    files: int
    base_url: str | None
    hosts: tuple[str, ...]
    auth_header: str | None
    warnings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The summary as `derive --json` prints it."""
        return {
            "slug": self.slug,
            "title": self.title,
            "version_id": self.version_id,
            "operations": self.operations,
            "tools": self.tools,
            "tools_share": self.tools_share,
            "categories": self.categories,
            "categorization": {
                "mode": self.mode,
                "source": self.source,
                "tag_failure": self.tag_failure,
            },
            "body_bytes": self.body_bytes,
            "files": self.files,
            "base_url": self.base_url,
            "hosts": list(self.hosts),
            "auth_header": self.auth_header,
            "warnings": list(self.warnings),
        }


def package_id(files: dict[str, bytes]) -> str:
    """sha256 over the sorted (path, sha256 of bytes) pairs: same files → same id."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode())
        h.update(b"\0")
        h.update(hashlib.sha256(files[path]).hexdigest().encode())
        h.update(b"\n")
    return h.hexdigest()


def derive_package(data: bytes, options: DeriveOptions | None = None) -> SkillPackage:
    """Bytes of an OpenAPI document → a skill package. Raises `SpecRefused` for refused input."""
    options = options or DeriveOptions()
    with gc_paused():
        return derive_document(read_document(data, options), spec_sha256(data), options)


def read_document(data: bytes, options: DeriveOptions) -> dict[str, Any]:
    """The document in `data`, parsed within the options' bounds (SpecRefused otherwise)."""
    with gc_paused():
        doc = load_document(data, options.limits)
    if options.on_stage:
        options.on_stage(f"read the document ({len(data):,} bytes)")
    return doc


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


@dataclass(frozen=True)
class ApiSource:
    """What the document says before anything is decided: names, servers, operations, types."""

    doc: dict[str, Any]
    translator: SchemaTranslator
    title: str
    description: str
    slug: str
    base_url: str | None  # the absolute base URL, or None
    url_base: (
        str | None
    )  # what operation URLs start with (a relative server's path when no base URL)
    ops: list[Operation]
    tag_docs: dict[str, str]
    webhooks: list[Webhook] = field(default_factory=list)  # events it sends, never tools


@dataclass(frozen=True)
class Layout:
    """How the body presents the operations: flat, or by categories (and which grouping, from
    where), or past what the body holds by sections of categories."""

    body: str
    categories: list[Category]  # what has a file of operations ([] for a flat manifest)
    grouping: list[Category]  # every operation's category, listed or not
    source: str
    tag_failure: str | None
    sections: list[tuple[Category, list[Category]]] = field(default_factory=list)
    lines: dict[str, str] = field(default_factory=dict)  # each operation's line in a listing


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
    return [
        replace(
            op,
            tool=tool,
            not_tool_reason=reason,
            tool_name=op.tool_name if tool is not None else None,
        )
        for op in ops
        for tool, reason in (declare_tool(op, types, sizes, base_url),)
    ]


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


def _decided(
    given: Grouping | None,
    ops: list[Operation],
    op_names: set[str],
    leaves: Callable[[list[Category]], list[Category]],
    warnings: list[str],
) -> tuple[list[Category], str, str | None, list[Category]] | None:
    """The categorize stage's grouping, when it gave one that places every operation once:
    (every category, its source, the tags' failure, the categories the body lists)."""
    if given is None:
        return None
    placed = given.apply(ops, op_names)
    if placed is None:
        warnings.append(
            "the categorize stage's grouping does not place every operation exactly once; grouped here instead"
        )
        return None
    grouping = leaves(placed)
    return grouping, given.source, given.tag_failure, grouping if given.mode == "categories" else []


def _body_meta(api: ApiSource, auth: AuthInfo, applied: Applied) -> dict[str, Any]:
    """What the body says of the skill besides its operations."""
    return {
        "slug": api.slug,
        "title": api.title,
        "description": api.description,
        "auth": auth.to_dict(),
        "skill_notes": applied.skill_notes,
        "events": webhook_lines(api.webhooks),
    }


def _in_sections(
    body: str,
    meta_base: dict[str, Any],
    ops: list[Operation],
    categories: list[Category],
    budget: int,
    op_names: set[str],
) -> tuple[str, list[tuple[Category, list[Category]]]]:
    """The body when its categories do not fit it even by name: the fewest sections of them
    that make it fit, each section's file one read (the most there can be, when none does)."""
    sections: list[tuple[Category, list[Category]]] = []
    for count in range(2, len(categories) + 1):
        sections = make_sections(categories, count, op_names)
        body = render_body(meta_base, ops, categories, budget, sections)
        if len(body.encode()) <= budget and all(
            fits_one_read(render_section(sec, members)) for sec, members in sections
        ):
            break
    return body, sections


def choose_layout(
    api: ApiSource,
    ops: list[Operation],
    auth: AuthInfo,
    applied: Applied,
    options: DeriveOptions,
    warnings: list[str],
) -> Layout:
    """The body and its categories: flat when it fits, else tags, else paths (or the grouping the
    categorize stage decided), then people's renames, merges and category notes. Every category
    file fits one read (a large category is cut into parts the body lists), so any operation is
    two reads from the body; only when the categories overflow the body even as a paragraph of
    names does a level of sections come between (three reads)."""
    meta_base = _body_meta(api, auth, applied)
    op_names = {op.name for op in ops}
    failure = tag_failure(ops)
    lines = {op.name: op_line(op) for op in ops}
    line_bytes = {name: len(line.encode()) + 1 for name, line in lines.items()}
    room = MAX_FILE_BYTES - 2048  # the heading, description and notes of a category file

    def leaves(cats: list[Category]) -> list[Category]:
        return split_oversize(
            cats,
            lambda cat: fits_one_read(render_category(cat, lines)),
            op_names,
            lambda op: line_bytes[op.name],
            room,
        )

    def grouped(by_tags: bool) -> list[Category]:
        return leaves(group_by_tags(ops, api.tag_docs) if by_tags else group_by_paths(ops))

    def fits(text: str) -> bool:
        return len(text.encode()) <= options.body_budget

    body = render_body(meta_base, ops, None, lines_of=lines)
    categories: list[Category] = []
    source = "flat"
    grouping = grouped(failure is None)
    if not fits(body):
        if failure is None:
            body = render_body(meta_base, ops, grouping, options.body_budget)
            if fits(body):
                categories, source = grouping, "tags"
            else:
                failure = "too_many_tags"
                grouping = grouped(False)
        if failure is not None:
            categories, source = grouping, "paths"
            body = render_body(meta_base, ops, categories, options.body_budget)
    decided = _decided(options.grouping, ops, op_names, leaves, warnings)
    if decided is not None:
        grouping, source, failure, categories = decided
        body = render_body(meta_base, ops, categories or None, options.body_budget, lines_of=lines)
    if applied.category_changes:
        grouping = leaves(regroup(grouping, applied.category_changes, op_names, warnings))
        if categories:
            categories = grouping
            body = render_body(meta_base, ops, categories, options.body_budget)
    if applied.category_notes:
        place_category_notes(grouping, applied.category_notes, applied)
    sections: list[tuple[Category, list[Category]]] = []
    if categories and not fits(body):
        body, sections = _in_sections(
            body, meta_base, ops, categories, options.body_budget, op_names
        )
        warnings.append(
            f"{len(categories)} categories do not fit the body even by name: it lists"
            f" {len(sections)} sections of them (three reads to an operation)"
        )
    if not fits(body):
        warnings.append(
            f"the body is {len(body.encode()):,} bytes, over the {options.body_budget:,}-byte budget"
        )
    return Layout(body, categories, grouping, source, failure, sections, lines)


def render_files(
    api: ApiSource,
    ops: list[Operation],
    layout: Layout,
    warnings: list[str],
    rendered: list[str],
) -> dict[str, str]:
    """The Markdown files: the body, a file per section and category, a file per operation
    (`rendered`: the operation files, rendered already, in order)."""
    files: dict[str, str] = {"body.md": layout.body}
    for section, members in layout.sections:
        files[f"{section.name}.md"] = render_section(section, members)
    for cat in layout.categories:
        files[f"{cat.name}.md"] = render_category(cat, layout.lines)
    for op, text in zip(ops, rendered, strict=True):
        files[f"{op.name}.md"] = text
    for hook in api.webhooks:
        files[hook.file] = render_webhook(hook)
    for path, text in files.items():
        if not fits_one_read(text):
            warnings.append(f"{path} does not fit one read ({len(text.encode()):,} bytes)")
    return files


def render_types(translator: SchemaTranslator, ops: list[Operation]) -> dict[str, Any]:
    """The shared types the tools reference, with every type they depend on."""
    used: set[str] = set()
    for op in ops:
        if op.tool is not None and op.tool.reduced is None:  # a reduced schema is expanded whole
            for name in refs_in(op.tool.schema):
                used |= translator.deps(name)
    return {name: translator.types[name] for name in sorted(used) if name in translator.types}


def _types_json(types: dict[str, Any]) -> str:
    if not types:
        return "{}\n"
    return (
        "{\n"
        + ",\n".join(
            f"{json.dumps(name)}: {json.dumps(schema, separators=(',', ':'), ensure_ascii=False)}"
            for name, schema in types.items()
        )
        + "\n}\n"
    )


def build_manifest(
    api: ApiSource,
    ops: list[Operation],
    auth: AuthInfo,
    layout: Layout,
    applied: Applied,
    files: dict[str, bytes],  # the Markdown files, encoded
    types: dict[str, Any],
    spec_sha256: str,
    options: DeriveOptions,
    warnings: list[str],
) -> Manifest:
    category_of = {op.name: cat.name for cat in layout.grouping for op in cat.ops}
    asked = {op.name: _headers_to_fix(op, auth) for op in ops}
    for name, headers in asked.items():
        for header in headers:
            warnings.append(
                f"{name}: the API requires header {header}, which the tool does not send; give its"
                f" value once: skillpress annotate {api.slug} -o {name} --fixed-header {header}=VALUE"
            )
    hosts = sorted({host_of(u) for u in [api.base_url, *(op.server_url for op in ops)] if u})
    x_risk = [op.extensions.get("x-risk") for op in ops]
    return Manifest(
        slug=api.slug,
        title=api.title,
        description=api.description,
        base_url=api.base_url,
        hosts=tuple(hosts),
        auth=auth,
        operations=tuple(
            OperationEntry(
                name=op.name,
                file=f"{op.name}.md",
                method=op.method,
                path=op.path,
                category=category_of.get(op.name),
                operation_id=op.operation_id,
                tool=op.tool_name,
                not_tool_reason=op.not_tool_reason,
                tags=tuple(op.tags),
                deprecated=op.deprecated,
                x_risk=risk if isinstance(risk, str) else None,
                required_headers=asked[op.name],
            )
            for op, risk in zip(ops, x_risk, strict=True)
        ),
        categories=tuple(
            CategoryEntry(c.name, f"{c.name}.md", c.title, len(c.ops), c.parent)
            for c in layout.categories
        ),
        sections=tuple(
            CategoryEntry(s.name, f"{s.name}.md", s.title, len(s.ops)) for s, _ in layout.sections
        ),
        mode="categories" if layout.categories else "flat",
        source=layout.source,
        tag_failure=layout.tag_failure,
        stats=_stats(ops, layout, types, files),
        derived_from=(
            ("base_url", options.base_url),
            ("renderer", RENDERER_VERSION),
            ("slug", options.slug),
            ("spec_sha256", spec_sha256),
            ("spec_version", str(api.doc.get("openapi") or api.doc.get("swagger"))),
        ),
        warnings=tuple(warnings),
        annotations=AnnotationState(
            tuple(applied.applied), tuple(applied.orphaned), tuple(applied.hidden)
        )
        if options.annotations
        else None,
    )


def _stats(
    ops: list[Operation], layout: Layout, types: dict[str, Any], files: dict[str, bytes]
) -> Stats:
    """What the package holds, counted: operations, tools (and why the others are none), types,
    the body's and the largest file's sizes."""
    declared = sum(1 for op in ops if op.tool is not None)
    not_tools: dict[str, int] = {}
    for op in ops:
        if op.not_tool_reason:
            key = op.not_tool_reason.split(",")[0]
            not_tools[key] = not_tools.get(key, 0) + 1
    return Stats(
        operations=len(ops),
        tools=declared,
        tools_share=tool_share(declared, len(ops)),
        not_tools=tuple(sorted(not_tools.items())),
        types=len(types),
        body_bytes=len(layout.body.encode()),
        largest_file_bytes=max(map(len, files.values())),
    )


def _headers_to_fix(op: Operation, auth: AuthInfo) -> tuple[str, ...]:
    """Required headers a tool does not send and the credential is not: without a fixed value
    (annotate --fixed-header) every call would be refused by the API."""
    if op.tool is None:
        return ()
    credential = (auth.header or "").lower()
    sent = {h.lower() for h in op.tool.headers}
    sent |= {op.tool.sent_as.get(h, h).lower() for h in op.tool.header}  # the model's arguments
    return tuple(
        p.name
        for p in op.params
        if p.location == "header"
        and p.required
        and p.name.lower() not in (credential, "authorization", *sent, *RUNTIME_HEADERS)
        and p.name not in op.credential_fields
    )


def workflows_yaml(workflows: list[dict[str, Any]]) -> bytes:
    """The workflows people added, as the package's `workflows.yaml` (by name: same bytes)."""
    import yaml

    ordered = sorted(workflows, key=lambda w: str(w.get("name")))
    return (
        "# workflows added as annotations (skillpress workflow add / promote)\n"
        + yaml.safe_dump({"workflows": ordered}, sort_keys=True, allow_unicode=True)
    ).encode()


def derive_document(doc: dict[str, Any], spec_sha256: str, options: DeriveOptions) -> SkillPackage:
    """read_api → declare_tools → apply_annotations → choose_layout → render_files → build_manifest."""
    with gc_paused():
        return _derive_document(doc, spec_sha256, options)


def _derive_document(doc: dict[str, Any], spec_sha256: str, options: DeriveOptions) -> SkillPackage:
    warnings: list[str] = []
    said = options.on_stage or (lambda _: None)
    api = read_api(doc, options, warnings)
    said(f"found {len(api.ops):,} operations")
    ops = declare_tools(api.ops, api.translator.types, warnings, api.slug, api.base_url)
    said(f"declared {sum(1 for op in ops if op.tool is not None):,} tools")
    ops, applied = apply_annotations(ops, options.annotations, strict=options.strict_annotations)
    warnings += applied.warnings
    # operation files depend on their operation alone: a forked child may render a share of them
    # while this process decides the layout and renders the rest
    url_base = api.url_base
    analysed = analyse_auth(api.doc, api.translator.resolver, ops, api.slug)
    auth = AuthInfo.from_dict(analysed)
    per_op = analysed.get("per_operation") or {}
    ops = [replace(op, credential=per_op[op.name]) if op.name in per_op else op for op in ops]
    chosen_env = options.credential_env
    if chosen_env and chosen_env != default_credential_env(api.slug):
        if (why := credential_env_refusal(chosen_env, api.slug)) is not None:
            raise SpecRefused(f"credential variable {why}")
        auth = replace(auth, env=chosen_env)
    header, shared = auth.header, api.translator.types
    files_of = fork_map(
        lambda op: render_operation(op, url_base, header, shared), ops, options.processes
    )
    layout = choose_layout(api, ops, auth, applied, options, warnings)
    said(
        f"laid out {len(layout.categories)} categories"
        if layout.categories
        else "laid out a flat body"
    )
    files = render_files(api, ops, layout, warnings, files_of.results())
    said(f"rendered {len(files):,} files")
    out: dict[str, bytes] = {path: text.encode() for path, text in files.items()}
    if options.on_files:
        options.on_files(dict(out))
    types = render_types(api.translator, ops)
    manifest = build_manifest(
        api, ops, auth, layout, applied, out, types, spec_sha256, options, warnings
    )
    out["types.json"] = _types_json(types).encode()
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
    return SkillPackage(
        files=out,
        manifest=manifest,
        version_id=package_id(out),
        warnings=warnings,
        grouping=decided,
    )
