"""The size rule, as a check (CI runs it through tests/test_sizes.py; `python scripts/check_sizes.py`
prints the same): no module over 500 lines, no function over 80 lines or a cyclomatic complexity
over 25, unless it says why in one line at its top (`# size: <reason>` after a module's
docstring, or at the top of a function's body, or the line just above its `def`) *and* the place
is listed in `scripts/size_exemptions.txt`.

The list is a ratchet: a new `# size:` fails unless its line is added to the list in the same
change, a listed place that no longer needs one fails until its line and its reason go, and the
list may hold at most MAX_EXEMPTIONS places (15, the goal #53 set; lowered as places are split).

Complexity is counted as McCabe does: one, plus one for each `if`/`elif`, loop, `except`, `case`,
conditional expression, comprehension clause, and each extra operand of `and`/`or`; a nested
function is counted on its own.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
MAX_COMPLEXITY = 25
REASON = "# size:"
EXEMPTIONS = ROOT / "scripts" / "size_exemptions.txt"
MAX_EXEMPTIONS = 15  # lowered as places are split: never raised

__all__ = ["Breach", "breaches", "complexity"]


@dataclass(frozen=True)
class Breach:
    where: str  # path:line
    what: str  # "module of 612 lines", "function f: 95 lines, complexity 31"

    def __str__(self) -> str:
        return f"{self.where}: {self.what} (split it, or say why at its top: `{REASON} …`)"


class _Counter(ast.NodeVisitor):
    def __init__(self) -> None:
        self.count = 1

    def generic_visit(self, node: ast.AST) -> None:
        branches = (
            ast.If,
            ast.For,
            ast.AsyncFor,
            ast.While,
            ast.IfExp,
            ast.ExceptHandler,
            ast.match_case,
        )
        if isinstance(node, branches):
            self.count += 1
        elif isinstance(node, ast.comprehension):
            self.count += 1 + len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            self.count += len(node.values) - 1
        super().generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        pass  # counted on its own

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        pass

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.generic_visit(node)


def complexity(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    counter = _Counter()
    for stmt in fn.body:
        counter.visit(stmt)
    return counter.count


def _reasoned(lines: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A `# size:` line just above the `def`, or at the top of the body (before its first
    statement, or just after its docstring)."""
    above = lines[fn.lineno - 2].strip() if fn.lineno >= 2 else ""
    body = fn.body
    first = body[0]
    until = first.lineno - 1
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(body) > 1:
        until = body[1].lineno - 1  # after the docstring
    top = [ln.strip() for ln in lines[fn.lineno - 1 : until]]
    return above.startswith(REASON) or any(ln.startswith(REASON) for ln in top)


def exemptions(path: Path = EXEMPTIONS) -> set[tuple[str, str]]:
    """The places allowed a `# size:` reason: (module path, `<module>` or a function's name)."""
    out: set[tuple[str, str]] = set()
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            where, _, name = line.partition("\t")
            out.add((where.strip(), name.strip()))
    return out


def _listed(allowed: set[tuple[str, str]] | None, shown: Path, name: str) -> bool:
    return allowed is None or (str(shown), name) in allowed


def breaches(paths: list[Path], allowed: set[tuple[str, str]] | None = None) -> list[Breach]:
    """Every place over the rule without a listed reason, every reason at a place the list does
    not name, and every listed place within the rule (`allowed` None: any reason counts)."""
    out: list[Breach] = []
    needed: set[tuple[str, str]] = set()
    for path in paths:
        text = path.read_text()
        lines = text.splitlines()
        shown = path.relative_to(ROOT)
        tree = ast.parse(text)
        head = tree.body[1].lineno if len(tree.body) > 1 else 15  # up to the first statement
        said = any(ln.strip().startswith(REASON) for ln in lines[:head])
        if len(lines) > MAX_MODULE_LINES:
            needed.add((str(shown), "<module>"))
            if not said:
                out.append(Breach(f"{shown}:1", f"module of {len(lines)} lines"))
        if said and not _listed(allowed, shown, "<module>"):
            out.append(Breach(f"{shown}:1", f"a `{REASON}` the exemptions list does not name"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            score = complexity(node)
            over = size > MAX_FUNCTION_LINES or score > MAX_COMPLEXITY
            if over:
                needed.add((str(shown), node.name))
            if _reasoned(lines, node) and not _listed(allowed, shown, node.name):
                out.append(
                    Breach(
                        f"{shown}:{node.lineno}",
                        f"function {node.name}: a `{REASON}` the exemptions list does not name",
                    )
                )
            if over and not _reasoned(lines, node):
                out.append(
                    Breach(
                        f"{shown}:{node.lineno}",
                        f"function {node.name}: {size} lines, complexity {score}",
                    )
                )
    if allowed is not None:
        mine = {str(p.relative_to(ROOT)) for p in paths}
        for where, name in sorted(allowed - needed):
            if where in mine:
                out.append(Breach(f"{where}", f"{name} is within the rule now: drop its exemption"))
        if len(allowed) > MAX_EXEMPTIONS:
            out.append(
                Breach(
                    str(EXEMPTIONS.relative_to(ROOT)),
                    f"{len(allowed)} exemptions, over {MAX_EXEMPTIONS}",
                )
            )
    return out


def sources() -> list[Path]:
    return sorted(
        p
        for folder in ("skillpress",)
        for p in (ROOT / folder).rglob("*.py")
        if "migrations" not in p.parts
    )


if __name__ == "__main__":
    found = breaches(sources(), exemptions())
    for breach in found:
        print(breach)
    print(f"{len(found)} over the size rule")
    sys.exit(1 if found else 0)
