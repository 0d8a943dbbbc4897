"""How a list operation pages, as a package declares it (`operation.paging`): its kind, the
argument the next value goes in, where the answer says it. The derivation finds it
(`derive/paging.py`); the runtime turns it into a result's `next` (`runtime/calling/paging.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "Paging"]

KINDS = ("after_last", "cursor", "next_url", "link", "offset", "page")


@dataclass(frozen=True)
class Paging:
    """One operation's paging: its kind, the argument the next value goes in (`param`), where
    the answer says it (`field`, a path of names), the answer's list (`items`, () for the answer
    itself), the page-size argument (`size`), and for `after_last` the flag that says more
    follow (`more`) and the item's key."""

    kind: str
    param: str | None = None
    field: tuple[str, ...] = ()
    items: tuple[str, ...] | None = None
    size: str | None = None
    more: tuple[str, ...] = ()
    key: str = "id"
    # an offset list that also takes a page number: a call made by page continues by page
    page: str | None = None
    page_size: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.param:
            out["param"] = self.param
        if self.field:
            out["field"] = list(self.field)
        if self.items is not None:
            out["items"] = list(self.items)
        if self.size:
            out["size"] = self.size
        if self.more:
            out["more"] = list(self.more)
            out["key"] = self.key
        if self.page:
            out["page"] = self.page
        if self.page_size:
            out["page_size"] = self.page_size
        return out

    def renamed(self, names: Mapping[str, str]) -> Paging | None:
        """The same paging with its arguments under the names the tool gives them (`names`:
        the name the API reads → the argument), or None when its argument is not one."""
        param = names.get(self.param) if self.param else None
        if self.param and param is None:
            return None
        size = names.get(self.size) if self.size else None
        page = names.get(self.page) if self.page else None
        page_size = names.get(self.page_size) if page and self.page_size else None
        return Paging(
            self.kind, param, self.field, self.items, size, self.more, self.key, page, page_size
        )

    def by_page(self) -> Paging:
        """The page-number paging of an offset list that takes both (a call made by page)."""
        return Paging("page", self.page, items=self.items, size=self.page_size)

    def line(self) -> str:
        """What the operation's file says of it, in one line."""
        where = ".".join(self.field)
        said = {
            "after_last": f"the next page starts after the last item (`{self.param}`)",
            "cursor": f"the answer's `{where}` goes back in `{self.param}`",
            "next_url": f"the answer's `{where}` is the next page's URL",
            "link": "the answer's `Link` header names the next page",
            "offset": f"`{self.param}` moves past the items already read"
            + (
                f" (or `{self.page}` counts the pages, for a call made by page)"
                if self.page
                else ""
            ),
            "page": f"`{self.param}` counts the pages",
        }[self.kind]
        return (
            f"Pages: {said}; a result carries `next`, the arguments of the next page (or its"
            " URL), when there is one."
        )
