"""Which credential header an API expects, read from its security schemes.

Only *names* are recorded: the header the API reads and, later, the environment variable an
operator sets. An egress header can serve an API key in a header, a bearer token or basic
credentials, and the access token of OAuth 2 or OpenID Connect, sent as a bearer token: obtained
outside, or, where the scheme has a client-credentials flow, fetched by the runtime from the
flow's token URL with a client id and secret; mutual TLS and keys in a query or cookie it cannot.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from skillpress.derive.model import Operation
from skillpress.derive.refs import Resolver
from skillpress.format.credentials import companion_env
from skillpress.format.declaration import HEADER_NAME
from skillpress.format.manifest import AuthInfo

__all__ = [
    "analyse_auth",
    "by_person",
    "person_credential",
    "auth_hint",
    "classify_scheme",
    "client_credentials_url",
    "credential_hint",
    "is_credential_header",
    "scheme_place",
]


# which of two schemes that serve the same operations a skill attaches: a token as it is, before
# a key, before a user and password
_PREFERENCE = {"bearer": 0, "oauth2": 1, "openIdConnect": 1, "apiKey": 2, "basic": 3}


def auth_hint(auth: Mapping[str, Any]) -> str:
    """`credential_hint` for a skill's `auth` (as skill.json has it), and each credential sent
    beside it with the variable it is read from."""
    scheme = (auth.get("schemes") or {}).get(auth.get("scheme") or "") or {}
    said = credential_hint(
        auth.get("kind"),
        auth.get("header"),
        auth.get("token_url"),
        oauth=scheme.get("kind") in ("oauth2", "openIdConnect"),
        where=str(auth.get("in") or "header"),
    )
    if not said:
        return said
    for list_key in ("also", "others"):
        for other in auth.get(list_key) or ():
            if not isinstance(other, Mapping):
                continue
            hint = credential_hint(
                str(other.get("kind") or "apiKey"),
                str(other.get("name")),
                where=str(other.get("in") or "header"),
            )
            if list_key == "also":
                said += f"; and {hint}" + (f" (from ${other['env']})" if other.get("env") else "")
            else:
                said += (
                    f"; the operations whose file names `credential: {other.get('scheme')}`"
                    f" are sent {hint} instead (from ${other.get('env')})"
                )
    return said


def credential_hint(
    kind: str | None,
    header: str | None,
    token_url: str | None = None,
    *,
    oauth: bool = False,
    where: str = "header",
) -> str:
    """What the credential's variable holds and how it is sent, in the same words in the body,
    the import's 'what it still needs' and an exported SKILL.md ('' without a header)."""
    if header is None:
        return ""
    if where in ("query", "cookie"):
        place = "query parameter" if where == "query" else "cookie"
        return f"the key, sent as it is in the `{header}` {place}"
    if kind == "bearer" and oauth and not token_url:
        return (
            f"an OAuth 2 access token obtained outside (no sign-in flow is run here), sent as"
            f" `{header}: Bearer <token>`"
        )
    if kind == "bearer" and token_url:
        host = urlsplit(token_url).hostname or token_url
        return (
            f"a token, sent as `{header}: Bearer <token>`; or, given a client id and secret,"
            f" one fetched from {host} (OAuth 2 client credentials)"
        )
    if kind == "bearer":
        return f"a token, sent as `{header}: Bearer <token>`"
    if kind == "basic":
        return (
            f"`user:password`, or an API key alone as the user name, sent base64-encoded as"
            f" `{header}: Basic …`"
        )
    return f"the key, sent as it is in the `{header}` header"


def classify_scheme(scheme: Any) -> tuple[str, str | None, bool]:
    """(kind, header name or None, servable by one static header)."""
    if not isinstance(scheme, dict):
        return "unknown", None, False
    typ = str(scheme.get("type", "")).lower()
    if typ == "basic":
        return "basic", "Authorization", True
    if typ == "http":
        sch = str(scheme.get("scheme", "")).lower()
        if sch == "bearer":
            return "bearer", "Authorization", True
        if sch == "basic":
            return "basic", "Authorization", True
        return f"http_{sch or 'other'}", None, False
    if typ == "apikey":
        where = str(scheme.get("in", "")).lower()
        name = scheme.get("name")
        if where == "header" and isinstance(name, str) and HEADER_NAME.match(name):
            return "apiKey", name, True
        if where == "header":  # `X-Key"><script>` is no header anything can send
            return "apiKey_header_not_a_header_name", None, False
        if where in ("query", "cookie") and isinstance(name, str) and _PARAM_NAME.match(name):
            return "apiKey", name, True  # attached where the spec puts it (`scheme_place`)
        return f"apiKey_{where or 'unknown'}", None, False
    if typ in ("oauth2", "openidconnect"):
        # the token is obtained outside (a flow the operator runs); presented, it is a bearer token
        return ("oauth2" if typ == "oauth2" else "openIdConnect"), "Authorization", True
    if typ == "mutualtls":
        return "mutualTLS", None, False
    return typ or "unknown", None, False


# a query parameter's or a cookie's name the runtime can write as it is
_PARAM_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")

# a header parameter that carries a credential: the skill's own, filled from the environment and
# never a model's argument (`Authorization`, `xi-api-key`, `Ocp-Apim-Subscription-Key`, `X-Auth-Token`)
CREDENTIAL_HEADER = re.compile(
    r"^(?:authorization|x-auth\S*|\S*api[-_]?key\S*|\S*token\S*|\S*subscription[-_]key\S*)$",
    re.I,
)
# … but not a header that names a token of another kind
_NOT_A_CREDENTIAL = re.compile(
    r"idempot|csrf|xsrf|page|next|continu|sync|cursor|request|client[-_]?token", re.I
)  # AWS's X-Amzn-Client-Token is an idempotency token


def is_credential_header(name: str) -> bool:
    """Whether a header parameter named `name` carries a credential."""
    return bool(CREDENTIAL_HEADER.match(name)) and not _NOT_A_CREDENTIAL.search(name)


def scheme_place(scheme: Any) -> str:
    """Where a scheme's credential goes: `query` or `cookie` for an apiKey there, else `header`."""
    if isinstance(scheme, dict) and str(scheme.get("type", "")).lower() == "apikey":
        where = str(scheme.get("in", "")).lower()
        if where in ("query", "cookie"):
            return where
    return "header"


def client_credentials_url(scheme: Any) -> str | None:
    """The token URL of an OAuth 2 scheme's client-credentials flow (OpenAPI 3 `flows.
    clientCredentials`, Swagger 2 `flow: application`), when it is an absolute http(s) URL."""
    if not isinstance(scheme, dict) or str(scheme.get("type", "")).lower() != "oauth2":
        return None
    flows = scheme.get("flows")
    if isinstance(flows, dict):
        flow = flows.get("clientCredentials")
        url = flow.get("tokenUrl") if isinstance(flow, dict) else None
    else:
        url = scheme.get("tokenUrl") if scheme.get("flow") == "application" else None
    if not isinstance(url, str):
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username:
        return None
    return url.strip()


_Scheme = tuple[str, str | None, bool]  # (kind, header or parameter name, servable)


def _schemes_of(
    doc: dict[str, Any], resolver: Resolver
) -> tuple[dict[str, _Scheme], dict[str, str], dict[str, str]]:
    """The document's security schemes: each one's kind, name and whether the runtime serves
    it; where each is sent; the token URL of each a client's credentials can fetch a token at."""
    raw = (
        doc.get("securityDefinitions")
        if "swagger" in doc
        else (doc.get("components") or {}).get("securitySchemes")
    )
    schemes: dict[str, _Scheme] = {}
    places: dict[str, str] = {}
    token_urls: dict[str, str] = {}
    if isinstance(raw, dict):
        for name, value in raw.items():
            resolved = resolver.deref(value, f"security scheme {name}")
            schemes[str(name)] = classify_scheme(resolved)
            places[str(name)] = scheme_place(resolved)
            url = client_credentials_url(resolved)
            if url:
                token_urls[str(name)] = url
    return schemes, places, token_urls


def _chosen(used: Counter[str], schemes: dict[str, _Scheme], places: dict[str, str]) -> str | None:
    """The skill's credential: the scheme most operations can use; between equals, a bearer
    token over the rest, a key in a header over one in the query or a cookie."""
    if used:
        return sorted(
            used.items(),
            key=lambda kv: (
                -kv[1],
                _PREFERENCE.get(schemes[kv[0]][0], 9),
                places.get(kv[0], "header") != "header",
                kv[0],
            ),
        )[0][0]
    servable = sorted(n for n, k in schemes.items() if k[2])
    return servable[0] if servable else None


def _query_companions(
    ops: list[Operation], also: list[dict[str, Any]], own: str | None, slug: str
) -> list[dict[str, Any]]:
    """The query credentials most operations require as parameters, sent beside the skill's
    credential (`own`: its parameter, when it is in the query) and the companions already
    chosen, each from its own variable."""
    taken = {str(own).lower()} if own else set()
    taken |= {str(a["name"]).lower() for a in also if a.get("in") == "query"}
    return [
        {"name": q, "in": "query", "kind": "apiKey", "env": companion_env(slug, q)}
        for q in _required_query_credentials(ops)
        if q.lower() not in taken
    ]


@dataclass
class _Needs:
    """What the operations' security requirements ask, counted over the operations."""

    used: Counter[str] = field(default_factory=Counter)  # servable schemes
    alternatives: Counter[frozenset[str]] = field(default_factory=Counter)  # servable ones
    scopes: dict[str, set[str]] = field(default_factory=dict)
    needing: int = 0
    unservable: int = 0
    unservable_kinds: set[str] = field(default_factory=set)


def _needs(ops: list[Operation], root: list[Any], schemes: dict[str, _Scheme]) -> _Needs:
    """How many operations need a credential, which schemes (and sets of schemes together)
    serve them, the scopes each is asked for, and the ones no servable scheme answers."""
    out = _Needs()
    for op in ops:
        reqs = _requirements(op, root)
        if not reqs or any(not r for r in reqs):
            continue
        out.needing += 1
        servable_alt = False
        for alt in reqs:
            kinds = [schemes.get(str(n), ("unknown", None, False)) for n in alt]
            if all(k[2] for k in kinds):
                servable_alt = True
                out.alternatives[frozenset(str(n) for n in alt)] += 1
                for n in alt:
                    out.used[str(n)] += 1
                    asked = alt[n] if isinstance(alt[n], list) else []
                    out.scopes.setdefault(str(n), set()).update(str(a) for a in asked)
            else:
                out.unservable_kinds.update(k[0] for k in kinds if not k[2])
        if not servable_alt:
            out.unservable += 1
    return out


def analyse_auth(
    doc: dict[str, Any], resolver: Resolver, ops: list[Operation], slug: str = "api"
) -> dict[str, Any]:
    schemes, places, token_urls = _schemes_of(doc, resolver)
    root: list[Any] = doc["security"] if isinstance(doc.get("security"), list) else []
    need = _needs(ops, root, schemes)
    used, alternatives, scopes = need.used, need.alternatives, need.scopes
    needing, unservable, unservable_kinds = need.needing, need.unservable, need.unservable_kinds
    chosen = _chosen(used, schemes, places)
    kind, header = (schemes[chosen][0], schemes[chosen][1]) if chosen else (None, None)
    if kind in ("oauth2", "openIdConnect"):
        kind = "bearer"  # how the runtime attaches it: `Authorization: Bearer <token>`
    also = _companions(chosen, alternatives, schemes, places, slug)
    headers = _header_credentials(ops)
    if chosen is None and headers:  # no scheme, but a header parameter that carries the key
        header, kind = headers[0], "apiKey"
        chosen = f"header parameter {header}"
        schemes[chosen] = ("apiKey", header, True)
    taken = {str(header or "").lower(), *(str(a["name"]).lower() for a in also)}
    also += [
        {"name": h, "in": "header", "kind": "apiKey", "env": companion_env(slug, h)}
        for h in headers
        if h.lower() not in taken
    ]
    if chosen is not None:  # Trello's `token`: a scheme of its own, which every operation requires
        also += _query_companions(
            ops, also, header if places.get(chosen) == "query" else None, slug
        )
    out: dict[str, Any] = {
        "header": header,
        "scheme": chosen,
        "kind": kind,
        "operations_needing_auth": needing,
        "operations_unservable": unservable,
        "unservable_kinds": sorted(unservable_kinds),
        "schemes": {
            n: {"kind": k[0], "header": k[1], "servable": k[2]} for n, k in sorted(schemes.items())
        },
    }
    if chosen in token_urls:  # the runtime can fetch the token itself
        out["token_url"] = token_urls[chosen]
        out["scopes"] = sorted(scopes.get(chosen, ()))
    if chosen is not None and places.get(chosen, "header") != "header":
        out["in"] = places[chosen]
    if also:
        out["also"] = also
    per_op, others = _other_credentials(ops, root, chosen, schemes, places, slug)
    if others:
        out["others"] = others
        out["per_operation"] = per_op  # read into each operation's file, not skill.json
    return out


def _requirements(op: Operation, root: list[Any]) -> list[dict[str, Any]]:
    """The security requirements an operation states, else the document's."""
    return [r for r in (op.security if op.security is not None else root) if isinstance(r, dict)]


def _other_credentials(
    ops: list[Operation],
    root: list[Any],
    chosen: str | None,
    schemes: Mapping[str, tuple[str, str | None, bool]],
    places: Mapping[str, str],
    slug: str,
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The operations none of whose requirements is the chosen scheme's (Figma's payments take
    a PersonalAccessToken, its files OAuth 2): each → the one servable scheme it is sent, and
    those schemes' credentials, each from its own variable."""
    per_op: dict[str, str] = {}
    used: set[str] = set()
    if chosen is None or chosen not in schemes:
        return per_op, []
    for op in ops:
        reqs = _requirements(op, root)
        if not reqs or any(not r for r in reqs) or any(chosen in r for r in reqs):
            continue
        alone = [
            str(n)
            for r in reqs
            if len(r) == 1
            for n in r
            if schemes.get(str(n), ("", None, False))[2] and schemes[str(n)][1]
        ]
        if alone:
            per_op[op.name] = alone[0]
            used.add(alone[0])
    others = []
    for name in sorted(used):
        kind, header, _ = schemes[name]
        others.append(
            {
                "name": header,
                "in": places.get(name, "header"),
                "kind": "bearer" if kind in ("oauth2", "openIdConnect") else kind,
                "env": companion_env(slug, name),
                "scheme": name,
            }
        )
    return per_op, others


def _companions(
    chosen: str | None,
    alternatives: Counter[frozenset[str]],
    schemes: Mapping[str, tuple[str, str | None, bool]],
    places: Mapping[str, str],
    slug: str,
) -> list[dict[str, Any]]:
    """The credentials an AND requirement sends with the chosen one (VTEX's appKey and
    appToken), each from its own variable: the AND requirement with it most operations state,
    however many need the chosen one alone (api2cart: 140 need the API key and the store key
    together, 7 the key alone; SoundCloud: 20 the OAuth header and the client id, 31 the header
    alone): without it those operations always fail, and one that needs only the chosen one
    ignores it. One in the chosen one's own header is left out: a request carries only one."""
    if chosen is None:
        return []
    together = [alt for alt in alternatives if chosen in alt and len(alt) > 1]
    if not together:
        return []
    best = sorted(together, key=lambda alt: (-alternatives[alt], sorted(alt)))[0]
    out = []
    mine = str(schemes[chosen][1] or "").lower() if places.get(chosen, "header") == "header" else ""
    for name in sorted(best - {chosen}):
        kind, header, _ = schemes[name]
        if mine and places.get(name, "header") == "header" and str(header or "").lower() == mine:
            continue  # the chosen one's own header (Azure's registry basic AND an apiKey named
            # Authorization): one request carries one of them, and the chosen one is sent
        out.append(
            {
                "name": header,
                "in": places.get(name, "header"),
                "kind": "bearer" if kind in ("oauth2", "openIdConnect") else kind,
                "env": companion_env(slug, name),
                "scheme": name,
            }
        )
    return out


def _required_query_credentials(ops: list[Operation]) -> list[str]:
    """Query parameters that carry a credential (withheld from every tool) and that most
    operations declare required, the most declared first: sent beside the skill's credential,
    each from its own variable (an API whose security says either key will do, while every
    operation requires both as parameters)."""
    counts = _credential_params(ops, "query", required=True)
    return [name for name, n in counts if 2 * n >= len(ops)]  # never one a few need


def _header_credentials(ops: list[Operation]) -> list[str]:
    """Header parameters that carry a credential (withheld from every tool), the most declared
    first: the runtime fills them from the environment."""
    return [name for name, _ in _credential_params(ops, "header")]


def _credential_params(
    ops: list[Operation], location: str, required: bool = False
) -> list[tuple[str, int]]:
    """The parameters in `location` that carry a credential (`required`: only where declared
    required), each with how many operations declare it, the most declared first; a name in
    the case it was first written, counted whatever its case."""
    counts: Counter[str] = Counter()
    named: dict[str, str] = {}
    for op in ops:
        for p in op.params:
            if p.location == location and p.name in op.credential_fields:
                if required and not p.required:
                    continue
                named.setdefault(p.name.lower(), p.name)
                counts[p.name.lower()] += 1
    return [(named[k], n) for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


PERSON_SCHEME = "set by a person"  # the scheme a person's credential annotation is named by


def by_person(auth: AuthInfo) -> bool:
    """Whether the skill's credential is a person's (a `credential` annotation), not the spec's."""
    return (auth.scheme or "").startswith(PERSON_SCHEME)


def person_credential(
    auth: AuthInfo, body: Mapping[str, Any], annotation: str, operations: int
) -> AuthInfo:
    """The skill's credential as a person set it (a `credential` annotation, carried across
    revisions) in place of the one read from the spec: its header or query parameter, how it is
    attached, and the variable it is read from (the one chosen before when it names none).
    What the spec could not serve, a person now says how to; credentials sent beside it stay,
    but one of the same name."""
    name = str(body["name"])
    where = str(body.get("in") or "header")
    needing = auth.operations_needing_auth + auth.operations_unservable
    return AuthInfo(
        header=name,
        scheme=f"{PERSON_SCHEME} (credential {annotation})",
        kind=str(body.get("kind") or "apiKey"),
        operations_needing_auth=needing or operations,
        schemes=auth.schemes,
        env=str(body["env"]) if body.get("env") else auth.env,
        where=where,
        also=tuple(c for c in auth.also if c.name.lower() != name.lower()),
        others=auth.others,
    )
