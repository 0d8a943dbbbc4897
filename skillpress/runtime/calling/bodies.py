"""A request's body from the arguments that go in it: JSON, a form, multipart parts with their
files, or a raw file or text; what a dry run shows of it."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skillpress.format.declaration import (
    Declaration,
)
from skillpress.runtime.calling.request import CallRefused, FileReader
from skillpress.runtime.calling.wire import same_name, scalar_text, styled_pairs


@dataclass(frozen=True)
class _File:
    data: bytes
    filename: str
    content_type: str

    def shown(self) -> dict[str, Any]:
        return {"file": self.filename, "bytes": len(self.data), "content_type": self.content_type}


def _json_body(op: str, value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )
    except (ValueError, UnicodeEncodeError) as exc:
        raise CallRefused(op, f"the body cannot be written as JSON: {exc}") from None


def _file(op: str, name: str, value: Any, reader: FileReader | None) -> _File:
    """A file argument's bytes: the content given (base64), or the local file it names."""
    if not isinstance(value, dict):
        raise CallRefused(op, f"argument {name} is a file: give {{path}} or {{content_base64}}")
    given = [k for k in ("path", "content_base64") if k in value]
    if len(given) != 1:
        raise CallRefused(op, f"argument {name}: give exactly one of path or content_base64")
    if "content_base64" in value:
        try:
            data = base64.b64decode(str(value["content_base64"]), validate=True)
        except (binascii.Error, ValueError):
            raise CallRefused(op, f"argument {name}: content_base64 is not base64") from None
        filename = str(value.get("filename") or name)
    else:
        if reader is None:
            raise CallRefused(
                op,
                f"argument {name}: no local file may be read here; give content_base64 instead",
            )
        try:
            data, own = reader(str(value["path"]))
        except ValueError as exc:
            raise CallRefused(op, f"argument {name}: {exc}") from None
        filename = str(value.get("filename") or own)
    content_type = str(
        value.get("content_type") or mimetypes.guess_type(filename)[0] or "application/octet-stream"
    )
    if any(c in filename + content_type for c in "\r\n\x00"):
        raise CallRefused(op, f"argument {name}: filename and content_type are one line each")
    return _File(data, filename, content_type)


def _part_name(text: str) -> str:
    """A name in a Content-Disposition header, escaped as HTML's form encoding does."""
    return text.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def _multipart(
    op: str, decl: Declaration, fields: dict[str, Any], reader: FileReader | None
) -> tuple[bytes, str, dict[str, Any]]:
    """A multipart/form-data body: (its bytes, its Content-Type, the parts as shown). The boundary
    is made from the content, so the same call is the same bytes."""
    parts: list[tuple[bytes, bytes]] = []  # (the part's headers, its content)
    shown: dict[str, Any] = {}
    for name, value in fields.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if item is None:  # no value: no part, as a form body leaves the pair out
                continue
            disposition = f'form-data; name="{_part_name(decl.wire_name(name))}"'
            if name in decl.files:
                got = _file(op, name, item, reader)
                head = (
                    f"Content-Disposition: {disposition};"
                    f' filename="{_part_name(got.filename)}"\r\n'
                    f"Content-Type: {got.content_type}\r\n"
                )
                parts.append((head.encode("utf-8"), got.data))
                shown.setdefault(name, []).append(got.shown())
            elif isinstance(item, (dict, list)):
                text = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
                head = f"Content-Disposition: {disposition}\r\nContent-Type: application/json\r\n"
                parts.append((head.encode("utf-8"), text.encode("utf-8")))
                shown.setdefault(name, []).append(item)
            else:
                parts.append(
                    (f"Content-Disposition: {disposition}\r\n".encode(), scalar_text(item).encode())
                )
                shown.setdefault(name, []).append(item)
    digest = hashlib.sha256(b"".join(h + c for h, c in parts)).hexdigest()
    boundary = f"skillpress-{digest[:32]}"
    while any(boundary.encode() in c for _, c in parts):
        digest = hashlib.sha256(digest.encode()).hexdigest()
        boundary = f"skillpress-{digest[:32]}"
    body = b"".join(
        b"--" + boundary.encode() + b"\r\n" + head + b"\r\n" + content + b"\r\n"
        for head, content in parts
    )
    body += b"--" + boundary.encode() + b"--\r\n"
    flat = {
        k: v[0] if len(v) == 1 and not isinstance(fields[k], list) else v for k, v in shown.items()
    }
    return body, f"multipart/form-data; boundary={boundary}", flat


def request_body(
    op: str, decl: Declaration, fields: dict[str, Any], files: FileReader | None
) -> tuple[bytes | None, str | None, Any]:
    """The request's body from the arguments that go in it: (its bytes, its Content-Type, what
    a dry run shows of it); none when nothing is sent."""
    if decl.is_multipart:
        return _multipart(op, decl, fields, files)
    if not decl.is_form and not decl.is_json:  # a raw body: a file, or text
        whole = fields.get(decl.body_arg or "")
        if whole is None:
            return None, None, None
        if decl.body_arg in decl.files:
            got = _file(op, str(decl.body_arg), whole, files)
            return got.data, decl.content_type, got.shown()
        return scalar_text(whole).encode("utf-8"), decl.content_type, None
    if decl.is_form:
        wire: Callable[[str], str] = decl.wire_name
        if decl.body_arg is not None:  # the form's fields, under their own argument
            whole = fields.get(decl.body_arg)
            fields = dict(whole) if isinstance(whole, dict) else {}
            wire = same_name  # its fields' own names
        if not fields and decl.method not in ("POST", "PUT", "PATCH"):
            return None, None, None
        form = "&".join(
            pair
            for name, value in fields.items()
            for pair in styled_pairs(op, wire(name), value, decl.style_of(name))
        )
        return form.encode("ascii"), decl.content_type, None
    if decl.body_arg is not None:
        if decl.body_arg not in fields:
            return None, None, None
        return _json_body(op, fields[decl.body_arg]), decl.content_type, None
    if fields or decl.method in ("POST", "PUT", "PATCH"):
        wired = {decl.wire_name(k): v for k, v in fields.items()}
        return _json_body(op, wired), decl.content_type, None
    return None, None, None
