"""A result's `next`: where the next page of a read is, from its declaration's `paging` and what
the answer said. Pure.

`next` is `{"arguments": {...}}`, the exact arguments of the next page (the agent calls the same
tool again with them), or, when the next page is a URL whose query no argument can say (Graph's
`$skiptoken`), `{"page_url": "..."}`: a URL on the skill's hosts and on the operation's own path,
which a call takes back as its page (`page_url_request`). A next page that would repeat this one
is no next page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from skillpress.format.declaration import Declaration
from skillpress.format.paging import Paging
from skillpress.runtime.calling.request import CallRefused, PreparedRequest

__all__ = ["next_page", "page_url_request"]

_LINK = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]+)*)")


def _dig(value: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(name)
    return value


def link_next(header: str | None) -> str | None:
    """The `rel="next"` target of a Link header (RFC 8288), or None."""
    for target, params in _LINK.findall(header or ""):
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "rel" and "next" in value.strip().strip('"').lower().split():
                return str(target).strip()
    return None


def _typed(value: str, schema: Any) -> Any:
    """A query value read back as its argument's type (an integer page, a boolean)."""
    typ = schema.get("type") if isinstance(schema, Mapping) else None
    if typ == "integer" and re.fullmatch(r"-?\d+", value):
        return int(value)
    if typ == "number":
        try:
            return float(value) if "." in value else int(value)
        except ValueError:
            return value
    if typ == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


def _from_url(
    decl: Declaration, args: Mapping[str, Any], url: str, request_url: str
) -> dict[str, Any] | None:
    """A next-page URL as the arguments that build it, where its query is all arguments;
    else as a page URL."""
    absolute = urljoin(request_url, url)
    parts, asked = urlsplit(absolute), urlsplit(request_url)
    if parts.scheme not in ("http", "https"):
        return None
    if (parts.netloc.lower(), parts.path) != (asked.netloc.lower(), asked.path):
        return {"page_url": absolute}
    by_wire = {decl.wire_name(q): q for q in decl.query}
    props = decl.schema.get("properties") or {}
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if not pairs or any(k not in by_wire for k, _ in pairs):
        return {"page_url": absolute}
    grouped: dict[str, list[str]] = {}
    for key, value in pairs:
        grouped.setdefault(by_wire[key], []).append(value)
    fixed = dict(decl.fixed)
    rebuilt = {k: v for k, v in args.items() if k not in decl.query}
    for name, values in grouped.items():
        if name in fixed:
            continue
        schema = props.get(name) or {}
        if isinstance(schema, Mapping) and schema.get("type") == "array":
            rebuilt[name] = [_typed(v, schema.get("items")) for v in values]
        elif len(values) == 1:
            rebuilt[name] = _typed(values[0], schema)
        else:
            return {"page_url": absolute}  # a repeated value a scalar argument cannot say
    return {"arguments": rebuilt}


def _count(value: Any, items: tuple[str, ...] | None) -> int | None:
    listed = _dig(value, items) if items is not None else None
    return len(listed) if isinstance(listed, list) else None


def next_page(
    decl: Declaration,
    args: Mapping[str, Any],
    request_url: str,
    status: int,
    headers: Mapping[str, str],
    body: Any,
) -> dict[str, Any] | None:
    """Where the page after this answer is, or None (not a paging read, not a success, the
    last page, or a next page that is this one again)."""
    paging: Paging | None = decl.paging
    if paging is None or not 200 <= status < 300:
        return None
    found: dict[str, Any] | None = None
    kind = paging.kind
    if kind == "link":
        target = link_next(headers.get("link"))
        found = _from_url(decl, args, target, request_url) if target else None
    elif kind == "next_url":
        target = _dig(body, paging.field)
        found = _from_url(decl, args, target, request_url) if isinstance(target, str) else None
    elif kind == "cursor":
        cursor = _dig(body, paging.field)
        if isinstance(cursor, str) and re.match(r"https?://", cursor):
            found = _from_url(decl, args, cursor, request_url)
        elif isinstance(cursor, (str, int)) and not isinstance(cursor, bool) and cursor != "":
            found = {"arguments": {**args, str(paging.param): cursor}}
    elif kind == "after_last":
        found = _after_last(paging, args, body)
    elif kind in ("offset", "page"):
        found = _by_count(decl, paging, args, body)
    if found is None or found.get("arguments") == dict(args):
        return None
    return found


def _after_last(paging: Paging, args: Mapping[str, Any], body: Any) -> dict[str, Any] | None:
    """The next page after the last item's key, while the answer says there is more."""
    listed = _dig(body, paging.items or ())
    if _dig(body, paging.more) is True and isinstance(listed, list) and listed:
        last = listed[-1]
        key = last.get(paging.key) if isinstance(last, Mapping) else None
        if isinstance(key, (str, int)) and not isinstance(key, bool):
            return {"arguments": {**args, str(paging.param): key}}
    return None


def _by_count(
    decl: Declaration, paging: Paging, args: Mapping[str, Any], body: Any
) -> dict[str, Any] | None:
    """The next offset or page number, while a page comes back full."""
    kind = paging.kind
    if paging.page and paging.param not in args and paging.page in args:
        # a call made by page continues by page, never by an offset added to it
        paging = paging.by_page()
        kind = "page"
    count = _count(body, paging.items)
    size = args.get(paging.size) if paging.size else None
    full = not isinstance(size, int) or isinstance(size, bool) or count == size
    if not (count and full):
        return None
    at = args.get(str(paging.param))
    at = at if isinstance(at, int) and not isinstance(at, bool) else None
    if kind == "offset":
        return {"arguments": {**args, str(paging.param): (at or 0) + count}}
    first = _default(decl, str(paging.param))
    return {"arguments": {**args, str(paging.param): (at or first) + 1}}


def _default(decl: Declaration, name: str) -> int:
    schema = (decl.schema.get("properties") or {}).get(name)
    default = schema.get("default") if isinstance(schema, Mapping) else None
    return default if isinstance(default, int) and not isinstance(default, bool) else 1


# query names an API invents for "where the next page starts" (compared without case, `$`, `_`
# or `-`): a page URL may carry these besides the operation's own parameters, and nothing else
CONTINUATION_NAMES = frozenset(
    {
        "after",
        "before",
        "continuation",
        "continuationtoken",
        "continue",
        "cursor",
        "from",
        "marker",
        "next",
        "nextcursor",
        "nextpagetoken",
        "nexttoken",
        "offset",
        "page",
        "pagenumber",
        "pagetoken",
        "paginationtoken",
        "skip",
        "skiptoken",
        "start",
        "startafter",
        "startindex",
        "startingafter",
        "startingtoken",
    }
)


def _plain(name: str) -> str:
    return re.sub(r"[$_\-]", "", name).lower()


def _segments(op: str, path: str) -> list[str]:
    """A URL path's segments, each percent-decoded; CallRefused for one that decodes to a path
    of its own (`%2f`), a dot segment or a control character."""
    from urllib.parse import unquote

    out = []
    for raw in path.split("/")[1:]:
        seg = unquote(raw)
        if "/" in seg or seg in (".", "..") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in seg):
            raise CallRefused(op, "page_url is not a page of this operation: its path differs")
        out.append(seg)
    return out


def page_url_request(
    decl: Declaration, request: PreparedRequest, page_url: str, hosts: frozenset[str]
) -> PreparedRequest:
    """`request` sent to `page_url` instead, a `next.page_url` a previous result gave. A page URL
    only continues the same call: a GET of an operation that pages, on the skill's hosts, on the
    very path this call's arguments build (segment by segment, percent-decoded: the same
    operation and the same path values), its query naming only the operation's own parameters
    and the names APIs give a next page's position (`CONTINUATION_NAMES`). CallRefused otherwise."""
    op = request.operation
    if decl.paging is None or decl.method != "GET":
        raise CallRefused(
            op, "page_url is for the next page of a read that pages; this one does not"
        )
    if not isinstance(page_url, str) or any(ord(c) < 0x21 or ord(c) == 0x7F for c in page_url):
        raise CallRefused(op, "page_url is not a URL")
    parts, built = urlsplit(page_url), urlsplit(request.url)
    if parts.scheme != built.scheme or parts.netloc.lower() not in hosts:
        raise CallRefused(
            op,
            f"page_url goes to {parts.netloc or 'no host'}, which is not one of the skill's hosts",
        )
    if parts.username or parts.password or parts.fragment:
        raise CallRefused(op, "page_url carries credentials or a fragment")
    if parts.netloc.lower() != built.netloc.lower() or _segments(op, parts.path) != _segments(
        op, built.path
    ):
        raise CallRefused(op, "page_url is not a page of this operation: its path differs")
    own = {_plain(decl.wire_name(q)) for q in decl.query}
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if _plain(name) not in own and _plain(name) not in CONTINUATION_NAMES:
            raise CallRefused(
                op,
                f"page_url names {name!r}, which is neither a parameter of this operation nor"
                " where a next page starts: a page URL only continues the same call",
            )
    return PreparedRequest(
        op, request.method, _same_values(decl, built.query, page_url), request.headers, None, None
    )


def _same_values(decl: Declaration, sent: str, page_url: str) -> str:
    """`page_url` holding every value the call sent as it sent it: a name the call set keeps
    its value (CallRefused when the page URL changes it), except where the next page's position
    goes (a continuation name, the paging argument); a fixed value is never moved, and one the
    page URL leaves out is sent anyway."""
    op = decl.name
    fixed = {_plain(decl.wire_name(name)) for name, _ in decl.fixed if name in decl.query}
    paging = decl.paging
    named = (paging.param, paging.page) if paging is not None else ()
    position = {_plain(decl.wire_name(n)) for n in named if n}
    # names compared as an API may read them (case, '$', '_' and '-' aside): `Owner` is `owner`
    call: dict[str, list[tuple[str, str]]] = {}
    for name, value in parse_qsl(sent, keep_blank_values=True):
        call.setdefault(_plain(name), []).append((name, value))
    parts = urlsplit(page_url)

    def moves(plain: str) -> bool:  # where the next page's position goes (never a fixed value)
        return plain not in fixed and (plain in CONTINUATION_NAMES or plain in position)

    given: dict[str, list[str]] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        given.setdefault(_plain(name), []).append(value)
        own = call.get(_plain(name))
        if own is not None and name != own[0][0] and not moves(_plain(name)):
            raise CallRefused(
                op,
                f"page_url spells {own[0][0]!r} as {name!r}: a page URL only continues the same"
                " call, with its names",
            )
    for plain, pairs in call.items():
        values = [v for _, v in pairs]
        if not moves(plain) and plain in given and given[plain] != values:
            raise CallRefused(
                op,
                f"page_url sets {pairs[0][0]!r} to {', '.join(given[plain])!r} where this call"
                f" sent {', '.join(values)!r}: a page URL only continues the same call, with its"
                " values",
            )
    missing = [
        pair for plain in sorted(fixed) if plain not in given for pair in call.get(plain, ())
    ]
    if not missing:
        return page_url
    query = "&".join(q for q in (parts.query, urlencode(missing)) if q)
    return urlunsplit(parts._replace(query=query))
