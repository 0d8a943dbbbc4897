"""Which credential header an API expects, read from its security schemes.

Only *names* are recorded: the header the API reads and, later, the environment variable an
operator sets. An egress header can serve an API key in a header, a bearer token or basic
credentials, and the access token of OAuth 2 or OpenID Connect (obtained outside, sent as a bearer
token); mutual TLS and keys in a query or cookie it cannot.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from services.derive.model import Operation
from services.derive.refs import Resolver

__all__ = ["analyse_auth", "classify_scheme", "credential_hint"]

# which of two schemes that serve the same operations a skill attaches: a token as it is, before
# a key, before a user and password
_PREFERENCE = {"bearer": 0, "oauth2": 1, "openIdConnect": 1, "apiKey": 2, "basic": 3}


def credential_hint(kind: str | None, header: str | None) -> str:
    """What the credential's variable holds and how it is sent, in the same words in the body,
    the import's 'what it still needs' and an exported SKILL.md ('' without a header)."""
    if header is None:
        return ""
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
        if where == "header" and isinstance(name, str) and name:
            return "apiKey", name, True
        return f"apiKey_{where or 'unknown'}", None, False
    if typ in ("oauth2", "openidconnect"):
        # the token is obtained outside (a flow the operator runs); presented, it is a bearer token
        return ("oauth2" if typ == "oauth2" else "openIdConnect"), "Authorization", True
    if typ == "mutualtls":
        return "mutualTLS", None, False
    return typ or "unknown", None, False


def analyse_auth(doc: dict[str, Any], resolver: Resolver, ops: list[Operation]) -> dict[str, Any]:
    raw = (
        doc.get("securityDefinitions")
        if "swagger" in doc
        else (doc.get("components") or {}).get("securitySchemes")
    )
    schemes: dict[str, tuple[str, str | None, bool]] = {}
    if isinstance(raw, dict):
        for name, value in raw.items():
            schemes[str(name)] = classify_scheme(resolver.deref(value, f"security scheme {name}"))
    root: list[Any] = doc["security"] if isinstance(doc.get("security"), list) else []
    used: Counter[str] = Counter()
    needing = 0
    unservable = 0
    unservable_kinds: set[str] = set()
    for op in ops:
        reqs = [
            r for r in (op.security if op.security is not None else root) if isinstance(r, dict)
        ]
        if not reqs or any(not r for r in reqs):
            continue
        needing += 1
        servable_alt = False
        for alt in reqs:
            kinds = [schemes.get(str(n), ("unknown", None, False)) for n in alt]
            if all(k[2] for k in kinds):
                servable_alt = True
                for n in alt:
                    used[str(n)] += 1
            else:
                unservable_kinds.update(k[0] for k in kinds if not k[2])
        if not servable_alt:
            unservable += 1
    chosen = None
    if used:  # the scheme most operations can use; between equals, a bearer token over the rest
        chosen = sorted(
            used.items(), key=lambda kv: (-kv[1], _PREFERENCE.get(schemes[kv[0]][0], 9), kv[0])
        )[0][0]
    elif schemes:
        servable = sorted(n for n, k in schemes.items() if k[2])
        chosen = servable[0] if servable else None
    kind, header = (schemes[chosen][0], schemes[chosen][1]) if chosen else (None, None)
    if kind in ("oauth2", "openIdConnect"):
        kind = "bearer"  # how the runtime attaches it: `Authorization: Bearer <token>`
    return {
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
