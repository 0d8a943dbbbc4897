"""Reading a large JSON document on two cores: a fast parse here while a forked child reads it as
`load_document` does, whose word is final.

Parsing GitHub's 13 MB with the standard library's parser, every object passed through the hook
that refuses a duplicate key, is a quarter of a derivation. orjson parses it in less than half
that time, but it keeps one of two duplicate keys where `load_document` refuses, and it reads an
integer past 64 bits as a float. So the child (forked first: it holds the bytes already) reads
the document exactly as `load_document` does and says, when it is done, whether it agrees: the
same document, or its refusal in its words, or a value orjson reads otherwise. The caller
derives meanwhile (its prose written out without invisible characters where the text has any,
as `load_document` does: the child's first word, while orjson parses, is whether the bytes may
hold any) and asks before handing the package out (`Aside.agrees`); on anything
but agreement it refuses as the child did, or derives again from the document `load_document`
reads. A child that dies says nothing, which is not agreement.
Forking is only safe in a single-threaded process: only a command line asks for it
(`DeriveOptions.processes`).
"""

from __future__ import annotations

import hashlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillpress.derive.split import Child, in_child
from skillpress.format.errors import SpecRefused
from skillpress.format.load import (
    LoadLimits,
    document_text,
    has_invisible,
    json_pairs,
    load_json,
    may_have_invisible,
    openapi_document,
    visible_prose,
)

__all__ = ["Aside", "read_json_aside"]

MIN_BYTES = 1_000_000  # below this one parse costs less than a fork
_BOM = b"\xef\xbb\xbf"
# the integers orjson reads as integers; past them it reads a float where `json` an int
_LOWEST, _HIGHEST = -(2**63), 2**64 - 1
_AGREES, _DIFFERS, _REFUSED = b"=", b"~", b"!"
_FIRST_WORD = 65  # "?" or "-", then the sha256 in hex
_DROPPED: Any = object()  # an object the child did not keep
_VERSION_KEYS = ("openapi", "swagger")


@dataclass
class Aside:
    """The child reading the document as `load_document` does."""

    child: Child
    sha256: str = ""  # of the bytes read

    def agrees(self) -> bool:
        """Waits for the child's verdict: True when it read the same document; SpecRefused in
        its words when it refused the document; False when it read another (or failed)."""
        succeeded, said = self.child.join()
        if succeeded and said[:1] == _REFUSED:
            raise SpecRefused(said[1:].decode("utf-8", "replace"))
        return succeeded and said == _AGREES

    def abandon(self) -> None:
        """Stop the child: its verdict is not wanted."""
        try:
            os.kill(self.child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.child.join()


def _checked_int(seen: list[int]) -> Callable[[str], int]:
    def read(text: str) -> int:
        value = int(text)
        if not _LOWEST <= value <= _HIGHEST:
            seen.append(value)
        return value

    return read


def _kept_top(pairs: list[tuple[str, Any]]) -> Any:
    """An object as `load_document` reads it (a duplicate key refused in its words), kept only
    where it may be the top level (`openapi_document` reads nothing else): the child holds no
    tree, so its memory is reused from object to object rather than grown page by page."""
    obj = json_pairs(pairs)
    return obj if "openapi" in obj or "swagger" in obj else _DROPPED


def _check(data: bytes, limits: LoadLimits) -> bytes:
    """The child's work: read the document as `load_document` does, and say whether orjson's
    reading is the same."""
    big: list[int] = []
    try:
        doc = load_json(document_text(data, limits), _checked_int(big), _kept_top)
        if doc is _DROPPED:  # a mapping with neither field: refused as any such mapping is
            doc = {}
        elif any(_container(doc.get(key)) for key in _VERSION_KEYS):
            return _DIFFERS  # (its refusal quotes what the child did not keep: let it be read)
        openapi_document(doc)
    except SpecRefused as exc:
        return _REFUSED + str(exc).encode()[:4000]
    return _DIFFERS if big else _AGREES


def _container(value: Any) -> bool:
    return value is _DROPPED or isinstance(value, dict | list)


def read_json_aside(data: bytes, limits: LoadLimits) -> tuple[dict[str, Any], Aside] | None:
    """The document orjson reads, checked as `load_document` checks its top, and the child that
    reads it as `load_document` does; None where this does not pay or cannot be (a small or
    YAML document, no orjson, no fork, a document orjson does not read): read it as usual."""
    body = data[3:] if data.startswith(_BOM) else data
    if not (MIN_BYTES <= len(data) <= limits.max_bytes) or body[:64].lstrip()[:1] != b"{":
        return None
    try:
        import orjson
    except ImportError:
        return None
    if not hasattr(os, "fork"):
        return None
    # the child's first word, while orjson parses here: whether the bytes may hold invisible
    # characters and their sha256 (two passes over the whole document); then it reads them as
    # load_document does
    early, said_early = os.pipe()

    def work() -> bytes:  # (the child's)
        os.close(early)
        may = b"?" if may_have_invisible(body) else b"-"
        os.write(said_early, may + hashlib.sha256(data).hexdigest().encode())  # (atomic: 65 B)
        os.close(said_early)
        return _check(data, limits)

    aside = Aside(in_child(work))
    os.close(said_early)
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        os.close(early)
        aside.abandon()
        return None
    try:
        word = os.read(early, _FIRST_WORD)
    finally:
        os.close(early)
    if len(word) != _FIRST_WORD:  # the child died first: look here
        word = b"?" + hashlib.sha256(data).hexdigest().encode()
    may, aside.sha256 = word[:1] != b"-", word[1:].decode()
    try:
        if may and has_invisible(body.decode("utf-8")):
            doc = visible_prose(doc)  # (what orjson read is UTF-8)
        return openapi_document(doc), aside
    except SpecRefused:
        if aside.agrees():  # a refusal of the child's comes first, as load_document's would
            raise
        return None
