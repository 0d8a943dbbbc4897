"""What the agent host's face (`skillpress.host`: `SkillHost`) is built from: the
runtime's call, run and workflow pieces, through the application layer's door like every face's.
Every call goes through the same translation, checks and gates as `skillpress call`."""

from __future__ import annotations

from skillpress.app.base.package_dir import read_package_dir
from skillpress.app.serving.calling import credential_for
from skillpress.app.serving.followers import folder_stamp
from skillpress.derive.provider_names import original_names
from skillpress.runtime.calls import (
    CallSetup,
    GateClosed,
    Gatekeeper,
    closed_gate,
    place_call,
    placed_step,
    prepare_call,
)
from skillpress.runtime.execute import CallLimits, CallResult
from skillpress.runtime.model_runs import Chat, draft_run, guided_run
from skillpress.runtime.run_log import RunJournal, RunLog, journaled
from skillpress.runtime.skill import (
    PackageError,
    Skill,
    Tool,
    UnknownOperation,
    load_skill,
    shaped_tool,
    tool_clash,
)
from skillpress.runtime.translate import PreparedRequest
from skillpress.runtime.workflows import Run, Workflow, load_workflows, run_workflow

__all__ = [
    "CallLimits",
    "CallResult",
    "CallSetup",
    "Chat",
    "GateClosed",
    "Gatekeeper",
    "PackageError",
    "PreparedRequest",
    "Run",
    "RunJournal",
    "RunLog",
    "Skill",
    "Tool",
    "UnknownOperation",
    "Workflow",
    "closed_gate",
    "credential_for",
    "draft_run",
    "folder_stamp",
    "guided_run",
    "journaled",
    "load_skill",
    "load_workflows",
    "original_names",
    "place_call",
    "placed_step",
    "prepare_call",
    "read_package_dir",
    "run_workflow",
    "shaped_tool",
    "tool_clash",
]
