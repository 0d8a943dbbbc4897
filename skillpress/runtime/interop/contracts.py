"""Skills outside skillpress: an Agent Skills folder and a tool contract (`tools.json`); the check
that the two say the same thing is `contract_check`.

The folder carries `SKILL.md` (name and description frontmatter, the body as its text, a Tool
Use Rules section) and the operation and category files under `references/`, each with its
"The call" section written back from the declaration, since an agent elsewhere has no tool to
build the request for it. `tools.json` types each tool read or write; a write tool requires
confirmation and carries `user_confirmed`; a tool with identity fields is idempotent and
carries `idempotency_key`. Pure: files in, files out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from skillpress.errors import Permanent
from skillpress.format.manifest import Manifest
from skillpress.format.wording import BESIDE, CALL_BY_NAME, CREDENTIAL_ATTACHED
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
    Skill,
    Tool,
    UnknownOperation,
    with_confirmation,
)
from skillpress.runtime.workflows.load import loadable_workflows
from skillpress.runtime.workflows.model import walk

__all__ = [
    "ContractError",
    "agent_skill_name",
    "agent_skills_folder",
    "tool_contract",
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
            if step.status_as:
                said += f"; keep its status as `{step.status_as}`"
            for name, header in step.headers_as:
                said += f"; keep its `{header}` header as `{name}`"
            if step.on_failure:
                said += f"; if it fails, go on from step `{step.on_failure}`"
            elif step.on_error:
                said += f"; if it fails, stop: {step.on_error}"
            lines.append(head + said + ".")
        elif step.kind == "workflow":
            lines.append(head + f"run the workflow `{step.target}` with `{json.dumps(step.args)}`.")
        elif step.kind == "if":
            lines.append(head + f"if {' and '.join(t.said() for t in step.tests)}:")
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
