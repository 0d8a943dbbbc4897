"""Read the operations of an OpenAPI 3.x or Swagger 2.0 document into `Operation` records."""
# size: OpenAPI 3.x and Swagger 2.0 read into one Operation form, one place per construct

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl

from skillpress.derive.auth import classify_scheme, is_credential_header
from skillpress.derive.model import Body, Operation, Param, Response, Webhook
from skillpress.derive.paging import FieldTree, detect_paging
from skillpress.derive.refs import Resolver
from skillpress.derive.schema import SchemaTranslator
from skillpress.derive.servers import override_server, stand_in_server
from skillpress.derive.shapes import as_dict, as_list, as_str
from skillpress.format.errors import SpecRefused
from skillpress.format.paging import Paging
from skillpress.format.text import short_text
from skillpress.format.type_refs import named_ref, type_label

__all__ = ["METHODS", "extract_operations", "extract_webhooks", "is_json_media"]

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_PARAM_KEYS_2 = (
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "x-nullable",
)
_MAX_ERRORS = 8


def is_json_media(media: str) -> bool:
    m = media.split(";", 1)[0].strip().lower()
    return m == "application/json" or m.endswith("+json") or m == "*/*" or m == "application/*"


def _pick_media(content: dict[str, Any]) -> tuple[str | None, Any]:
    medias = [m for m in content if isinstance(m, str)]
    for m in medias:
        if m.split(";", 1)[0].strip().lower() == "application/json":
            return m, content[m]
    for m in medias:
        if is_json_media(m) and m != "*/*":
            return m, content[m]
    if medias:
        return medias[0], content[medias[0]]
    return None, None


_COLLECTION_FORMATS = {"multi": "form", "csv": "csv", "ssv": "ssv", "tsv": "tsv", "pipes": "pipes"}


def _path_style(p: dict[str, Any], swagger2: bool) -> str:
    """How a path parameter is written (frontmatter.PATH_STYLES): `simple` (a list joined by
    commas), `label` (`.a,b`; exploded `.a.b`) or `matrix` (`;id=a,b`; exploded `;id=a;id=b`)."""
    style = "simple" if swagger2 else p.get("style") or "simple"
    if style not in ("label", "matrix"):
        return "simple"
    return f"{style}_explode" if p.get("explode") is True else style


def _style(p: dict[str, Any], swagger2: bool) -> str:
    """How a list or object parameter is written (frontmatter.STYLES), as the spec says."""
    if p.get("in") == "path":
        return _path_style(p, swagger2)
    if swagger2:  # collectionFormat, csv by default
        return _COLLECTION_FORMATS.get(str(p.get("collectionFormat") or "csv"), "csv")
    content = p.get("content")
    if "schema" not in p and isinstance(content, dict):
        media, _ = _pick_media(content)
        # a parameter with `content` is its value serialised in that media type, under its name
        return "json" if media and is_json_media(media) else "form"
    style = p.get("style") or "form"
    explode = p.get("explode")
    if style == "form":
        return "csv" if explode is False else "form"
    if style == "spaceDelimited":
        return "form" if explode is True else "ssv"
    if style == "pipeDelimited":
        return "form" if explode is True else "pipes"
    if style == "deepObject":
        return "deepObject"
    return "form"


# names a credential goes by when an API re-declares its credential as a parameter (Slack's
# `token`, "Authentication token"): withheld only when the parameter's own words say it is one
_CREDENTIAL_NAMES = frozenset({"token", "access_token", "api_key", "apikey", "auth_token"})
_SAYS_CREDENTIAL = re.compile(
    r"\b(authenticat\w*|authoriz\w*|credentials?|api[ _-]?key|access[ _-]token|bearer)\b", re.I
)


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
        return low in _CREDENTIAL_NAMES and bool(_SAYS_CREDENTIAL.search(description or ""))


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


class _Extractor:
    def __init__(
        self,
        doc: dict[str, Any],
        resolver: Resolver,
        translator: SchemaTranslator,
        base_url: str | None,
        own_url: str | None = None,
    ) -> None:
        self.doc = doc
        self.r = resolver
        self.t = translator
        self.base_url = base_url
        self.own_url = own_url  # the document's own server, where `base_url` stands in for it
        self.swagger2 = "swagger" in doc
        self.warnings: list[str] = []
        self.secrets = _secrets(doc, resolver)
        # a schema's shape and a field's label, by the schema object (kept, so its id is its
        # own): responses and fields are shared by many operations of a large API
        self._shapes: dict[int, tuple[Any, tuple[str, list[tuple[str, str]] | None]]] = {}
        self._labels: dict[int, tuple[Any, str]] = {}

    # ---------------------------------------------------------------- parameters

    def _param_schema(self, p: dict[str, Any], where: str) -> Any:
        if self.swagger2:
            raw = {k: p[k] for k in _PARAM_KEYS_2 if k in p}
            return self.t.translate(raw, where)
        if "schema" in p:
            return self.t.translate(p["schema"], f"{where}/schema")
        content = p.get("content")
        if isinstance(content, dict):
            _, media = _pick_media(content)
            if isinstance(media, dict) and "schema" in media:
                return self.t.translate(media["schema"], f"{where}/content")
        return {"type": "string"}

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

    # ---------------------------------------------------------------- responses

    def _shape(self, raw: Any, where: str) -> tuple[str, list[tuple[str, str]] | None]:
        """One level of a response schema: a note (`Pet`, `a list of Pet`) and its fields."""
        known = self._shapes.get(id(raw))
        if known is None or known[0] is not raw:
            known = self._shapes[id(raw)] = (raw, self._new_shape(raw, where))
        note, fields = known[1]
        return note, None if fields is None else list(fields)

    def _new_shape(self, raw: Any, where: str) -> tuple[str, list[tuple[str, str]] | None]:
        name, s = self._deref_named(raw, where)
        note = name or ""
        typ = s.get("type") if isinstance(s, dict) else None
        if typ == "array" and isinstance(s, dict):
            iname, item = self._deref_named(s.get("items"), where)
            note = f"a list of {iname or self._label(s.get('items'))}"
            s = item
        fields = self._fields(s, where, 0)
        if not note and fields is None and isinstance(s, dict):
            options = s.get("anyOf") or s.get("oneOf")
            if isinstance(options, list) and 1 < len(options) <= 4:
                # alternatives, each named with its own fields
                note = " or ".join(f"({self._described_label(o, where)})" for o in options)
            else:
                note = self._label(s)
        return note, fields

    def _deref_named(self, raw: Any, where: str) -> tuple[str | None, Any]:
        name = None
        seen = 0
        while isinstance(raw, dict) and "$ref" in raw and seen < 32:
            ref = raw["$ref"]
            if isinstance(ref, str):
                key = self.t.type_name(ref)
                name = key or name
            raw = self.r.pointer(ref, where)
            seen += 1
        return name, raw

    def _fields(self, s: Any, where: str, depth: int) -> list[tuple[str, str]] | None:
        if not isinstance(s, dict) or depth > 4:
            return None
        props: dict[str, Any] = {}
        for member in s.get("allOf") or [] if isinstance(s.get("allOf"), list) else []:
            _, m = self._deref_named(member, where)
            sub = self._fields(m, where, depth + 1)
            if sub:
                props.update(dict(sub))
        if isinstance(s.get("properties"), dict):
            for key, value in s["properties"].items():
                if isinstance(value, dict) and value.get("writeOnly") is True:
                    continue
                props[str(key)] = self._described_label(value, where)
        return list(props.items()) if props else None

    def _described_label(self, value: Any, where: str) -> str:
        """A field's type, and for a named type its own fields (one level): a name alone says
        nothing to an agent that cannot read the spec's components."""
        known = self._labels.get(id(value))
        if known is None or known[0] is not value:
            known = self._labels[id(value)] = (value, self._new_described_label(value, where))
        return known[1]

    def _new_described_label(self, value: Any, where: str) -> str:
        label = self._label(value)
        target = value
        if isinstance(value, dict) and value.get("type") == "array":
            target = value.get("items")
        for key in ("allOf", "anyOf", "oneOf"):  # a reference wrapped to carry a description
            wrapped = target.get(key) if isinstance(target, dict) else None
            if isinstance(wrapped, list) and len(wrapped) == 1:
                target = wrapped[0]
        if not (isinstance(target, dict) and isinstance(target.get("$ref"), str)):
            return label
        _, resolved = self._deref_named(target, where)
        if not isinstance(resolved, dict):
            return label
        if not isinstance(resolved.get("properties"), dict):
            # a name for a plain value (Slack's `defs_channel_id`): say the value's type
            plain = self._label(resolved)
            if (
                resolved.get("type") in ("string", "integer", "number", "boolean")
                and target is value
            ):
                return plain
            return label
        names = [str(k) for k in resolved["properties"]][:8]
        more = ", …" if len(resolved["properties"]) > 8 else ""
        return f"{label}: object with " + ", ".join(names) + more

    def _label(self, s: Any) -> str:
        return type_label(s, lambda ref: self.t.type_name(ref) or named_ref(ref) or "object")

    def _responses(self, raw: Any, where: str, produces: list[str]) -> list[Response]:
        if not isinstance(raw, dict):
            return []
        out: list[Response] = []
        errors = 0
        for status in sorted(raw, key=lambda k: (str(k) == "default", str(k))):
            code = str(status)
            resp = self.r.deref(raw[status], f"{where}/responses/{code}")
            if not isinstance(resp, dict):
                continue
            raw_desc = as_str(resp.get("description"))
            desc = short_text(raw_desc, 200)
            success = code.startswith("2")
            if code.startswith("3"):
                out.append(Response(code, desc, None, long_description=raw_desc))
                continue
            if not success:
                if errors >= _MAX_ERRORS:
                    continue
                errors += 1
                out.append(Response(code, desc, None, long_description=raw_desc))
                continue
            schema, media = None, None
            if self.swagger2:
                schema = resp.get("schema")
                media = next(
                    (m for m in produces if is_json_media(m)), produces[0] if produces else None
                )
            elif isinstance(resp.get("content"), dict):
                media, m = _pick_media(resp["content"])
                schema = m.get("schema") if isinstance(m, dict) else None
            if schema is None:
                out.append(Response(code, desc, None, "no body" if media is None else media))
                continue
            note, fields = self._shape(schema, f"{where}/responses/{code}")
            if media and not is_json_media(media):
                note = f"{media}" + (f" ({note})" if note else "")
            out.append(Response(code, desc, fields, note))
        return out

    # ---------------------------------------------------------------- bodies

    def _example(self, holder: Any, where: str) -> Any:
        """The spec's own example on a parameter or media type (`example`, the first of
        `examples`, or its schema's `example`), or None."""
        if not isinstance(holder, dict):
            return None
        if "example" in holder:
            return holder["example"]
        examples = holder.get("examples")
        if isinstance(examples, dict) and examples:
            first = self.r.deref(next(iter(examples.values())), f"{where}/examples")
            if isinstance(first, dict) and "value" in first:
                return first["value"]
        schema = holder.get("schema")
        if isinstance(schema, dict) and "$ref" not in schema and "example" in schema:
            return schema["example"]
        return None

    def _field_docs(self, raw: Any, where: str, depth: int = 0) -> dict[str, str]:
        """The whole description of each top-level field of a body schema (through references
        and `allOf`), where it says more than its first paragraph."""
        _, s = self._deref_named(raw, where)
        if not isinstance(s, dict) or depth > 4:
            return {}
        docs: dict[str, str] = {}
        members = s.get("allOf")
        for member in members if isinstance(members, list) else []:
            docs.update(self._field_docs(member, where, depth + 1))
        props = s.get("properties")
        for name, value in props.items() if isinstance(props, dict) else ():
            _, field_schema = self._deref_named(value, where)
            whole = field_schema.get("description") if isinstance(field_schema, dict) else None
            if isinstance(whole, str) and whole.strip() and short_text(whole) != whole.strip():
                docs[str(name)] = whole
        return docs

    def _body3(self, raw: Any, where: str) -> Body | None:
        rb = self.r.deref(raw, f"{where}/requestBody")
        if not isinstance(rb, dict) or not isinstance(rb.get("content"), dict) or not rb["content"]:
            return None
        media, m = _pick_media(rb["content"])
        others = sorted(str(k) for k in rb["content"] if k != media)
        schema = None
        if isinstance(m, dict) and "schema" in m:
            schema = self.t.translate(m["schema"], f"{where}/requestBody", inline_top=True)
        styles: dict[str, str] = {}
        encoding = m.get("encoding") if isinstance(m, dict) else None
        if isinstance(encoding, dict):
            for field_name, enc in encoding.items():
                style = _style(enc, False) if isinstance(enc, dict) else "form"
                if style != "form":
                    styles[str(field_name)] = style
        return Body(
            content_type=media,
            is_json=bool(media and is_json_media(media)),
            schema=schema,
            required=bool(rb.get("required")),
            description=short_text(rb.get("description") or "", 300),
            other_types=others,
            styles=styles,
            long_description=as_str(rb.get("description")),
            example=self._example(m, where),
            field_docs=self._field_docs(m.get("schema") if isinstance(m, dict) else None, where),
        )

    def _body2(self, params: list[dict[str, Any]], consumes: list[str], where: str) -> Body | None:
        body = next((p for p in params if p.get("in") == "body"), None)
        form = [p for p in params if p.get("in") == "formData"]
        if body is not None:
            json_types = [c for c in consumes if is_json_media(c)]
            media = (
                json_types[0] if json_types else (consumes[0] if consumes else "application/json")
            )
            schema = self.t.translate(body.get("schema") or {}, f"{where}/body", inline_top=True)
            return Body(
                media,
                is_json_media(media),
                schema,
                bool(body.get("required")),
                short_text(body.get("description") or "", 300),
                [c for c in consumes if c != media],
            )
        return self._form2(form, consumes, where) if form else None

    def _form2(self, form: list[dict[str, Any]], consumes: list[str], where: str) -> Body:
        """Swagger 2.0's formData parameters as one form body (multipart when a file is one)."""
        media = (
            "multipart/form-data"
            if any(p.get("type") == "file" for p in form) or "multipart/form-data" in consumes
            else "application/x-www-form-urlencoded"
        )
        props = {
            str(p["name"]): self._param_schema(p, f"{where}/formData/{p['name']}") for p in form
        }
        for p in form:
            if p.get("description"):
                props[str(p["name"])] = {
                    **props[str(p["name"])],
                    "description": short_text(p["description"]),
                }
        required = [str(p["name"]) for p in form if p.get("required")]
        form_schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            form_schema["required"] = required
        styles = {str(p["name"]): _style(p, True) for p in form}
        return Body(
            media,
            False,
            form_schema,
            bool(required),
            "",
            [],
            {k: v for k, v in styles.items() if v != "form"},
        )

    # ---------------------------------------------------------------- operations

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

    def _body_of(
        self,
        op: dict[str, Any],
        raw_params: list[dict[str, Any]],
        where: str,
        doc_consumes: list[str],
        doc_produces: list[str],
    ) -> tuple[Body | None, list[str]]:
        """The request body (Swagger 2.0's body or form parameters, or OpenAPI 3's requestBody)
        and the media types the answers are declared in (Swagger 2.0's `produces`)."""
        if not self.swagger2:
            return (self._body3(op["requestBody"], where) if "requestBody" in op else None), []
        consumes: list[str] = (
            [str(c) for c in op["consumes"]]
            if isinstance(op.get("consumes"), list)
            else doc_consumes
        )
        produces: list[str] = (
            [str(c) for c in op["produces"]]
            if isinstance(op.get("produces"), list)
            else doc_produces
        )
        return self._body2(raw_params, [str(c) for c in consumes], where), produces

    def _param(self, p: dict[str, Any], where: str) -> Param:
        """A path, query, header or cookie parameter."""
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
            loc == "query"
            and not p.get("allowEmptyValue")
            and isinstance(enum, list)
            and "" in enum
            and len(enum) > 1
        ):  # (watchful's `log_type` offers ""): an empty value is none at all
            schema = {**schema, "enum": [v for v in enum if v != ""]}
        return Param(
            name=p["name"],
            location=loc,
            required=True if loc == "path" else bool(p.get("required")),
            schema=schema,
            description=short_text(p.get("description") or "", 300),
            deprecated=bool(p.get("deprecated")),
            style=_style(p, self.swagger2),
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
            _, media = _pick_media(resp["content"])
            schema = media.get("schema") if isinstance(media, dict) else None
        _, resolved = self._deref_named(schema, where)
        top_array = isinstance(resolved, dict) and resolved.get("type") == "array"
        query = {
            p.name: str(p.schema.get("type") or "") if isinstance(p.schema, dict) else ""
            for p in params
            if p.location == "query"
        }
        return detect_paging(query, headers, self._tree(resolved, where, 0), top_array)

    def _tree(self, s: Any, where: str, depth: int) -> FieldTree | None:
        """A schema's fields three levels down, through references and `allOf`."""
        _, s = self._deref_named(s, where)
        if not isinstance(s, dict) or depth > 3:
            return None
        out: dict[str, tuple[str, FieldTree]] = {}
        members = s.get("allOf")
        for member in members if isinstance(members, list) else []:
            out.update(self._tree(member, where, depth + 1) or {})
        props = s.get("properties")
        for name, value in props.items() if isinstance(props, dict) else ():
            _, sub = self._deref_named(value, where)
            typ = sub.get("type") if isinstance(sub, dict) else None
            if isinstance(typ, list):
                typ = next((t for t in typ if t != "null"), "")
            out[str(name)] = (str(typ or ""), self._tree(sub, where, depth + 1) or {})
        return out

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
