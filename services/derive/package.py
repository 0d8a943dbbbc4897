"""Derive a whole skill package from a document: the one pure entry point of the core."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from services.derive.annotations import Annotation, apply_annotations, place_category_notes, regroup
from services.derive.auth import analyse_auth
from services.derive.categories import (
    Category,
    Grouping,
    group_by_paths,
    group_by_tags,
    split_oversize,
    tag_failure,
)
from services.derive.errors import SpecRefused
from services.derive.load import LoadLimits, load_document
from services.derive.naming import assign_names, slugify
from services.derive.operations import extract_operations
from services.derive.refs import Resolver
from services.derive.render import (
    fits_one_read,
    render_body,
    render_category,
    render_operation,
    tool_share,
)
from services.derive.schema import SchemaTranslator, refs_in
from services.derive.servers import host_of, server_from_list, swagger2_server
from services.derive.shapes import as_dict, as_list
from services.derive.text import short_text
from services.derive.tools import declare_tool, path_template_names

__all__ = [
    "DeriveOptions",
    "SkillPackage",
    "derive_package",
    "derive_document",
    "RENDERER_VERSION",
    "BODY_BUDGET",
]

RENDERER_VERSION = "skillpress-render/1"
BODY_BUDGET = 8 * 1024


@dataclass(frozen=True)
class DeriveOptions:
    slug: str | None = None
    base_url: str | None = None
    limits: LoadLimits = field(default_factory=LoadLimits)
    body_budget: int = BODY_BUDGET
    grouping: Grouping | None = None  # decided by the categorize stage; None: decide here
    annotations: tuple[Annotation, ...] = ()  # people's additions, as of one moment
    strict_annotations: bool = (
        False  # refuse (AnnotationRefused) rather than degrade: checking a new one
    )


@dataclass
class SkillPackage:
    """A derived package: file path → bytes, its metadata, and its content-addressed id."""

    files: dict[str, bytes]
    meta: dict[str, Any]
    version_id: str
    warnings: list[str]
    grouping: Grouping

    def summary(self) -> dict[str, Any]:
        stats = self.meta["stats"]
        return {
            "slug": self.meta["slug"],
            "title": self.meta["title"],
            "version_id": self.version_id,
            "operations": stats["operations"],
            "tools": stats["tools"],
            "tools_share": stats["tools_share"],
            "categories": len(self.meta["categories"]),
            "categorization": self.meta["categorization"],
            "body_bytes": stats["body_bytes"],
            "files": len(self.files),
            "base_url": self.meta["base_url"],
            "hosts": self.meta["hosts"],
            "auth_header": self.meta["auth"]["header"],
            "warnings": self.warnings,
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
    doc = load_document(data, options.limits)
    return derive_document(doc, hashlib.sha256(data).hexdigest(), options)


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
        if raw and resolved and not raw.startswith(("http://", "https://")):
            return resolved, resolved
        return given.rstrip("/"), given.rstrip("/")
    if resolved is None:
        if raw:
            warnings.append(
                f"server URL {raw!r} is relative or templated: pass --base-url to resolve it"
            )
        else:
            warnings.append("the document names no server: pass --base-url")
        if raw and raw.startswith("/") and not raw.startswith("//") and "{" not in raw:
            return None, raw.rstrip("/") or None
    return resolved, resolved


def derive_document(doc: dict[str, Any], spec_sha256: str, options: DeriveOptions) -> SkillPackage:
    warnings: list[str] = []
    swagger2 = "swagger" in doc
    resolver = Resolver(doc)
    translator = SchemaTranslator(resolver, swagger2=swagger2)
    info = as_dict(doc.get("info"))
    title = short_text(str(info.get("title") or "API"), 120) or "API"
    slug = options.slug or slugify(title)
    base_url, url_base = _base_url(doc, options.base_url, warnings)

    ops, op_warnings = extract_operations(doc, resolver, translator, options.base_url)
    warnings += op_warnings
    if not ops:
        hooks = doc.get("webhooks")
        if isinstance(hooks, dict) and hooks:
            raise SpecRefused(
                f"the document describes only webhooks ({len(hooks)}), calls the API makes to you;"
                " it has no operations for an agent to call"
            )
        raise SpecRefused("the document has no operations under 'paths'; there is nothing to call")

    assign_names(ops, slug)
    declared = 0
    for op in ops:
        declared_path = {p.name for p in op.params if p.location == "path"}
        template = set(path_template_names(op.path))
        for missing in sorted(declared_path - template):
            warnings.append(
                f"{op.name}: path parameter {missing!r} is not in the URL {op.path}; it is not sent"
            )
        op.params = [p for p in op.params if not (p.location == "path" and p.name not in template)]
        tool, reason = declare_tool(op, translator.types)
        op.tool, op.not_tool_reason = tool, reason
        if tool is None:
            op.tool_name = None
        else:
            declared += 1

    ops, applied = apply_annotations(ops, options.annotations, strict=options.strict_annotations)
    warnings += applied.warnings
    for op in ops:
        if (
            op.additions.approval is not None
            and op.additions.approval.get("_unfit")
            and op.tool is not None
        ):
            op.tool, op.tool_name = None, None
            op.not_tool_reason = (
                "a person's approval rule does not fit it, so the call is not declared"
            )
    declared = sum(1 for op in ops if op.tool is not None)
    auth = analyse_auth(doc, resolver, ops)
    tag_docs = {
        str(t.get("name")): str(t.get("description") or "")
        for t in as_list(doc.get("tags"))
        if isinstance(t, dict) and t.get("name") is not None
    }
    failure = tag_failure(ops)
    meta_base = {
        "slug": slug,
        "title": title,
        "description": short_text(str(info.get("description") or ""), 400),
        "auth": auth,
        "skill_notes": applied.skill_notes,
    }
    op_names = {op.name for op in ops}

    def fits(cat: Category) -> bool:
        return fits_one_read(render_category(cat, slug))

    def grouped(by_tags: bool) -> list[Category]:
        raw = group_by_tags(ops, tag_docs) if by_tags else group_by_paths(ops)
        return split_oversize(raw, fits, op_names)

    body = render_body(meta_base, ops, None)
    categories: list[Category] = []
    source = "flat"
    grouping = grouped(failure is None)
    if len(body.encode()) > options.body_budget:
        if failure is None:
            body = render_body(meta_base, ops, grouping)
            if len(body.encode()) > options.body_budget:
                failure = "too_many_tags"
                grouping = grouped(False)
            else:
                categories, source = grouping, "tags"
        if failure is not None:
            categories, source = grouping, "paths"
            body = render_body(meta_base, ops, categories)
        if len(body.encode()) > options.body_budget:
            warnings.append(
                f"the body is {len(body.encode()):,} bytes with {len(categories)} categories,"
                f" over the {options.body_budget:,}-byte budget"
            )
    if options.grouping is not None:
        given = options.grouping.apply(ops, op_names)
        if given is None:
            warnings.append(
                "the categorize stage's grouping does not place every operation exactly once; grouped here instead"
            )
        else:
            grouping, source, failure = given, options.grouping.source, options.grouping.tag_failure
            categories = given if options.grouping.mode == "categories" else []
            body = render_body(meta_base, ops, categories or None)
    if applied.category_changes:
        grouping = regroup(grouping, applied.category_changes, op_names, warnings)
        if categories:
            categories = grouping
            body = render_body(meta_base, ops, categories)
    if applied.category_notes:
        place_category_notes(grouping, applied.category_notes, applied)
    for cat in grouping:
        for op in cat.ops:
            op.category = cat.name

    files: dict[str, str] = {"body.md": body}
    for cat in categories:
        files[f"{cat.name}.md"] = render_category(
            cat, slug, [c for c in categories if c.parent == cat.name]
        )
    for op in ops:
        files[f"{op.name}.md"] = render_operation(op, url_base)
    for path, text in files.items():
        if not fits_one_read(text):
            warnings.append(f"{path} does not fit one read ({len(text.encode()):,} bytes)")

    used_types: set[str] = set()
    for op in ops:
        if op.tool is not None:
            for name in refs_in(op.tool.schema):
                used_types |= translator.deps(name)
    types = {
        name: translator.types[name] for name in sorted(used_types) if name in translator.types
    }
    types_text = (
        "{\n"
        + ",\n".join(
            f"{json.dumps(name)}: {json.dumps(schema, separators=(',', ':'), ensure_ascii=False)}"
            for name, schema in types.items()
        )
        + "\n}\n"
        if types
        else "{}\n"
    )

    hosts = sorted({host_of(u) for u in [base_url, *(op.server_url for op in ops)] if u})
    not_tools: dict[str, int] = {}
    for op in ops:
        if op.not_tool_reason:
            key = op.not_tool_reason.split(",")[0]
            not_tools[key] = not_tools.get(key, 0) + 1
    meta: dict[str, Any] = {
        "slug": slug,
        "title": title,
        "description": meta_base["description"],
        "base_url": base_url,
        "hosts": hosts,
        "auth": auth,
        "operations": [
            {
                "name": op.name,
                "file": f"{op.name}.md",
                "category": op.category,
                "method": op.method,
                "path": op.path,
                "operation_id": op.operation_id,
                "tool": op.tool_name,
                "not_tool_reason": op.not_tool_reason,
                "tags": op.tags,
                "deprecated": op.deprecated,
                "x_risk": op.extensions.get("x-risk")
                if isinstance(op.extensions.get("x-risk"), str)
                else None,
            }
            for op in ops
        ],
        "categories": [
            {"name": c.name, "file": f"{c.name}.md", "title": c.title, "operations": len(c.ops)}
            | ({"parent": c.parent} if c.parent else {})
            for c in categories
        ],
        "categorization": {
            "mode": "categories" if categories else "flat",
            "source": source,
            "tag_failure": failure,
        },
        "stats": {
            "operations": len(ops),
            "tools": declared,
            "tools_share": tool_share(declared, len(ops)),
            "not_tools": dict(sorted(not_tools.items())),
            "types": len(types),
            "body_bytes": len(body.encode()),
            "largest_file_bytes": max(len(t.encode()) for t in files.values()),
        },
        "derived_from": {
            "spec_sha256": spec_sha256,
            "spec_version": str(doc.get("openapi") or doc.get("swagger")),
            "slug": options.slug,
            "base_url": options.base_url,
            "renderer": RENDERER_VERSION,
        },
        "warnings": warnings,
        **(
            {
                "annotations": {
                    "applied": applied.applied,
                    "orphaned": applied.orphaned,
                    "hidden": applied.hidden,
                }
            }
            if options.annotations
            else {}
        ),
    }
    out: dict[str, bytes] = {path: text.encode() for path, text in files.items()}
    out["types.json"] = types_text.encode()
    out["skill.json"] = (
        json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    ).encode()
    out = dict(sorted(out.items()))
    decided = Grouping(
        source,
        failure,
        "categories" if categories else "flat",
        tuple((c.name, c.title, c.description, tuple(op.name for op in c.ops)) for c in grouping),
        tuple(sorted((c.name, c.parent) for c in grouping if c.parent)),
    )
    return SkillPackage(
        files=out, meta=meta, version_id=package_id(out), warnings=warnings, grouping=decided
    )
