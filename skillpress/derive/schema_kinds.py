"""What allOf and discriminators say about a value's kind, for schema translation: an implicit
hierarchy's subtypes (a base with a discriminator and no oneOf, extended by allOf, as Azure
writes them), each naming itself; a discriminator's property required in the branches that
describe it; and an allOf part that names no kind of value narrowing the property before it."""

from __future__ import annotations

import json
from typing import Any

from skillpress.derive.refs import Resolver
from skillpress.format.errors import SpecRefused

__all__ = ["Hierarchies", "discriminated", "kind_said", "narrowed", "never_one"]

_MAX_KINDS = 20  # the kinds a base is offered as; past that, the base itself


class Hierarchies:
    """The implicit hierarchies of one document's named schemas, found once when first asked."""

    def __init__(self, resolver: Resolver, names: dict[str, str]) -> None:
        self.resolver = resolver
        self.names = names  # the named schemas' references (their type names beside)
        self._kinds: dict[str, list[tuple[str, str]]] | None = None
        self._kind_of: dict[str, tuple[str, str]] = {}  # a subtype's ref → (property, value)

    def subtypes(self, ref: str) -> list[tuple[str, str]]:
        """The named types that extend `ref` by allOf when `ref` has a discriminator and no
        oneOf of its own (Data Factory's FactoryRepoConfiguration, a GitHub or a VSTS one): each
        subtype's reference and the value of the discriminating property that names it (its
        mapping's, else its `x-ms-discriminator-value`, else its name)."""
        if self._kinds is None:
            self._kinds = {}
            for sub in self.names:
                self._scan(sub)
            # a choice of two to twenty kinds: one kind says nothing, and Bitbucket's `object`
            # (every model extends it) or Azure Search's forty token filters are past what a
            # tool's schema shows of a choice (`shallow_schema` keeps twenty branches)
            for base, kinds in list(self._kinds.items()):
                # a base whose property lists its values, one a kind's name is not among
                # (Service Fabric's EntityKind beside ApplicationBackupEntity): kinds unnamed
                listed = self._values(base)
                unnamed = listed is not None and any(v not in listed for _, v in kinds)
                if unnamed or not 2 <= len(kinds) <= _MAX_KINDS:
                    del self._kinds[base]
                    for sub, _ in kinds:
                        self._kind_of.pop(sub, None)
        return self._kinds.get(ref, [])

    def kind_of(self, ref: str) -> tuple[str, str] | None:
        """(the discriminating property, the value naming it) of a subtype, else None."""
        self.subtypes(ref)
        return self._kind_of.get(ref)

    def _scan(self, sub: str) -> None:
        try:
            schema = self.resolver.pointer(sub, sub)
        except SpecRefused:
            return
        members = schema.get("allOf") if isinstance(schema, dict) else None
        for member in members if isinstance(members, list) else ():
            base = member.get("$ref") if isinstance(member, dict) else None
            found = self._base(base) if isinstance(base, str) else None
            if found is None or self._kinds is None:
                continue
            prop, mapping = found
            key = sub.rsplit("/", 1)[-1]
            named = [v for v, target in mapping.items() if target in (sub, key)]
            said = schema.get("x-ms-discriminator-value")
            value = named[0] if named else str(said) if isinstance(said, str) else key
            self._kinds.setdefault(str(base), []).append((sub, value))
            self._kind_of[sub] = (prop, value)

    def _values(self, ref: str) -> list[Any] | None:
        """The values a base's discriminating property lists (its enum), if it lists them."""
        base = self.resolver.pointer(ref, ref)
        found = self._base(ref)
        props = base.get("properties") if isinstance(base, dict) else None
        said = props.get(found[0]) if found and isinstance(props, dict) else None
        if isinstance(said, dict) and isinstance(said.get("$ref"), str):
            try:
                said = self.resolver.deref(said, ref)
            except SpecRefused:
                return None
        enum = said.get("enum") if isinstance(said, dict) else None
        return enum if isinstance(enum, list) else None

    def _base(self, ref: str) -> tuple[str, dict[str, str]] | None:
        """(the discriminating property, its mapping) of a named schema with a discriminator and
        no oneOf or anyOf, else None."""
        if ref not in self.names:
            return None
        try:
            base = self.resolver.pointer(ref, ref)
        except SpecRefused:
            return None
        if not isinstance(base, dict) or "oneOf" in base or "anyOf" in base:
            return None
        disc = base.get("discriminator")
        prop = disc.get("propertyName") if isinstance(disc, dict) else None
        props = base.get("properties")
        said = props.get(prop) if isinstance(props, dict) and isinstance(prop, str) else None
        if not isinstance(prop, str) or (isinstance(said, dict) and said.get("readOnly")):
            return None  # (Azure Migrate's `instanceType`: the server's to say, never sent)
        mapping = disc.get("mapping") if isinstance(disc, dict) else None
        pairs = mapping.items() if isinstance(mapping, dict) else ()
        return prop, {str(k): str(v) for k, v in pairs}


def kind_said(schema: Any, kind: tuple[str, str] | None) -> Any:
    """A subtype of an implicit hierarchy with its discriminating property fixed to the value
    that names it, and required (`type: FactoryGitHubConfiguration`)."""
    if kind is None or not isinstance(schema, dict):
        return schema
    prop, value = kind
    props = schema.get("properties")
    if not isinstance(props, dict):
        return schema
    said: dict[str, Any] = {"type": "string"}
    if isinstance(props.get(prop), dict) and "$ref" not in props[prop]:
        said = props[prop]  # (one a shared type names, Service Fabric's BackupEntityKind, is
    # written as its one value: beside a `$ref` an enum would be left out where it expands)
    if isinstance(said.get("enum"), list) and value not in said["enum"]:
        return schema  # the subtype names its kinds itself
    required: list[Any] = []
    if isinstance(schema.get("required"), list):
        required = schema["required"]
    return {
        **schema,
        "properties": {**props, prop: {**said, "enum": [value]}},
        "required": required if prop in required else [*required, prop],
    }


# what says a schema's kind of value: a part that names none only narrows the one before it
_KIND_KEYS = frozenset(
    {"type", "$ref", "allOf", "oneOf", "anyOf", "items", "properties", "enum", "const"}
)


def narrowed(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The properties an allOf part describes (`after`), each over what an earlier part said
    (`before`): the later's schema, but where it names no kind of value (Linode's rules
    re-declare `inbound: {required: […]}` beside the array the first part makes it), the
    earlier one with the later's other words added: JSON Schema holds a value to both."""
    out = {}
    for name, later in after.items():
        earlier = before.get(name)
        if isinstance(earlier, dict) and isinstance(later, dict) and not _KIND_KEYS & later.keys():
            later = {**earlier, **{k: v for k, v in later.items() if k not in earlier}}
        out[name] = later
    return out


def discriminated(
    branches: list[Any], discriminator: Any, raw: list[Any], resolver: Resolver
) -> list[Any]:
    """A oneOf's branches with the discriminator's property required where a branch describes
    it (Mailchimp's segment conditions name their `condition_type`): a value without it is
    refused by the API, whose reading of a value starts there. With no discriminator, the tag
    every branch gives one value of its own (WireMock's delays: `type: uniform` or
    `lognormal`), which is what tells them apart."""
    name = discriminator.get("propertyName") if isinstance(discriminator, dict) else None
    name = name if isinstance(name, str) else _tag(raw, resolver)
    if name is None:
        return branches
    out = []
    for b in branches:
        props = b.get("properties") if isinstance(b, dict) else None
        required = b.get("required", []) if isinstance(b, dict) else None
        wants = isinstance(props, dict) and name in props and isinstance(required, list)
        if wants and isinstance(required, list) and name not in required:
            b = {**b, "required": [*required, name]}
        out.append(b)
    return out


# what a branch may say beside its type and still admit every value of that type
_ANNOTATIONS = frozenset({"type", "format", "description", "title", "default", "examples"})


def never_one(branches: list[Any], raw: list[Any], resolver: Resolver) -> bool:
    """Whether a oneOf can never hold for exactly one branch, so that no value is valid and
    the tool could never be called: two branches admit the same values (`_alike`), or every
    branch is an open object that requires nothing (ShipEngine's rate request: by shipment id
    or by shipment; Zoom's settings), so `{}`, and any value one admits, matches them all.
    Offered as anyOf: any one will do."""
    return _alike(branches) or _open_objects(raw, resolver)


def _alike(branches: list[Any]) -> bool:
    """Whether two branches admit the same values: each only a type (a format beside it, which
    validators need not check), the types shared (an integer is a number). Shutterstock's asset
    id is oneOf two strings of formats nobody defines: every value matches both."""
    seen: set[str] = set()
    for branch in branches:
        if not isinstance(branch, dict) or not set(branch) <= _ANNOTATIONS:
            continue
        typ = branch.get("type")
        types = {typ} if isinstance(typ, str) else set(typ) if isinstance(typ, list) else set()
        if "number" in types:
            types.add("integer")
        if types & seen:
            return True
        seen |= types
    return False


def _open_objects(raw: list[Any], resolver: Resolver) -> bool:
    """Whether every branch, as the spec writes it, is an object of properties that admits
    others, and another branch requires no more than it does (nothing, or Portfolio
    Optimizer's `portfolios` and `benchmarkReturns` in each): a value one admits, another
    admits too."""
    if _tag(raw, resolver) is not None:
        return False  # a tag of one value in each tells them apart, once required
    required: list[frozenset[str]] = []
    for branch in raw:
        names = _open_requires(branch, resolver)
        if names is None:
            return False
        required.append(names)
    # each branch's values are another's too: that one requires no more (Otoroshi's JWT
    # sources: a query param and a cookie both `{type, name}`, a header those and `remove`)
    return len(raw) > 1 and all(
        any(j != i and other <= mine for j, other in enumerate(required))
        for i, mine in enumerate(required)
    )


def _open_requires(branch: Any, resolver: Resolver) -> frozenset[str] | None:
    """The names an open object branch requires, or None where it is not one. A branch that is
    only a choice (anyOf, or a oneOf that is never one itself) of open objects requiring nothing
    requires nothing (Zoom's settings: one branch is a choice of two authentication shapes,
    each open, each optional throughout)."""
    try:
        branch = resolver.deref(branch, "a oneOf branch") if isinstance(branch, dict) else None
    except SpecRefused:
        return None
    if not isinstance(branch, dict) or branch.get("type", "object") != "object":
        return None
    key = "anyOf" if "anyOf" in branch else "oneOf"
    alts = branch.get(key)
    if "properties" not in branch and isinstance(alts, list) and alts:
        rest = set(branch) - {"type", key, "description", "title"}
        if rest or any(_open_requires(a, resolver) != frozenset() for a in alts):
            return None
        return frozenset()
    if (
        not isinstance(branch.get("properties"), dict)
        or branch.get("additionalProperties") is False
        or any(k in branch for k in ("allOf", "oneOf", "anyOf", "not", "enum", "const"))
    ):
        return None
    listed = branch.get("required")
    names: list[Any] = listed if isinstance(listed, list) else []
    if any(_one_valued(branch["properties"].get(n)) for n in names):
        return None  # a required property of one value tells the branches apart
    return frozenset(str(n) for n in names)


def _one_valued(prop: Any) -> bool:
    enum = prop.get("enum") if isinstance(prop, dict) else None
    return isinstance(prop, dict) and (
        "const" in prop or (isinstance(enum, list) and len(enum) == 1)
    )


def _tag(raw: list[Any], resolver: Resolver) -> str | None:
    """The property every branch, as the spec writes it, gives one value of its own (a `type`
    of `enum: [uniform]` in one, `[lognormal]` in the next), or None."""
    values: dict[str, set[str]] = {}
    for n, branch in enumerate(raw):
        try:
            branch = resolver.deref(branch, "a oneOf branch") if isinstance(branch, dict) else None
        except SpecRefused:
            return None
        props = branch.get("properties") if isinstance(branch, dict) else None
        if not isinstance(props, dict):
            return None
        found = {k: json.dumps(_the_value(v)) for k, v in props.items() if _one_valued(v)}
        if n == 0:
            values = {k: {v} for k, v in found.items()}
        else:
            values = {k: vs | {found[k]} for k, vs in values.items() if k in found}
    distinct = [k for k, vs in values.items() if len(vs) == len(raw) > 1]
    return distinct[0] if distinct else None


def _the_value(prop: dict[str, Any]) -> Any:
    return prop["const"] if "const" in prop else prop["enum"][0]
