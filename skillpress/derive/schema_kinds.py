"""What allOf and discriminators say about a value's kind, for schema translation: an implicit
hierarchy's subtypes (a base with a discriminator and no oneOf, extended by allOf, as Azure
writes them), each naming itself; a discriminator's property required in the branches that
describe it; and an allOf part that names no kind of value narrowing the property before it."""

from __future__ import annotations

from typing import Any

from skillpress.derive.refs import Resolver
from skillpress.format.errors import SpecRefused

__all__ = ["Hierarchies", "discriminated", "kind_said", "narrowed"]


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
        if not isinstance(prop, str):
            return None
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
    if isinstance(props.get(prop), dict):
        said = props[prop]
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


def discriminated(branches: list[Any], discriminator: Any) -> list[Any]:
    """A oneOf's branches with the discriminator's property required where a branch describes
    it (Mailchimp's segment conditions name their `condition_type`): a value without it is
    refused by the API, whose reading of a value starts there."""
    name = discriminator.get("propertyName") if isinstance(discriminator, dict) else None
    if not isinstance(name, str):
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
