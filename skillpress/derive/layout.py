"""How a package presents its operations: flat when the body holds them, else by categories (tags,
paths, a decided grouping, people's changes), else sections of categories; and its Markdown
files."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skillpress.derive.annotations import (
    Applied,
    place_category_notes,
    regroup,
)
from skillpress.derive.categories import (
    Category,
    Grouping,
    group_by_paths,
    group_by_tags,
    make_sections,
    split_oversize,
    tag_failure,
)
from skillpress.derive.model import Operation
from skillpress.derive.package_types import (
    ApiSource,
    DeriveOptions,
    Layout,
)
from skillpress.derive.render import MAX_FILE_BYTES, fits_one_read, written_fits_one_read
from skillpress.derive.render_body import (
    op_line,
    render_body,
    render_category,
    render_section,
    render_webhook,
    webhook_lines,
)
from skillpress.format.manifest import (
    AuthInfo,
)
from skillpress.format.token_estimate import estimate_tokens


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
    fits: Callable[[str], bool],
    op_names: set[str],
) -> tuple[str, list[tuple[Category, list[Category]]]]:
    """The body when its categories do not fit it even by name: the fewest sections of them
    that make it fit, each section's file one read (the most there can be, when none does)."""
    sections: list[tuple[Category, list[Category]]] = []
    for count in range(2, len(categories) + 1):
        sections = make_sections(categories, count, op_names)
        body = render_body(meta_base, ops, categories, fits, sections)
        if fits(body) and all(
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

    def fits(text: str) -> bool:  # what the body costs: bytes to carry, tokens to read
        return (
            len(text.encode()) <= options.body_budget
            and estimate_tokens(text) <= options.body_tokens
        )

    body = render_body(meta_base, ops, None, lines_of=lines)
    categories: list[Category] = []
    source = "flat"
    grouping = grouped(failure is None)
    if not fits(body):
        if failure is None:
            body = render_body(meta_base, ops, grouping, fits)
            if fits(body):
                categories, source = grouping, "tags"
            else:
                failure = "too_many_tags"
                grouping = grouped(False)
        if failure is not None:
            categories, source = grouping, "paths"
            body = render_body(meta_base, ops, categories, fits)
    decided = _decided(options.grouping, ops, op_names, leaves, warnings)
    if decided is not None:
        grouping, source, failure, categories = decided
        body = render_body(meta_base, ops, categories or None, fits, lines_of=lines)
    if applied.category_changes:
        grouping = leaves(regroup(grouping, applied.category_changes, op_names, warnings))
        if categories:
            categories = grouping
            body = render_body(meta_base, ops, categories, fits)
    if applied.category_notes:
        place_category_notes(grouping, applied.category_notes, applied)
    sections: list[tuple[Category, list[Category]]] = []
    if categories and not fits(body):
        body, sections = _in_sections(body, meta_base, ops, categories, fits, op_names)
        warnings.append(
            f"{len(categories)} categories do not fit the body even by name: it lists"
            f" {len(sections)} sections of them (three reads to an operation)"
        )
    if not fits(body):
        warnings.append(
            f"the body is {len(body.encode()):,} bytes and about {estimate_tokens(body):,} tokens,"
            f" over its budget ({options.body_budget:,} bytes, {options.body_tokens:,} tokens)"
        )
    return Layout(body, categories, grouping, source, failure, sections, lines)


def render_files(
    api: ApiSource,
    ops: list[Operation],
    layout: Layout,
    warnings: list[str],
    rendered: list[bytes],
) -> dict[str, bytes]:
    """The Markdown files: the body, a file per section and category, a file per operation
    (`rendered`: the operation files, rendered already, in order)."""
    files: dict[str, bytes] = {"body.md": layout.body.encode()}
    for section, members in layout.sections:
        files[f"{section.name}.md"] = render_section(section, members).encode()
    for cat in layout.categories:
        files[f"{cat.name}.md"] = render_category(cat, layout.lines).encode()
    for op, data in zip(ops, rendered, strict=True):
        files[f"{op.name}.md"] = data
    for hook in api.webhooks:
        files[hook.file] = render_webhook(hook).encode()
    for path, data in files.items():
        if not written_fits_one_read(data):
            warnings.append(f"{path} does not fit one read ({len(data):,} bytes)")
    return files
