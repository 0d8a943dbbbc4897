"""A package's files other than its Markdown: the manifest (skill.json and index.json), the shared
types the tools reference (types.json), and the workflows people added (workflows.yaml)."""

from __future__ import annotations

import json
from typing import Any

from skillpress.derive.annotations import (
    Applied,
)
from skillpress.derive.model import Operation
from skillpress.derive.package_types import (
    RENDERER_VERSION,
    ApiSource,
    DeriveOptions,
    Layout,
)
from skillpress.derive.render_body import (
    tool_share,
)
from skillpress.derive.schema import SchemaTranslator
from skillpress.derive.servers import (
    host_of,
)
from skillpress.format.declaration import RUNTIME_HEADERS
from skillpress.format.manifest import (
    AnnotationState,
    AuthInfo,
    CategoryEntry,
    Manifest,
    OperationEntry,
    Stats,
)
from skillpress.format.type_refs import refs_in


def render_types(translator: SchemaTranslator, ops: list[Operation]) -> dict[str, Any]:
    """The shared types the tools reference, with every type they depend on."""
    used: set[str] = set()
    for op in ops:
        if op.tool is not None and op.tool.reduced is None:  # a reduced schema is expanded whole
            for name in refs_in(op.tool.schema):
                used |= translator.deps(name)
    return {name: translator.types[name] for name in sorted(used) if name in translator.types}


def types_json(types: dict[str, Any]) -> str:
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
