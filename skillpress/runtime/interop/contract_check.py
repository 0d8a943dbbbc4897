"""The check that an Agent Skills folder and its tool contract (`tools.json`) say the same thing:
every tool the contract lists is an operation file or workflow of the folder, typed and
confirmed as the folder's own declarations make it (`skillpress verify`). Pure: files in, counts
or ContractError out."""

import json
import re
from collections.abc import Mapping
from typing import Any

from skillpress.format.declaration import WRITE_RISKS
from skillpress.runtime.calling.translate import CONTRACT_ARGS
from skillpress.runtime.interop.contracts import (
    RULE_ONLY,
    RULE_WRITES,
    RULES_HEADING,
    ContractError,
    workflow_kind,
)
from skillpress.runtime.package.kinds import operation_kinds
from skillpress.runtime.package.model import (
    PackageError,
    Skill,
    Tool,
)
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.load import load_workflows

__all__ = ["verify_folder"]


def verify_folder(files: Mapping[str, bytes]) -> dict[str, int]:
    """Check that tools.json is a sound contract, that SKILL.md states the same rules, and that
    both say what the reference files declare (the folder loaded as the runtime loads it: every
    tool there, with the same schema, a DELETE or a gated write typed write); counts, or
    ContractError listing every disagreement."""
    # size: one check per way the two surfaces can disagree, each named
    problems: list[str] = []
    try:
        contract = json.loads(files["tools.json"])
    except KeyError:
        raise ContractError("tools.json is missing") from None
    except json.JSONDecodeError as exc:
        raise ContractError(f"tools.json is not JSON: {exc}") from None
    skill_md = files.get("SKILL.md", b"").decode("utf-8", "replace")
    if not skill_md.startswith("---\nname: ") or "\n---\n" not in skill_md:
        problems.append("SKILL.md has no name/description frontmatter")
    if RULES_HEADING not in skill_md:
        problems.append(f"SKILL.md has no '{RULES_HEADING}' section")
    rules = skill_md.split(RULES_HEADING, 1)[-1]
    for rule, what in (
        (RULE_ONLY, "only the listed tools"),
        (RULE_WRITES, "writes need confirmation"),
    ):
        if rule not in rules:
            problems.append(f"SKILL.md's Tool Use Rules lack the rule that {what} ({rule!r})")
    if not isinstance(contract, list):
        raise ContractError("tools.json is not a list of tools")
    loaded = _declared(files, problems)
    declared = {t.name: t for t in loaded.tools} if loaded is not None else None
    flows = _folder_workflows(files, loaded) if loaded is not None else {}
    names = []
    for t in contract:
        if not isinstance(t, dict) or not {
            "name",
            "type",
            "requiresConfirmation",
            "idempotent",
            "inputSchema",
        } <= set(t):
            problems.append(
                f"tools.json entry {t!r:.60} lacks name, type, requiresConfirmation, idempotent or inputSchema"
            )
            continue
        name = t["name"]
        names.append(name)
        schema = t["inputSchema"] if isinstance(t["inputSchema"], dict) else {}
        props = schema.get("properties", {})
        required = schema.get("required", [])
        if t["type"] not in ("read", "write"):
            problems.append(f"{name}: type {t['type']!r} is neither read nor write")
        if t["type"] == "write" and not t["requiresConfirmation"]:
            problems.append(f"{name}: a write tool without requiresConfirmation")
        if t["requiresConfirmation"] and (
            "user_confirmed" not in props or "user_confirmed" not in required
        ):
            problems.append(
                f"{name}: requires confirmation but its schema does not require user_confirmed"
            )
        confirmed = props.get("user_confirmed")
        if confirmed is not None and (
            not isinstance(confirmed, dict)
            or confirmed.get("type") != "boolean"
            or confirmed.get("const") is not True
        ):
            problems.append(f"{name}: user_confirmed is not typed boolean, const true")
        if t["idempotent"] and (
            "idempotency_key" not in props or "idempotency_key" not in required
        ):
            problems.append(f"{name}: idempotent but its schema does not require idempotency_key")
        key = props.get("idempotency_key")
        if key is not None and (not isinstance(key, dict) or key.get("type") != "string"):
            problems.append(f"{name}: idempotency_key is not typed string")
        if declared is not None and "workflow" in t:
            problems += _against_workflow(name, t, schema, flows)
        elif declared is not None:
            problems += _against_reference(name, t, schema, declared)
        line = next((ln for ln in rules.splitlines() if ln.startswith(f"- `{name}` ")), None)
        if line is None:
            problems.append(f"{name}: in tools.json but not in SKILL.md's Tool Use Rules")
            continue
        if f"({t['type']})" not in line:
            problems.append(f"{name}: SKILL.md calls it something other than {t['type']}")
        if t["requiresConfirmation"] != ("requires explicit user confirmation" in line):
            problems.append(f"{name}: SKILL.md and tools.json disagree on confirmation")
        if t["idempotent"] != ("idempotent" in line):
            problems.append(f"{name}: SKILL.md and tools.json disagree on idempotency")
    for ln in rules.splitlines():
        m = re.match(r"^- `([^`]+)` \(", ln)
        if m and m.group(1) not in names:
            problems.append(f"{m.group(1)}: in SKILL.md's Tool Use Rules but not in tools.json")
    for name in sorted(set(declared or {}) - set(names)):
        problems.append(f"{name}: its reference file declares it, but tools.json does not list it")
    for name in sorted(set(flows) - set(names)):
        problems.append(
            f"{name}: references/workflows.yaml declares it, but tools.json does not list it"
        )
    if problems:
        raise ContractError("; ".join(problems))
    return {
        "tools": len(names),
        "write": sum(1 for t in contract if t.get("type") == "write"),
        "idempotent": sum(1 for t in contract if t.get("idempotent")),
    }


def _declared(files: Mapping[str, bytes], problems: list[str]) -> Skill | None:
    """The folder as the runtime loads it from its reference files (None, with the problem
    noted, when it does not load)."""
    if not any(p.startswith("references/") for p in files):
        problems.append("references/ is missing: nothing says what the tools send")
        return None
    try:
        skill = load_skill(files)
    except PackageError as exc:
        problems.append(f"the folder does not load as a skill: {exc}")
        return None
    return skill


def _folder_workflows(files: Mapping[str, bytes], skill: Skill) -> dict[str, tuple[Any, str]]:
    """The folder's hardened workflows by tool name, each with the kind its steps make it, as
    the runtime loads them ({} when none)."""
    if "references/workflows.yaml" not in files:
        return {}
    try:
        flows = load_workflows(files, skill)
    except PackageError:
        return {}
    kinds = operation_kinds(skill, files)
    return {
        wf.tool_name: (wf, workflow_kind(wf, flows, kinds))
        for wf in flows.values()
        if wf.execution == "hardened"
    }


def _against_workflow(
    name: str,
    entry: Mapping[str, Any],
    schema: Mapping[str, Any],
    flows: Mapping[str, tuple[Any, str]],
) -> list[str]:
    found = flows.get(name)
    if found is None:
        return [
            f"{name}: in tools.json as a workflow, but references/workflows.yaml has none by that name"
        ]
    wf, kind = found
    problems = []
    if _without_contract(schema) != _without_contract(wf.to_tool_schema()):
        problems.append(f"{name}: its inputSchema is not the parameters workflows.yaml declares")
    if entry["type"] != kind:
        problems.append(f"{name}: typed {entry['type']}, but its steps make it {kind}")
    return problems


def _without_contract(schema: Mapping[str, Any]) -> dict[str, Any]:
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in CONTRACT_ARGS}
    out = {**schema, "properties": props}
    required = [r for r in schema.get("required", []) if r not in CONTRACT_ARGS]
    out.pop("required", None)
    if required:
        out["required"] = required
    return out


def _against_reference(
    name: str, entry: Mapping[str, Any], schema: Mapping[str, Any], declared: Mapping[str, Tool]
) -> list[str]:
    tool = declared.get(name)
    if tool is None:
        return [f"{name}: in tools.json but no reference file declares it"]
    decl = tool.declaration
    problems = []
    if _without_contract(schema) != _without_contract(tool.schema):
        problems.append(f"{name}: its inputSchema is not the schema {decl.file} declares")
    gated = decl.approval is not None and decl.approval.risk in WRITE_RISKS
    if entry["type"] != "write" and (decl.method == "DELETE" or gated):
        what = f"{decl.method} {decl.url_path}" + (" behind an approval gate" if gated else "")
        problems.append(f"{name}: typed {entry['type']}, but {decl.file} declares {what}")
    if bool(entry["idempotent"]) != bool(decl.identity):
        problems.append(
            f"{name}: tools.json says idempotent is {entry['idempotent']}, but {decl.file}"
            + (f" keys it on {', '.join(decl.identity)}" if decl.identity else " has no identity")
        )
    return problems
