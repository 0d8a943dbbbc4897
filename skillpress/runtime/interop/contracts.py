"""Skills outside skillpress: an Agent Skills folder and a tool contract (`tools.json`), and the
check that the two say the same thing.

The folder carries `SKILL.md` (name and description frontmatter, the body as its text, a Tool
Use Rules section) and the operation and category files under `references/`, each with its
"The call" section written back from the declaration, since an agent elsewhere has no tool to
build the request for it. `tools.json` types each tool read or write; a write tool requires
confirmation and carries `user_confirmed`; a tool with identity fields is idempotent and
carries `idempotency_key`. Pure: files in, files out.
"""
# size: the Agent Skills folder written and verified against the same contract

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from skillpress.errors import Permanent
from skillpress.format.declaration import WRITE_RISKS
from skillpress.format.manifest import Manifest
from skillpress.format.wording import BESIDE, CALL_BY_NAME, CREDENTIAL_ATTACHED
from skillpress.runtime.calling.translate import CONTRACT_ARGS
from skillpress.runtime.package.hand_written import (
    META_AUTH_ENV,
    META_AUTH_HEADER,
    META_AUTH_KIND,
    META_AUTH_MORE,
    META_SLUG,
    auth_more,
)
from skillpress.runtime.package.kinds import operation_kinds
from skillpress.runtime.package.model import (
    PackageError,
    Skill,
    Tool,
    UnknownOperation,
    with_confirmation,
)
from skillpress.runtime.package.skill import load_skill
from skillpress.runtime.workflows.load import load_workflows, loadable_workflows
from skillpress.runtime.workflows.model import walk

__all__ = [
    "ContractError",
    "agent_skill_name",
    "agent_skills_folder",
    "tool_contract",
    "verify_folder",
]

_NAME = re.compile(r"[^a-z0-9]+")
RULES_HEADING = "## Tool Use Rules"


class ContractError(ValueError, Permanent):
    """A folder whose surfaces disagree; the message lists every disagreement."""

    problem = "contract-broken"


def agent_skill_name(slug: str) -> str:
    """The skill's Agent Skills name: lowercase letters, digits and single hyphens, at most 64
    characters, neither starting nor ending with a hyphen (the folder holding it must have this
    name)."""
    return _NAME.sub("-", slug.lower()).strip("-")[:64].strip("-") or "skill"


def tool_contract(skill: Skill, files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """The tools.json entries: typed, with the obligations written into each schema."""
    kinds = operation_kinds(skill, files)
    out = []
    for tool in skill.tools:
        kind = kinds.get(tool.operation, "write")
        schema = (
            with_confirmation(tool.schema, "operation")
            if kind == "write"
            else json.loads(json.dumps(tool.schema))
        )
        props = schema.setdefault("properties", {})
        required = list(schema.get("required", []))
        idempotent = bool(tool.declaration.identity)
        if idempotent:
            props["idempotency_key"] = {
                "type": "string",
                "minLength": 1,
                "description": "Stable key for this logical operation so retries never create duplicates"
                f" (skillpress derives it from {', '.join(tool.declaration.identity)}).",
            }
            required.append("idempotency_key")
        if required:
            schema["required"] = required
        out.append(
            {
                "name": tool.name,
                "type": kind,
                "description": tool.description,
                "requiresConfirmation": kind == "write",
                "idempotent": idempotent,
                "inputSchema": schema,
            }
        )
    return out + _workflow_contract(skill, files, kinds)


def workflow_kind(wf: Any, flows: Mapping[str, Any], kinds: Mapping[str, str]) -> str:
    """write when any step it runs (a workflow it calls included) writes, else read."""

    def writes(name: str, seen: frozenset[str]) -> bool:
        for step in walk(flows[name].steps):
            if step.kind == "tool" and kinds.get(step.target or "", "write") == "write":
                return True
            callee = step.target or ""
            if (
                step.kind == "workflow"
                and callee not in seen
                and callee in flows
                and writes(callee, seen | {callee})
            ):
                return True
        return False

    return "write" if writes(wf.name, frozenset({wf.name})) else "read"


def _workflow_contract(
    skill: Skill, files: Mapping[str, bytes], kinds: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The skill's hardened workflows as tools.json entries (`workflow`: its name): typed read
    or write by the steps they run, a writing one needing the user's confirmation."""
    flows = loadable_workflows(files, skill)
    out = []
    for wf in flows.values():
        if wf.execution != "hardened" or wf.uses:
            continue
        kind = workflow_kind(wf, flows, kinds)
        schema = with_confirmation(wf.parameters, "run") if kind == "write" else wf.to_tool_schema()
        out.append(
            {
                "name": wf.tool_name,
                "type": kind,
                "description": wf.description or wf.name,
                "requiresConfirmation": kind == "write",
                "idempotent": False,
                "inputSchema": schema,
                "workflow": wf.name,
            }
        )
    return out


RULE_ONLY = "Only the tools listed below may be used. Never invent or call other tools."
RULE_WRITES = (
    "Write operations are never executed without explicit confirmation in the current conversation."
)


def _rule_lines(contract: list[dict[str, Any]]) -> list[str]:
    lines = [RULES_HEADING, "", RULE_ONLY, ""]
    for t in contract:
        rule = f"- `{t['name']}` ({t['type']})"
        if t["requiresConfirmation"]:
            rule += ": requires explicit user confirmation before every call; set `user_confirmed` only after it"
        else:
            rule += ": may be called without confirmation"
        if t["idempotent"]:
            rule += "; idempotent: send the same `idempotency_key` when retrying the same operation"
        lines.append(rule + ".")
    lines += ["", RULE_WRITES]
    return lines


def _call_section(tool: Tool, credential_header: str | None) -> list[str]:
    decl = tool.declaration
    lines = ["", "## The call", f"`{decl.method} {decl.url}`"]
    if decl.path_params:
        lines.append(
            "Path parameters (each one whole, percent-encoded segment): "
            + ", ".join(f"`{p}`" for p in decl.path_params)
            + "."
        )
    if decl.query:
        lines.append(
            "Query string: "
            + ", ".join(f"`{q}`" for q in decl.query)
            + " (a list is sent repeated: `tags=a&tags=b`)."
        )
    if decl.body:
        lines.append(
            "Body: a JSON object with "
            + ", ".join(f"`{b}`" for b in decl.body)
            + "; send `Content-Type: application/json`."
        )
    if decl.fixed:
        lines.append(
            "Always send: " + ", ".join(f"`{k}` = `{json.dumps(v)}`" for k, v in decl.fixed) + "."
        )
    for name, value in decl.headers:
        lines.append(f"Header `{name}: {value}` on every call.")
    if decl.identity:
        lines.append(
            "Idempotency-Key header: the same value for the same "
            + ", ".join(f"`{f}`" for f in decl.identity)
            + "."
        )
    if credential_header:
        lines.append(
            f"Credential: the `{credential_header}` header, supplied by the host (never an argument)."
        )
    return lines


def _with_call(text: str, tool: Tool, credential_header: str | None) -> str:
    """The operation file with "The call" written back from its declaration, always, and first:
    right after the title (a description cannot hold a section of skillpress's own, but a
    package from elsewhere could, so nothing of the file's decides whether it is written)."""
    lines = text.rstrip("\n").split("\n")
    cut = next((i + 1 for i, ln in enumerate(lines) if ln.startswith("# ")), 0)
    return (
        "\n".join(lines[:cut] + _call_section(tool, credential_header) + [""] + lines[cut:]) + "\n"
    )


# bidirectional controls and zero-width characters: text that reads one way and is another
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def _clean(text: str) -> str:
    """A description for SKILL.md's frontmatter: one line, no invisible or direction-changing
    characters, no `---` (the Agent Skills validator reads it as the end of the frontmatter)."""
    text = _INVISIBLE.sub("", " ".join(text.split()))
    return re.sub(r"-{3,}", "—", text)


def _without_frontmatter(body: str) -> str:
    if body.startswith("---\n"):
        return body.split("\n---", 1)[-1].lstrip("-\n")
    return body


def _for_elsewhere(text: str) -> str:
    """A package file as an agent outside skillpress reads it: files under references/, each
    request spelled out in its file (no tool builds it there), the credential the host's to add."""
    text = _INVISIBLE.sub("", text)
    for kind in ("name", "category", "section"):
        text = text.replace(f"(<{kind}>.md{BESIDE}", f"(references/<{kind}>.md)")
    text = text.replace(
        CALL_BY_NAME,
        'each one\'s file spells out its request under "The call", and tools.json types its'
        " arguments.",
    )
    text = text.replace(CREDENTIAL_ATTACHED, "The credential is the host's to attach")
    return text.replace("(call it by that name; the request is built for you)", "(tools.json)")


def _step_lines(skill: Skill, steps: Any, depth: int) -> list[str]:
    pad = "   " * depth
    lines = []
    for n, step in enumerate(steps, 1):
        head = f"{pad}{n}. `{step.id}`: " if step.id else f"{pad}{n}. "
        if step.kind == "tool":
            try:
                name = skill.tool(str(step.target)).name
            except UnknownOperation:  # another skill's operation (`slug.operation`): as written
                name = str(step.target)
            said = f"call `{name}` with `{json.dumps(step.args, ensure_ascii=False)}`"
            if step.save_as:
                said += f"; keep its answer as `{step.save_as}`"
            if step.on_failure:
                said += f"; if it fails, go on from step `{step.on_failure}`"
            elif step.on_error:
                said += f"; if it fails, stop: {step.on_error}"
            lines.append(head + said + ".")
        elif step.kind == "workflow":
            lines.append(head + f"run the workflow `{step.target}` with `{json.dumps(step.args)}`.")
        elif step.kind == "if":
            lines.append(head + f"if `{step.condition}`:")
            lines += _step_lines(skill, step.then, depth + 1)
            if step.otherwise:
                lines.append(f"{pad}   otherwise:")
                lines += _step_lines(skill, step.otherwise, depth + 1)
        elif step.kind == "return":
            lines.append(head + f"answer `{json.dumps(step.value, ensure_ascii=False)}` and stop.")
        else:
            lines.append(head + f"stop, saying: {step.value}")
    return lines


def _workflow_lines(skill: Skill, files: Mapping[str, bytes]) -> list[str]:
    """The skill's workflows as procedures over the tools of tools.json (`{{name}}` is a
    parameter's value, `{{saved.field}}` a field of an answer kept); none when it has none."""
    flows = loadable_workflows(files, skill)
    if not flows:
        return []
    lines = [
        "## Workflows",
        "",
        "Procedures over the tools below. `{{name}}` is a parameter's value, `{{kept.field}}` a"
        " field of an answer kept by an earlier step; each call follows the tool rules.",
    ]
    for name, wf in sorted(flows.items()):
        props = wf.parameters.get("properties") or {}
        required = set(wf.parameters.get("required") or [])
        takes = [
            f"`{p}`"
            + (" (required)" if p in required else "")
            + (
                f" (default {json.dumps(v['default'])})"
                if isinstance(v, dict) and "default" in v
                else ""
            )
            for p, v in sorted(props.items())
        ]
        lines += ["", f"### {name} ({wf.execution})", ""]
        if wf.description:
            lines.append(_INVISIBLE.sub("", wf.description.strip()))
        lines.append("Parameters: " + (", ".join(takes) if takes else "none") + ".")
        if wf.execution == "hardened":
            lines += _step_lines(skill, wf.steps, 0)
        elif wf.execution == "guided" and wf.tool:
            always = f"; always send `{json.dumps(wf.defaults)}`" if wf.defaults else ""
            lines.append(f"Call `{skill.tool(wf.tool).name}` with the user's values{always}.")
        elif wf.procedure:
            lines.append(_INVISIBLE.sub("", wf.procedure.strip()))
    return [_INVISIBLE.sub("", ln) for ln in lines] + [""]


def agent_skills_folder(skill: Skill, files: Mapping[str, bytes]) -> dict[str, bytes]:
    """SKILL.md, tools.json and references/* for an Agent Skills runtime."""
    contract = tool_contract(skill, files)
    described = Manifest.from_json(files["skill.json"]).description if "skill.json" in files else ""
    body = _for_elsewhere(
        _without_frontmatter(files.get("body.md", b"").decode("utf-8", "replace"))
    )
    description = _clean(described or skill.title or skill.slug)[:1000] or skill.slug
    front = [
        "---",
        f"name: {agent_skill_name(skill.slug)}",
        f"description: {json.dumps(description, ensure_ascii=False)}",
        "metadata:",
        f"  {META_SLUG}: {json.dumps(skill.slug)}",
    ]
    if skill.auth is not None:  # so the folder loads back as the same skill (SkillHost, verify)
        front += [
            f"  {META_AUTH_HEADER}: {json.dumps(skill.auth.header)}",
            f"  {META_AUTH_KIND}: {json.dumps(skill.auth.kind)}",
        ]
        if skill.auth.env:
            front.append(f"  {META_AUTH_ENV}: {json.dumps(skill.auth.env)}")
        others = {
            str(t.declaration.credential): t.auth
            for t in skill.tools
            if t.auth is not None and t.declaration.credential
        }
        more = auth_more(skill.auth, others)
        if more is not None:
            front.append(f"  {META_AUTH_MORE}: {json.dumps(more)}")
    front += ["---", ""]
    flows = _workflow_lines(skill, files)
    skill_md = (
        "\n".join(front)
        + body.rstrip("\n")
        + "\n\n"
        + ("\n".join(flows) + "\n" if flows else "")
        + "\n".join(_rule_lines(contract))
        + "\n"
    )
    out = {
        "SKILL.md": skill_md.encode(),
        "tools.json": (json.dumps(contract, indent=2, ensure_ascii=False) + "\n").encode(),
    }
    by_file = {t.declaration.file: t for t in skill.tools}
    header = skill.auth.header if skill.auth else None
    if "types.json" in files:  # what the operation files' schemas refer to
        out["references/types.json"] = files["types.json"]
    if any("workflow" in t for t in contract):  # what its workflow tools run
        out["references/workflows.yaml"] = files["workflows.yaml"]
    for path, data in files.items():
        if not path.endswith(".md") or path == "body.md":
            continue
        text = _for_elsewhere(data.decode("utf-8", "replace"))
        if path in by_file:
            text = _with_call(text, by_file[path], header)
        out[f"references/{path}"] = text.encode()
    return dict(sorted(out.items()))


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
