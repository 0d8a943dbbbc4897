"""An Arazzo document's `components` written into the places that use them, as its authors
publish it: a workflow's `inputs` (`$ref: "#/components/inputs/…"`, at any depth of its JSON
Schema), a step's parameters (`reference: $components.parameters.…`, its `value` overriding the
component's) and its `onSuccess` / `onFailure` actions (`reference:
$components.successActions.…` / `failureActions`). Pure: the document without `components`,
each reference that names nothing added to `refusals`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["inline_components"]

_INPUTS = "#/components/inputs/"
_KINDS = {"parameters": "parameters", "onSuccess": "successActions", "onFailure": "failureActions"}


def inline_components(doc: Mapping[str, Any], refusals: list[str]) -> dict[str, Any]:
    """`doc` with every component reference replaced by the component (a deep copy; `doc` is
    not changed) and no `components`."""
    out = {k: copy.deepcopy(v) for k, v in doc.items() if k != "components"}
    components = doc.get("components") or {}
    if not isinstance(components, dict):
        refusals.append("components is a mapping of inputs, parameters, successActions, …")
        return out
    for flow in out.get("workflows") or []:
        if not isinstance(flow, dict):
            continue
        name = str(flow.get("workflowId", ""))
        if "inputs" in flow:
            flow["inputs"] = _inputs(flow["inputs"], components, f"{name} inputs", refusals, ())
        for step in flow.get("steps") or []:
            if not isinstance(step, dict):
                continue
            where = f"{name} step {step.get('stepId', '')}"
            for field, kind in _KINDS.items():
                if isinstance(step.get(field), list):
                    step[field] = [
                        _referenced(item, kind, components, where, refusals) for item in step[field]
                    ]
    return out


def _inputs(
    node: Any,
    components: Mapping[str, Any],
    where: str,
    refusals: list[str],
    seen: tuple[str, ...],
) -> Any:
    """A JSON Schema with each `$ref` to `#/components/inputs/NAME` replaced by that schema."""
    if isinstance(node, list):
        return [_inputs(v, components, where, refusals, seen) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_INPUTS):
        key = ref[len(_INPUTS) :]
        found = (components.get("inputs") or {}).get(key)
        if found is None or key in seen:
            why = "refers to itself" if key in seen else "names no component"
            refusals.append(f"{where}: {ref!r} {why}")
            return {}
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return {**_inputs(found, components, where, refusals, (*seen, key)), **rest}
    return {k: _inputs(v, components, where, refusals, seen) for k, v in node.items()}


def _referenced(
    item: Any, kind: str, components: Mapping[str, Any], where: str, refusals: list[str]
) -> Any:
    """A reusable object by its `reference` (a parameter's `value` given beside it wins)."""
    if not isinstance(item, dict) or "reference" not in item:
        return item
    reference = str(item["reference"])
    prefix = f"$components.{kind}."
    found = (components.get(kind) or {}).get(reference[len(prefix) :])
    if not reference.startswith(prefix) or not isinstance(found, dict):
        refusals.append(f"{where}: reference {reference!r} names no {kind} component")
        return None
    merged = copy.deepcopy(found)
    if "value" in item:
        merged["value"] = item["value"]
    return merged
