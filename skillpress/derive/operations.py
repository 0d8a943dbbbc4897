"""Read the operations of an OpenAPI 3.x or Swagger 2.0 document into `Operation` records."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl

from skillpress.derive.auth import classify_scheme, is_credential_header
from skillpress.derive.bodies import BodyReader, once_per_object, param_style, pick_media
from skillpress.derive.model import Body, Operation, Param, Webhook
from skillpress.derive.paging import detect_paging
from skillpress.derive.refs import Resolver
from skillpress.derive.schema import SchemaTranslator
from skillpress.derive.servers import override_server, stand_in_server
from skillpress.derive.shapes import as_dict, as_list, as_str
from skillpress.format.errors import SpecRefused
from skillpress.format.paging import Paging
from skillpress.format.text import short_text

__all__ = ["METHODS", "extract_operations", "extract_webhooks", "operation_id_of"]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


# names a credential goes by when an API re-declares its credential as a parameter (Slack's
# `token`, "Authentication token"): withheld only when the parameter's own words say it is one
_CREDENTIAL_NAMES = frozenset({"token", "access_token", "api_key", "apikey", "auth_token"})
_SAYS_CREDENTIAL = re.compile(
    r"\b(authenticat\w*|authoriz\w*|credentials?|api[ _-]?key|access[ _-]token|bearer)\b", re.I
)
# a body field's words must say it authenticates the request: a body names an access token
# that is its subject (Nexmo's Facebook page token, NPR's token to revoke) more often than not
_SAYS_IT_AUTHENTICATES = re.compile(r"\b(authenticat\w*|authoriz\w*)\b", re.I)


@dataclass(frozen=True)
class _Secrets:
    """What carries the skill's own credential: each apiKey scheme's (name, place), a header
    parameter named as a credential is (`Authorization`, `xi-api-key`: the runtime fills it), and,
    where the skill's credential is a token (OAuth 2, bearer), a `token` field its words say is
    that token (Slack's). Anything else is an argument, whatever it is called (Assembla's `token`
    in a GitLab form)."""

    keys: frozenset[tuple[str, str]]
    any_scheme: bool
    bearer: bool = False

    def is_credential(self, name: str, where: str, description: str) -> bool:
        low = name.lower()
        if (low, where) in self.keys:
            return True
        if where == "header" and is_credential_header(name):
            return True
        if not self.bearer:
            return False
        words = _SAYS_IT_AUTHENTICATES if where == "body" else _SAYS_CREDENTIAL
        return low in _CREDENTIAL_NAMES and bool(words.search(description or ""))


def _secrets(doc: dict[str, Any], resolver: Resolver) -> _Secrets:
    raw = (
        doc.get("securityDefinitions")
        if "swagger" in doc
        else as_dict(doc.get("components")).get("securitySchemes")
    )
    if not isinstance(raw, dict) or not raw:
        return _Secrets(frozenset(), False)
    keys: set[tuple[str, str]] = set()
    bearer = False
    for key, scheme in raw.items():
        scheme = resolver.deref(scheme, f"security scheme {key}")
        if (
            isinstance(scheme, dict)
            and str(scheme.get("type", "")).lower() == "apikey"
            and isinstance(scheme.get("name"), str)
            and scheme.get("in") in ("query", "header", "cookie")
        ):
            keys.add((scheme["name"].lower(), str(scheme["in"])))
        kind = classify_scheme(scheme)[0]
        bearer = bearer or kind in ("bearer", "oauth2", "openIdConnect")
    return _Secrets(frozenset(keys), True, bearer)


def _without_literal_query(op: Operation) -> Operation:
    """A path that carries a query string or a fragment (`/?Action=List`, `/tags/{arn}#keys`, as
    AWS writes them): the fragment is never sent, and the query's pairs are sent on every call,
    but a pair whose value is a parameter's template, which is that parameter."""
    if "?" not in op.path and "#" not in op.path:
        return op
    path, _, query = op.path.split("#", 1)[0].partition("?")
    pairs = parse_qsl(query, keep_blank_values=True)
    # `?lat={lat}` (weatherbit): a parameter the spec declares `in: path` whose template is in
    # the query; it is the query parameter the key names, not the text `{lat}` sent as written
    params = list(op.params)
    literal = []
    for key, value in pairs:
        name = value[1:-1] if value.startswith("{") and value.endswith("}") else None
        found = next((p for p in params if name is not None and p.name == name), None)
        if found is None:
            literal.append((key, value))
            continue
        params[params.index(found)] = replace(found, name=key, location="query", style="form")
    return replace(op, path=path or "/", literal_query=tuple(literal), params=params)


class _Extractor(BodyReader):
    """The operations (or webhooks) of one document, read in order."""

    def __init__(
        self,
        doc: dict[str, Any],
        resolver: Resolver,
        translator: SchemaTranslator,
        base_url: str | None,
        own_url: str | None = None,
    ) -> None:
        super().__init__(resolver, translator, "swagger" in doc)
        self.doc = doc
        self.base_url = base_url
        self.own_url = own_url  # the document's own server, where `base_url` stands in for it
        self.warnings: list[str] = []
        self.secrets = _secrets(doc, resolver)
        self._made_params: dict[int, tuple[dict[str, Any], Param]] = {}

    def _params(self, raw_list: Any, where: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if not isinstance(raw_list, list):
            return out
        for i, raw in enumerate(raw_list):
            p = self.r.deref(raw, f"{where}/parameters/{i}")
            if (
                isinstance(p, dict)
                and isinstance(p.get("name"), str)
                and isinstance(p.get("in"), str)
            ):
                out.append(p)
        return out

    def run(self) -> list[Operation]:
        paths = self.doc.get("paths")
        if paths is None:
            paths = {}
        if not isinstance(paths, dict):
            raise SpecRefused("'paths' is not a mapping")
        doc_consumes = [str(c) for c in as_list(self.doc.get("consumes"))]
        doc_produces = [str(c) for c in as_list(self.doc.get("produces"))]
        ops: list[Operation] = []
        for path, raw_item in paths.items():
            if not isinstance(path, str) or not path.startswith("/"):
                if isinstance(path, str) and path.startswith("x-"):
                    continue
                self.warnings.append(f"path {str(path)[:80]!r} does not start with '/'; skipped")
                continue
            where = f"#/paths/{path}"
            item = self.r.deref(raw_item, where)
            if not isinstance(item, dict):
                continue
            path_params = self._params(item.get("parameters"), where)
            path_server = path_stand_in = None
            if not self.swagger2 and isinstance(item.get("servers"), list) and item["servers"]:
                path_server = override_server(item["servers"], self.base_url, self.own_url)
                path_stand_in = stand_in_server(item["servers"], self.doc.get("servers"))
            for method in METHODS:
                raw_op = item.get(method)
                if not isinstance(raw_op, dict):
                    continue
                made = self._operation(
                    path, method, raw_op, path_params, path_server, doc_consumes, doc_produces
                )
                own = raw_op.get("servers")
                if not self.swagger2 and isinstance(own, list) and own:
                    made.stand_in_server = stand_in_server(own, self.doc.get("servers"))
                else:
                    made.stand_in_server = path_stand_in
                ops.append(_without_literal_query(made))
        return ops

    def _operation(
        self,
        path: str,
        method: str,
        op: dict[str, Any],
        path_params: list[dict[str, Any]],
        path_server: str | None,
        doc_consumes: list[str],
        doc_produces: list[str],
    ) -> Operation:
        where = f"#/paths/{path}/{method}"
        merged: dict[tuple[str, str], dict[str, Any]] = {
            (p["name"], p["in"]): p for p in path_params
        }
        for p in self._params(op.get("parameters"), where):
            merged[(p["name"], p["in"])] = p
        raw_params = list(merged.values())
        params = [
            self._param(p, where)
            for p in raw_params
            if p["in"] in ("path", "query", "header", "cookie")
            and (p["in"] == "path" or str(p["name"]).strip())  # `?=value`: nothing to name it by
        ]
        body, produces = self._body_of(op, raw_params, where, doc_consumes, doc_produces)
        server = path_server
        if not self.swagger2 and isinstance(op.get("servers"), list) and op["servers"]:
            server = override_server(op["servers"], self.base_url, self.own_url)
        tags = [str(t) for t in as_list(op.get("tags")) if isinstance(t, (str, int))]
        security = op.get("security") if isinstance(op.get("security"), list) else None
        paging = (
            self._paging(op.get("responses"), params, where) if method.upper() == "GET" else None
        )
        return Operation(
            method=method.upper(),
            path=path,
            operation_id=operation_id_of(op),
            summary=short_text(op.get("summary") or "", 200),
            description=as_str(op.get("description")),
            tags=tags,
            deprecated=bool(op.get("deprecated")),
            params=params,
            body=body,
            responses=self._responses(op.get("responses"), where, [str(p) for p in produces]),
            security=[s for s in security if isinstance(s, dict)] if security is not None else None,
            server_url=server,
            extensions={k: op[k] for k in ("x-risk",) if k in op},
            credential_fields=self._credential_fields(params, body),
            paging=paging,
        )

    def _param(self, p: dict[str, Any], where: str) -> Param:
        """A path, query, header or cookie parameter: one made once for each parameter object,
        however many operations refer to it (GitHub's 3,526 are 582; nothing changes a `Param`
        or its schema once it is made)."""
        return once_per_object(self._made_params, p, lambda: self._new_param(p, where))

    def _new_param(self, p: dict[str, Any], where: str) -> Param:
        loc = p["in"]
        schema = self._param_schema(p, f"{where}/parameters/{p['name']}")
        if (
            loc in ("query", "path", "header")
            and not p.get("allowEmptyValue")
            and isinstance(schema, dict)
            and schema.get("type") == "string"
            and not _at_least_one(schema.get("minLength"))
            and "enum" not in schema
            and "const" not in schema
        ):
            # An empty value is the same as none at all (OpenAPI's allowEmptyValue defaults to
            # false; a path segment cannot be empty): the schema says so, so a model is told
            # (AWS writes `minLength: 0` beside it: the parameter's rule is the stricter)
            schema = {**schema, "minLength": 1}
        enum = schema.get("enum") if isinstance(schema, dict) else None
        if (
            (loc == "path" or (loc == "query" and not p.get("allowEmptyValue")))
            and isinstance(enum, list)
            and "" in enum
            and len(enum) > 1
        ):  # (watchful's `log_type` offers "", Brex's path `dataset` too): an empty value is
            # none at all, and a path segment is never empty (the runtime refuses one)
            schema = {**schema, "enum": [v for v in enum if v != ""]}
        return Param(
            name=p["name"],
            location=loc,
            required=True if loc == "path" else bool(p.get("required")),
            schema=schema,
            description=short_text(p.get("description") or "", 300),
            deprecated=bool(p.get("deprecated")),
            style=param_style(p, self.swagger2),
            long_description=as_str(p.get("description")),
            example=self._example(p, where),
        )

    def _paging(self, raw: Any, params: list[Param], where: str) -> Paging | None:
        """How a read pages: its query parameters against its first success answer's headers
        and fields."""
        if not isinstance(raw, dict):
            return None
        key = next((k for k in sorted(raw, key=str) if str(k).startswith("2")), None)
        if key is None:
            return None
        resp = self.r.deref(raw[key], f"{where}/responses/{key}")
        if not isinstance(resp, dict):
            return None
        heads = resp.get("headers")
        headers = (
            frozenset(str(h).lower() for h in heads) if isinstance(heads, dict) else frozenset()
        )
        schema = resp.get("schema")
        if not self.swagger2 and isinstance(resp.get("content"), dict):
            _, media = pick_media(resp["content"])
            schema = media.get("schema") if isinstance(media, dict) else None
        _, resolved = self._deref_named(schema, where)
        top_array = isinstance(resolved, dict) and resolved.get("type") == "array"
        query = {
            p.name: str(p.schema.get("type") or "") if isinstance(p.schema, dict) else ""
            for p in params
            if p.location == "query"
        }
        return detect_paging(query, headers, self._tree(resolved, where, 0), top_array)

    def _credential_fields(self, params: list[Param], body: Body | None) -> tuple[str, ...]:
        """Parameters and body fields that carry the credential: never a model's argument. Only
        the credential itself: an apiKey scheme's own name and place, or a credential's usual
        name whose description says it is one (a lock `token` or a reset `token` is an argument)."""
        names = {
            p.name
            for p in params
            if p.location in ("query", "header", "cookie")
            and self.secrets.is_credential(p.name, p.location, p.long_description)
        }
        if body is not None and isinstance(body.schema, dict):
            props = body.schema.get("properties")
            for name, sub in props.items() if isinstance(props, dict) else ():
                said = sub.get("description") if isinstance(sub, dict) else ""
                if self.secrets.is_credential(
                    name, "body", body.field_docs.get(name) or str(said or "")
                ):
                    names.add(name)
        return tuple(sorted(names))


def operation_id_of(raw: Any) -> str | None:
    """An operation object's `operationId` as its operation has it (None when there is none)."""
    op_id = raw.get("operationId") if isinstance(raw, dict) else None
    return str(op_id) if isinstance(op_id, (str, int)) and str(op_id).strip() else None


def extract_operations(
    doc: dict[str, Any],
    resolver: Resolver,
    translator: SchemaTranslator,
    base_url: str | None,
    own_url: str | None = None,
) -> tuple[list[Operation], list[str]]:
    ex = _Extractor(doc, resolver, translator, base_url, own_url)
    ops = ex.run()
    return ops, ex.warnings


def extract_webhooks(
    doc: dict[str, Any], resolver: Resolver, translator: SchemaTranslator, taken: set[str]
) -> list[Webhook]:
    """The document's webhooks (OpenAPI 3.1): each event's method, words and payload, with a
    file name no operation has (`taken`: the operations' names)."""
    from skillpress.format.names import snake

    hooks = doc.get("webhooks")
    if "swagger" in doc or not isinstance(hooks, dict):
        return []
    ex = _Extractor(doc, resolver, translator, None)
    out: list[Webhook] = []
    for key in sorted(hooks, key=str):
        item = resolver.deref(hooks[key], f"#/webhooks/{key}")
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            base = "event_" + (snake(str(key)) or "hook")[:60]
            name = base
            n = 2
            while name in taken:
                name, n = f"{base}_{n}", n + 1
            taken.add(name)
            where = f"#/webhooks/{key}/{method}"
            body = ex._body3(op["requestBody"], where) if "requestBody" in op else None
            out.append(
                Webhook(
                    name=str(key),
                    file=f"{name}.md",
                    method=method.upper(),
                    summary=short_text(op.get("summary") or "", 200),
                    description=as_str(op.get("description")),
                    body=body,
                )
            )
    return out


def _at_least_one(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
