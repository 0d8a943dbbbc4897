"""What an operation sends and answers, read from the document: its request body (OpenAPI 3's
`requestBody`, Swagger 2.0's body or form parameters), its answers' shapes and fields as the
operation files show them, a parameter's schema and style, and the fields a paging answer has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from skillpress.derive.model import Body, Response
from skillpress.derive.paging import FieldTree
from skillpress.derive.refs import Resolver
from skillpress.derive.schema import SchemaTranslator
from skillpress.derive.shapes import as_str
from skillpress.format.text import short_text
from skillpress.format.type_refs import named_ref, type_label

__all__ = ["BodyReader", "is_json_media", "once_per_object", "param_style", "pick_media"]

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


def pick_media(content: dict[str, Any]) -> tuple[str | None, Any]:
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


def param_style(p: dict[str, Any], swagger2: bool) -> str:
    """How a list or object parameter is written (frontmatter.STYLES), as the spec says."""
    if p.get("in") == "path":
        return _path_style(p, swagger2)
    if swagger2:  # collectionFormat, csv by default
        return _COLLECTION_FORMATS.get(str(p.get("collectionFormat") or "csv"), "csv")
    content = p.get("content")
    if "schema" not in p and isinstance(content, dict):
        media, _ = pick_media(content)
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


T = TypeVar("T")


def once_per_object(cache: dict[int, tuple[Any, T]], obj: Any, make: Callable[[], T]) -> T:
    """`make()` for `obj`, made once while `cache` lives: a large API's reads meet the same
    objects (schemas, parameters) from many operations. The cache holds `obj`, so no other
    object takes its id meanwhile."""
    kept = cache.get(id(obj))
    if kept is None:
        kept = cache[id(obj)] = (obj, make())
    return kept[1]


class BodyReader:
    """The readers of bodies, answers and shapes an operation's reading uses: a schema's shape
    and a field's label are kept by the schema object (its id is its own while kept), since
    responses and fields are shared by many operations of a large API."""

    def __init__(self, resolver: Resolver, translator: SchemaTranslator, swagger2: bool) -> None:
        self.r = resolver
        self.t = translator
        self.swagger2 = swagger2
        self._shapes: dict[int, tuple[Any, tuple[str, list[tuple[str, str]] | None]]] = {}
        self._labels: dict[int, tuple[Any, str]] = {}
        self._trees: dict[tuple[int, int], tuple[Any, FieldTree | None]] = {}

    def _param_schema(self, p: dict[str, Any], where: str) -> Any:
        if self.swagger2:
            raw = {k: p[k] for k in _PARAM_KEYS_2 if k in p}
            return self.t.translate(raw, where)
        if "schema" in p:
            return self.t.translate(p["schema"], f"{where}/schema")
        content = p.get("content")
        if isinstance(content, dict):
            _, media = pick_media(content)
            if isinstance(media, dict) and "schema" in media:
                return self.t.translate(media["schema"], f"{where}/content")
        return {"type": "string"}

    def _shape(self, raw: Any, where: str) -> tuple[str, list[tuple[str, str]] | None]:
        """One level of a response schema: a note (`Pet`, `a list of Pet`) and its fields."""
        note, fields = once_per_object(self._shapes, raw, lambda: self._new_shape(raw, where))
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
        return once_per_object(self._labels, value, lambda: self._new_described_label(value, where))

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
                media, m = pick_media(resp["content"])
                schema = m.get("schema") if isinstance(m, dict) else None
            if schema is None:
                out.append(Response(code, desc, None, "no body" if media is None else media))
                continue
            note, fields = self._shape(schema, f"{where}/responses/{code}")
            if media and not is_json_media(media):
                note = f"{media}" + (f" ({note})" if note else "")
            out.append(Response(code, desc, fields, note))
        return out

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
        media, m = pick_media(rb["content"])
        others = sorted(str(k) for k in rb["content"] if k != media)
        schema = None
        if isinstance(m, dict) and "schema" in m:
            schema = self.t.translate(m["schema"], f"{where}/requestBody", inline_top=True)
        styles: dict[str, str] = {}
        encoding = m.get("encoding") if isinstance(m, dict) else None
        if isinstance(encoding, dict):
            for field_name, enc in encoding.items():
                style = param_style(enc, False) if isinstance(enc, dict) else "form"
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
        styles = {str(p["name"]): param_style(p, True) for p in form}
        return Body(
            media,
            False,
            form_schema,
            bool(required),
            "",
            [],
            {k: v for k, v in styles.items() if v != "form"},
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

    def _tree(self, s: Any, where: str, depth: int) -> FieldTree | None:
        """A schema's fields three levels down, through references and `allOf` (kept by the
        schema object: a large API's reads answer with the same few shapes)."""
        if not isinstance(s, dict):
            return None
        key = (id(s), depth)
        kept = self._trees.get(key)
        if kept is None:
            kept = self._trees[key] = (s, self._new_tree(s, where, depth))
        return kept[1]

    def _new_tree(self, s: Any, where: str, depth: int) -> FieldTree | None:
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
