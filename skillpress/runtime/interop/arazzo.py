"""Workflows as OpenAPI Initiative Arazzo 1.0.1 documents, and back, for the subset that maps:
the terms both directions share (`arazzo_out` writes a document, `arazzo_in` reads one).

A tool step is an Arazzo step by `operationId`, its arguments `parameters` (path, query) and a
`requestBody` payload, `successCriteria` a status below 400, `outputs` the saved answer
(`$response.body`); a workflow step is a step by `workflowId`. Templates are runtime expressions:
`$inputs.name`, `$steps.<id>.outputs.<name>#/json/pointer`, embedded as `{$…}` in strings. An
`if` is the `onSuccess` of the step before it: a `goto` with `jsonpath` criteria to its then
steps, a `goto` without criteria to its else steps; each branch jumps back with a `goto` (or
`end`s). `return` is the workflow's `outputs` and an `end`; `fail` an `end` carrying
`x-skillpress-fail`; `on_error` rides as `x-skillpress-on-error`. Anything else is refused on
import, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping

from skillpress.runtime.package.model import Skill
from skillpress.runtime.workflows.run import WorkflowRefused

__all__ = ["ARAZZO_VERSION", "OK", "ArazzoRefused", "Locator"]

ARAZZO_VERSION = "1.0.1"

OK = "$statusCode < 400"


class ArazzoRefused(WorkflowRefused):
    """An Arazzo document (or a workflow) outside the subset that maps; the message names it."""


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class Locator:
    """How an export names each operation: the spec's `operationId` where the package knows it
    (`skill.json`), else an `operationPath` into the source description by method and path."""

    def __init__(self, skill: Skill, files: Mapping[str, bytes], source: str) -> None:
        self.source = source
        self.known: dict[str, tuple[str | None, str, str]] = {
            e.name: (None, e.method, e.path) for e in skill.operations
        }
        if "skill.json" in files:
            from skillpress.format.manifest import Manifest, ManifestError

            try:
                manifest = Manifest.from_json(files["skill.json"])
            except ManifestError:
                return
            for e in manifest.operations:
                self.known[e.name] = (e.operation_id, e.method, e.path)

    def locate(self, operation: str) -> dict[str, str]:
        op_id, method, path = self.known.get(operation, (None, "", ""))
        if op_id:
            return {"operationId": op_id}
        pointer = "/paths/" + _escape(path) + "/" + method.lower()
        return {"operationPath": f"{{$sourceDescriptions.{self.source}.url}}#{pointer}"}
