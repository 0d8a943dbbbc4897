"""What an MCP server of skills serves: the skills by key (each slug once, no two tools of one
name), what each client loaded, a version's workflows read once, and the instructions that list
them (`server` answers the tool calls over it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import mcp.types as types

from skillpress.mcp.tools import direct_tools, serves_directly
from skillpress.runtime.calling.calls import Gatekeeper
from skillpress.runtime.calling.credential import Credential
from skillpress.runtime.calling.execute import CallLimits
from skillpress.runtime.package.model import PackageError, Skill, Tool, UnknownOperation
from skillpress.runtime.package.skill import tool_clash, tool_names
from skillpress.runtime.workflows.model_runs import Chat
from skillpress.runtime.workflows.run import Workflow
from skillpress.runtime.workflows.run_log import RunJournal

__all__ = ["HOW_TO", "WORKFLOWS", "Catalog", "Found", "Loaded", "index_of", "workflow_list"]

Loaded = tuple[Skill, Mapping[str, bytes], str | None]  # a skill, its files, its version
# a workflow a tool name runs, with the workflows of its skill (the steps it runs may name them)
Found = tuple[Mapping[str, Workflow], Workflow]

WORKFLOWS = "workflows.yaml"
# this server's own verbs, before the body (which names no face's tools)
HOW_TO = (
    "Over this server: read a file the skill names with read_skill_file (body.md, a category's"
    " file, an operation's <name>.md); call an operation with call_operation, or load it as a"
    " tool of its own with load_tools; describe_operation shows its arguments. A result with"
    " `next` has another page: call again with `next.arguments`, or with call_operation's"
    " `page_url` set to `next.page_url`."
)


def _loadable(skill: Skill, files: Mapping[str, bytes]) -> Mapping[str, Workflow]:
    from skillpress.runtime.workflows.load import loadable_workflows

    return loadable_workflows(files, skill)


def workflow_list(skill: Skill, files: Mapping[str, bytes]) -> str:
    """The skill's workflows as the instructions list them for `skill_run` ("" when none, or
    when its workflows do not load: skill_run then says so)."""
    from skillpress.runtime.workflows.load import loadable_workflows

    flows = loadable_workflows(files, skill)
    if not flows:
        return ""
    lines = [f"\nWorkflows of {skill.slug} (run one with skill_run):"]
    for name, wf in sorted(flows.items()):
        first = wf.description.splitlines()[0] if wf.description else ""
        required = ", ".join(wf.parameters.get("required") or []) or "nothing required"
        lines.append(f"- `{name}` ({wf.execution}; takes {required}): {first}".rstrip())
    return "\n".join(lines) + "\n"


# the index of a server of several skills, in tokens (estimated from above): with the fixed
# tools, under what one skill's first answer costs (2,000), however many skills it serves
INDEX_TOKENS = 1_400


def index_of(skills: Mapping[str, Loaded], budget: int = INDEX_TOKENS) -> str:
    """The instructions of a server of several skills: each skill's name and what it is for,
    and where its body is read (bodies are read on demand, like every other file). Held to
    `budget` tokens: at 184 skills each with its line and workflows it was 14,500, so a larger
    registry is said tighter (titles only, then the slugs, then as many slugs as fit and how
    many more)."""
    from skillpress.format.token_estimate import estimate_tokens

    head = (
        f"{len(skills)} skills. Read a skill's body before its first use:"
        " read_skill_file with its `skill` and path `body.md`; every tool that names an operation"
        " or a file takes the skill it belongs to. " + HOW_TO + "\n\n"
    )
    ordered = sorted(skills.items())
    slugs_only = ", ".join(f"`{slug}`" for slug, _ in ordered)
    if estimate_tokens(head + slugs_only) > budget:  # not even the slugs fit: no body is read
        return head + _some_slugs([slug for slug, _ in ordered], estimate_tokens(head), budget)
    described = []
    for slug, (skill, files, _) in ordered:
        body = files.get("body.md", b"").decode("utf-8", "replace").splitlines()
        title = next((ln[2:].strip() for ln in body if ln.startswith("# ")), slug)
        about = next((ln.strip() for ln in body[1:] if ln.strip() and not ln.startswith("#")), "")
        described.append((slug, title, about[:160], len(skill.operations)))
    full = "\n".join(f"- `{s}` — {t}: {a} ({n} operations)" for s, t, a, n in described)
    if estimate_tokens(head + full) <= budget:  # the workflows are read only when lines fit
        flows = "".join(workflow_list(skill, files) for _, (skill, files, _) in ordered)
        if estimate_tokens(head + full + flows) <= budget:
            return head + full + "\n" + flows
    for text in (
        "\n".join(f"- `{s}` — {t} ({n})" for s, t, _, n in described)
        + "\n(each skill's body lists its workflows)\n",
        "Skills (each one's body says what it is for and lists its workflows): "
        + ", ".join(f"`{s}`" for s, *_ in described)
        + ".\n",
    ):
        if estimate_tokens(head + text) <= budget:
            return head + text
    return head + _some_slugs([s for s, *_ in described], estimate_tokens(head), budget)


def _some_slugs(slugs: list[str], spent: int, budget: int) -> str:
    """As many slugs as fit in what is left of `budget` (each one's cost added), and how many
    more, by the letters they begin with."""
    from skillpress.format.token_estimate import estimate_tokens

    named: list[str] = []
    spent += 60  # the sentence that ends the list
    for slug in slugs:
        spent += estimate_tokens(f", `{slug}`")
        if spent > budget:
            break
        named.append(f"`{slug}`")
    more = len(slugs) - len(named)
    return (
        "Skills (each one's body says what it is for): "
        + ", ".join(named)
        + f", and {more} more, whose slugs begin with"
        + f" {', '.join(sorted({s[:1] for s in slugs[len(named) :]}))}"
        + " (ask the person which one; read_skill_file reads any by its slug).\n"
    )


NAMED_IN_A_REFUSAL = 20  # slugs a refusal lists; more are said as a count and the nearest


def _one_of(given: str, served: Any) -> str:
    """The skills a call could have named: every one when few are served, else the count and
    the slugs nearest what was given (a refusal at 10,000 skills is not 10,000 slugs long)."""
    import difflib

    slugs = sorted(served)
    if len(slugs) <= NAMED_IN_A_REFUSAL:
        return f"one of {', '.join(slugs)}"
    near = difflib.get_close_matches(given, slugs, n=5, cutoff=0.5) if given else []
    nearest = f" (nearest: {', '.join(near)})" if near else ""
    return f"one of the {len(slugs)} skills the instructions name{nearest}"


class Catalog:
    """The MCP server for a set of skills by slug (`several`: the fixed tools take a `skill`).
    `refresh` gives the skills anew when one changed (None when none did): skills it names are
    replaced, so a publication is what the next request sees. `credentials` and `gatekeepers`
    give a skill's credential and approvals by its slug (a skill published later included).
    `sandboxed` (skills the operator did not publish): a workflow's steps that write are not sent.
    `model` gives the chat function guided and draft workflows run with (None: no model).
    `runs` keeps each workflow run as a record (None: not kept, and a waiting run cannot resume)."""

    def __init__(
        self,
        skills: Mapping[str, Loaded],
        *,
        eager: bool,
        deferred: bool = False,
        credentials: Callable[[str, Skill], Credential | None] | None,
        limits: CallLimits | None,
        gatekeepers: Callable[[str], Gatekeeper] | None,
        refresh: Callable[[], Mapping[str, Loaded] | None] | None,
        several: bool,
        sandboxed: bool,
        model: Callable[[], Chat | None] | None,
        runs: RunJournal | None,
    ) -> None:
        self.eager, self.credentials, self.gatekeepers = eager, credentials, gatekeepers
        self.deferred = deferred
        self.direct_for: tuple[object, list[str] | None] | None = None  # (files, its answer)
        self.refresh, self.several, self.sandboxed = refresh, several, sandboxed
        self.model, self.runs = model, runs
        self.limits = limits or CallLimits()
        self.state: dict[str, Loaded] = {}
        self.left_out: dict[str, str] = {}  # a key not served, and why
        # What a client loaded is its own where the transport says who the client is (a
        # streamable-HTTP session id); over stdio the process serves one client. mcp 2.x makes a
        # session per request. Each is (the skill's key, the tool's name): a call goes to the
        # skill it was loaded from.
        self.loaded_by_client: dict[str, list[tuple[str, str]]] = {}
        self.broken: dict[tuple[str, str], str] = {}  # a tool that does not load, and why
        self.read_flows: dict[
            str, tuple[Mapping[str, bytes], Mapping[str, Workflow]]
        ] = {}  # by slug
        self.key_of_slug: dict[str, str] = {}  # a served skill's slug → its key
        self.owner_of: dict[str, str] = {}  # a tool name → the key of the skill offering it
        self.flow_names: dict[str, list[str]] = {}  # a key → its workflows' tool names
        self.take(skills)
        self.slugs = sorted(self.state)

    def take(self, fresh: Mapping[str, Loaded]) -> None:
        """Serve `fresh`, each skill once: a second folder of a slug already served would give
        its tools the same names, so a call could reach the wrong skill's gates; it is left out,
        as is one whose tool names clash with a served skill's (`tool_clash` says which). Each
        skill is checked against the names already served, so serving 10,000 costs 10,000
        checks, not 10,000 times every skill."""
        for key, loaded in sorted(fresh.items()):
            sk, files, _ = loaded
            other = self.key_of_slug.get(sk.slug)
            if other is not None and other != key:
                self.left_out[key] = f"{key} is skill {sk.slug}, which {other} serves already"
                continue
            try:
                flows = (
                    [wf.tool_name for wf in _loadable(sk, files).values()]
                    if WORKFLOWS in files
                    else []
                )
                names = {name for name, _ in tool_names(sk, flows)}
            except PackageError as exc:  # a package that does not list: not served
                self.left_out[key] = f"{key} does not load ({exc})"
                continue
            rivals = {self.owner_of[n] for n in names if self.owner_of.get(n, key) != key}
            clash = tool_clash(
                {k: self.state[k][0] for k in rivals} | {key: sk},
                {k: self.flow_names[k] for k in rivals} | {key: flows},
            )
            if clash is not None:
                self.left_out[key] = f"{key} is not served: {clash}"
                continue
            self._serve(key, loaded, flows, names)

    def _serve(self, key: str, loaded: Loaded, flows: list[str], names: set[str]) -> None:
        if key in self.state:  # a new version of a skill served: its old names go
            old = self.state[key][0].slug
            if self.key_of_slug.get(old) == key:
                del self.key_of_slug[old]
            for name in self.flow_names.pop(key, []) + [
                n for n, k in self.owner_of.items() if k == key
            ]:
                self.owner_of.pop(name, None)
        self.state[key] = loaded
        self.key_of_slug[loaded[0].slug] = key
        self.flow_names[key] = flows
        self.owner_of.update(dict.fromkeys(names, key))

    async def current(self) -> dict[str, Loaded]:
        if self.refresh is not None:  # a stat, a readlink or a query, off the event loop
            fresh = await asyncio.to_thread(self.refresh)
            if fresh:
                self.take(fresh)
        return self.state

    def versioned(self, slug: str, value: Any) -> Any:
        version = self.state[slug][2] if slug in self.state else None
        if isinstance(value, dict) and (version or self.several):
            return {
                **({"skill": slug} if self.several else {}),
                **({"version": version} if version else {}),
                **value,
            }
        return value

    def direct(self) -> list[str] | None:
        """The fixed tools listed where the one skill served is served directly (its
        operations listed as tools up front: `serves_directly`), or None; never for several
        skills, nor with `eager` (every tool and every fixed one) or `deferred` asked for."""
        if self.several or self.eager or self.deferred:
            return None
        sk, files, _ = self.state[self.slugs[0]]
        if self.direct_for is None or self.direct_for[0] is not files:
            self.direct_for = (files, direct_tools(sk) if serves_directly(sk) else None)
        return self.direct_for[1]

    def loaded_for(self, ctx: Any) -> list[tuple[str, str]]:
        connection = getattr(getattr(ctx, "session", None), "_connection", None)
        key = getattr(connection, "session_id", None) or "-"
        if key not in self.loaded_by_client:
            # eager or direct: every tool by name, from the index (each is built when it is listed)
            self.loaded_by_client[key] = (
                [
                    (k, e.tool)
                    for k, (sk, _, _) in self.state.items()
                    for e in sk.operations
                    if e.tool
                ]
                + [  # and its workflows, each a tool of its own
                    (k, wf.tool_name)
                    for k, (sk, files, _) in self.state.items()
                    if WORKFLOWS in files
                    for wf in _loadable(sk, files).values()
                    if self.runnable(wf)
                ]
                if self.eager or self.direct() is not None
                else []
            )
        return self.loaded_by_client[key]

    def owner(self, key: str, tool_name: str) -> tuple[str, Tool] | None:
        if key not in self.state:
            return None
        try:
            return key, self.state[key][0].tool(tool_name)
        except UnknownOperation:
            return None  # gone in this version
        except PackageError as exc:  # one tool that does not load never takes the server down
            self.broken[(key, tool_name)] = str(exc)
            return None

    def loaded_tools(self, ctx: Any) -> list[tuple[str, Tool]]:
        return [
            found
            for k, n in self.loaded_for(ctx)
            if self.flow_of(k, n) is None and (found := self.owner(k, n)) is not None
        ]

    def runnable(self, wf: Workflow) -> bool:
        """Whether this server runs `wf`: a hardened one always, a model's with a model."""
        return bool(
            wf.execution == "hardened" or (self.model is not None and self.model() is not None)
        )

    def flow_of(self, key: str, tool_name: str) -> Found | None:
        """The (workflows, workflow) a loaded tool name runs, or None (an operation's name)."""
        if key not in self.state:
            return None
        sk, files, _ = self.state[key]
        if WORKFLOWS not in files:
            return None
        found = self.workflow(sk, files, tool_name)
        return found if found is not None and found[1].tool_name == tool_name else None

    def loaded_flows(self, ctx: Any) -> list[types.Tool]:
        out = []
        for k, n in self.loaded_for(ctx):
            found = self.flow_of(k, n)
            if found is not None and self.runnable(found[1]):
                wf = found[1]
                out.append(
                    types.Tool(
                        name=wf.tool_name,
                        description=wf.description or wf.name,
                        input_schema=wf.to_tool_schema(),
                    )
                )
        return out

    def chosen(self, args: dict[str, Any]) -> tuple[str, Skill, Mapping[str, bytes]] | str:
        """The skill a fixed tool's call names (the only one, when one is served), or why not;
        a skill is named by its slug or the folder it is served from."""
        given = str(args.get("skill", "")) if self.several else self.slugs[0]
        key = (
            given
            if given in self.state
            else next((k for k, (sk, _, _) in self.state.items() if sk.slug == given), None)
        )
        if key is None:
            why = f" ({self.left_out[given]})" if given in self.left_out else ""
            some = _one_of(given, self.state)
            return (
                f"missing `skill`: {some}" if not given else f"no skill {given!r} here{why}: {some}"
            )
        sk, files, _ = self.state[key]
        return key, sk, files

    def workflow(self, skill: Skill, files: Mapping[str, bytes], wanted: str) -> Found | None:
        """(the skill's workflows, the one named `wanted`), or None when there is none; a
        version's workflows are read once (a new version's files are another mapping)."""
        held = self.read_flows.get(skill.slug)
        if held is None or held[0] is not files:
            held = self.read_flows[skill.slug] = (files, _loadable(skill, files))
        flows = held[1]
        flow = next((w for w in flows.values() if wanted in (w.name, w.tool_name)), None)
        return (flows, flow) if flow is not None else None
