"""How a list operation pages, read from its parameters and its answer's shape: pure.

Six ways APIs page, each found only when both halves are there (what the answer says, and the
argument it goes back in), in this order:

- `after_last` (Stripe): `has_more` and a `data` list in the answer, `starting_after` taken; the
  next page starts after the last item's `id`.
- `cursor`: a next-cursor field in the answer (`next_cursor`, Slack's
  `response_metadata.next_cursor`, Kubernetes' `metadata.continue`, `nextPageToken`, …) and the
  argument it goes back in (`cursor`, `continue`, `pageToken`, …).
- `next_url`: a field holding the next page's URL (`@odata.nextLink`, `next`, `links.next`, …).
- `link`: the answer declares a `Link` header (RFC 8288, `rel="next"`; GitHub).
- `offset`: an offset argument (`offset`, `skip`, `$skip`, `startAt`, …) and a list in the answer.
- `page`: a page-number argument (`page`) and a list in the answer.

The runtime turns the declaration into a result's `next` (`skillpress.runtime.calling.paging`).
"""

from __future__ import annotations

from collections.abc import Mapping

from skillpress.format.paging import Paging

__all__ = ["FieldTree", "detect_paging"]
# name → (JSON type or "", its own fields); a schema's fields a few levels down
FieldTree = Mapping[str, tuple[str, "FieldTree"]]

_CURSOR_FIELDS: tuple[tuple[str, ...], ...] = (
    ("response_metadata", "next_cursor"),
    ("metadata", "continue"),
    ("next_cursor",),
    ("nextCursor",),
    ("next_page_token",),
    ("nextPageToken",),
    ("next_token",),
    ("nextToken",),
    ("continuation_token",),
    ("continuationToken",),
    ("meta", "next_token"),
    ("meta", "next_cursor"),
    ("meta", "nextCursor"),
    ("pagination", "next_cursor"),
    ("pagination", "nextCursor"),
    ("paging", "next_cursor"),
    ("cursor", "next"),
    ("next_page",),
    ("next",),
)
_CURSOR_PARAMS = (
    "cursor",
    "continue",
    "page_token",
    "pageToken",
    "next_token",
    "nextToken",
    "pagination_token",
    "paginationToken",
    "continuation_token",
    "continuationToken",
    "starting_token",
    "after",
    "page",
)
_URL_FIELDS: tuple[tuple[str, ...], ...] = (
    ("@odata.nextLink",),
    ("odata.nextLink",),
    ("nextLink",),
    ("next_link",),
    ("next_page_url",),
    ("nextPageUrl",),
    ("next_page_uri",),
    ("meta", "next_page_url"),
    ("links", "next"),
    ("_links", "next", "href"),
    ("paging", "next"),
    ("next",),
)
_OFFSET_PARAMS = ("offset", "skip", "$skip", "startAt", "start_at", "start", "start_index")
_PAGE_PARAMS = ("page", "page_number", "pageNumber")
_SIZE_PARAMS = (
    "limit",
    "$top",
    "per_page",
    "page_size",
    "pageSize",
    "maxResults",
    "max_results",
    "count",
    "size",
    "top",
    "first",
)
# the page size that goes with a page number (Figshare: `page` with `page_size`, `offset` with
# `limit`), tried before the others when a list takes both
_PAGE_SIZE_PARAMS = ("per_page", "page_size", "pageSize", "size")
_ITEM_FIELDS = ("data", "items", "values", "results", "value", "entries", "records", "issues")


def _at(tree: FieldTree, path: tuple[str, ...]) -> str | None:
    """The type at `path` in `tree`, or None when it is not there."""
    node: FieldTree = tree
    typ: str | None = None
    for name in path:
        if name not in node:
            return None
        typ, node = node[name]
    return typ


def _items(tree: FieldTree | None, top_array: bool) -> tuple[str, ...] | None:
    if top_array:
        return ()
    if not tree:
        return None
    for name in _ITEM_FIELDS:
        if _at(tree, (name,)) == "array":
            return (name,)
    arrays = [name for name, (typ, _) in tree.items() if typ == "array"]
    return (arrays[0],) if len(arrays) == 1 else None


def _by_token(
    query: Mapping[str, str], headers: frozenset[str], fields: FieldTree, size: str | None
) -> Paging | None:
    """Paging by what the answer hands back: the last item's id (`starting_after`), a cursor
    field, a next page's URL in a field or in a `Link` header."""
    if (
        "starting_after" in query
        and _at(fields, ("has_more",)) in ("boolean", "")
        and _at(fields, ("data",)) == "array"
    ):
        return Paging(
            "after_last", "starting_after", items=("data",), size=size, more=("has_more",)
        )
    params = [p for p in _CURSOR_PARAMS if p in query]
    for path in _CURSOR_FIELDS:
        if _at(fields, path) not in ("string", "integer", "") or not params:
            continue
        if path == ("next_page",) and "page" not in params:
            continue
        if path == ("next",) and query.get(params[0]) != "string":
            continue
        param = "page" if path == ("next_page",) else params[0]
        return Paging("cursor", param, path, size=size)
    for path in _URL_FIELDS:
        if _at(fields, path) in ("string", ""):
            return Paging("next_url", field=path, size=size)
    if "link" in headers:
        return Paging("link", size=size)
    return None


def detect_paging(
    query: Mapping[str, str], headers: frozenset[str], tree: FieldTree | None, top_array: bool
) -> Paging | None:
    """The paging of a read from its query parameters (name → JSON type), its success answer's
    declared headers (lower case) and the answer's fields (`tree`; `top_array`: the answer is a
    list), or None when it does not page in a way both halves declare."""
    fields = tree or {}
    size = next((p for p in _SIZE_PARAMS if p in query), None)
    found = _by_token(query, headers, fields, size)
    if found is not None:
        return found
    items = _items(tree, top_array)
    if items is None:
        return None
    numeric = ("integer", "number", "")
    offset = next((p for p in _OFFSET_PARAMS if p in query), None)
    page = next((p for p in _PAGE_PARAMS if p in query), None)
    page = page if page and query[page] in numeric else None
    page_size = next((p for p in _PAGE_SIZE_PARAMS if p in query), size)
    if offset and query[offset] in numeric:
        if page is None:
            return Paging("offset", offset, items=items, size=size)
        # both schemes: each keeps its own size (a page size is not an offset's limit)
        limit = next((p for p in _SIZE_PARAMS if p in query and p != page_size), None)
        return Paging(
            "offset", offset, items=items, size=limit or size, page=page, page_size=page_size
        )
    if page:
        return Paging("page", page, items=items, size=page_size)
    return None
