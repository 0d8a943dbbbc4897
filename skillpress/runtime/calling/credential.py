"""The credential a call is sent with: the variable each of its values is read from (the skill's
own, never skillpress's settings), where it goes (a header, the query, a cookie), how a dry run
shows it, and an OAuth 2 token fetched for it."""

from __future__ import annotations

import base64
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from skillpress.errors import Refused
from skillpress.format.credentials import (
    credential_env_refusal,
    default_credential_env,
)
from skillpress.runtime.calling.request import ExecutionFailed
from skillpress.runtime.calling.tokens import Client, TokenFailed, bearer_token
from skillpress.runtime.package.model import AuthHeader


def credential_env(slug: str, auth: AuthHeader | None, given: str | None = None) -> str:
    """The variable a skill's credential is read from: the one a caller names (its runtime's own
    configuration: any variable but skillpress's own settings; Refused otherwise), else the one
    the skill records (chosen when it was imported; the loader holds it to `<SLUG>_…`), else
    `<SLUG>_API_KEY`."""
    if given and (why := credential_env_refusal(given)) is not None:
        raise Refused(f"the credential variable named for {slug}: {why}")
    return given or (auth.env if auth is not None else None) or default_credential_env(slug)


@dataclass(frozen=True)
class Credential:
    """Where the credential comes from: the header it goes in and the variable that holds it;
    for a skill whose scheme has an OAuth 2 client-credentials flow, also the two variables
    holding a client id and secret the token is fetched with when that variable is not set."""

    auth: AuthHeader
    env_var: str
    allow_private_token_url: bool = False  # SKILLPRESS_FETCH_ALLOW_PRIVATE, for the token URL

    def client_vars(self) -> tuple[str, str]:
        """`<SLUG>_CLIENT_ID` and `<SLUG>_CLIENT_SECRET` (from `<SLUG>_API_KEY`, or after the
        variable named instead)."""
        base = self.env_var.removesuffix("_API_KEY")
        return f"{base}_CLIENT_ID", f"{base}_CLIENT_SECRET"

    def client(self, environ: Mapping[str, str]) -> Client | None:
        """The client credentials set in the environment, when the skill can use them."""
        if not self.auth.token_url:
            return None
        id_var, secret_var = self.client_vars()
        client_id = (environ.get(id_var) or "").strip()
        secret = (environ.get(secret_var) or "").strip()
        if not client_id or not secret:
            return None
        return Client(self.auth.token_url, client_id, secret, self.auth.scopes)

    def present(self, environ: Mapping[str, str]) -> bool:
        """Whether every credential can be attached: each variable (the first one's, or a client
        id and secret)."""
        first = bool((environ.get(self.env_var) or "").strip()) or self.client(environ) is not None
        return first and not self.unset_companions(environ)

    def where(self) -> str:
        """The variables the credentials are read from, for a message."""
        said = f"${self.env_var}"
        if self.auth.token_url:
            id_var, secret_var = self.client_vars()
            said += f" (or ${id_var} and ${secret_var})"
        return " and ".join([said, *(f"${self.slot_env(c)}" for c in self.auth.also)])

    def slot_env(self, slot: AuthHeader) -> str:
        """The variable a credential is read from: the first one's `env_var`; one sent beside it,
        its own (recorded at derive), else `<BASE>_<NAME>`."""
        if slot is self.auth:
            return self.env_var
        if slot.env:
            return slot.env
        base = self.env_var.removesuffix("_API_KEY")
        return f"{base}_{''.join(c if c.isalnum() else '_' for c in slot.header).upper()}"

    def unset_companions(self, environ: Mapping[str, str]) -> list[str]:
        """The variables of credentials sent beside the first one that are not set."""
        return [
            self.slot_env(c)
            for c in self.auth.also
            if not (environ.get(self.slot_env(c)) or "").strip()
        ]

    def header_value(
        self, environ: Mapping[str, str], slot: AuthHeader | None = None
    ) -> str | None:
        """A credential's value from its variable (the first one's by default): surrounding
        whitespace (a line end read from a file or `.env`) stripped; a bearer token prefixed;
        basic credentials `user:password` (or a key alone, as the user name with no password, as
        Stripe takes it) encoded as RFC 7617 says."""
        slot = slot or self.auth
        raw = (environ.get(self.slot_env(slot)) or "").strip()
        if not raw:
            return None
        if slot.kind == "bearer" and not raw.lower().startswith("bearer "):
            return f"Bearer {raw}"
        if slot.kind == "basic" and not raw.lower().startswith("basic "):
            pair = raw if ":" in raw else f"{raw}:"
            return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        return raw

    def attach(
        self, headers: dict[str, str], url: str, values: Mapping[int, str]
    ) -> tuple[dict[str, str], str]:
        """`headers` and `url` with each credential that has a value (by its slot's position) where
        the spec puts it: a header, the query, or a cookie."""
        out, target = dict(headers), url
        for i, slot in enumerate(self.auth.slots):
            value = values.get(i)
            if value is None:
                continue
            if slot.where == "query":
                joiner = "&" if urlsplit(target).query else ("" if target.endswith("?") else "?")
                target += joiner + urlencode({slot.header: value})
            elif slot.where == "cookie":
                cookie = f"{slot.header}={quote(value, safe='')}"
                out["Cookie"] = f"{out['Cookie']}; {cookie}" if out.get("Cookie") else cookie
            else:
                out[slot.header] = value
        return out, target

    def placeholder(self) -> dict[str, str]:
        """What a dry run shows in the headers instead of a header credential's value (a query
        or cookie credential is shown where it goes, `show`)."""
        out: dict[str, str] = {}
        for slot in self.auth.slots:
            if slot.where != "header":
                continue
            said = f"<from ${self.slot_env(slot)}>"
            if slot is self.auth and self.auth.token_url:
                id_var, secret_var = self.client_vars()
                said = (
                    f"<from ${self.env_var}, or a token fetched with ${id_var} and ${secret_var}>"
                )
            out[slot.header] = said
        return out

    def show(self, shown: dict[str, Any]) -> dict[str, Any]:
        """A request as a dry run prints it (`PreparedRequest.as_dict`) with every credential as
        the variable it comes from, where it goes: never its value."""
        out = {**shown, "headers": {**shown["headers"], **self.placeholder()}}
        for slot in self.auth.slots:
            said = f"<from ${self.slot_env(slot)}>"
            if slot.where == "query":
                url = str(out["url"])
                out["url"] = url + ("&" if urlsplit(url).query else "?") + f"{slot.header}={said}"
            elif slot.where == "cookie":
                old = out["headers"].get("Cookie")
                out["headers"]["Cookie"] = (
                    f"{old}; {slot.header}={said}" if old else f"{slot.header}={said}"
                )
        return out

    def token(self, client: Client, deadline: float, fresh: bool = False) -> str:
        """`Bearer <token>` fetched with `client` by `deadline` (a `time.monotonic()` moment: the
        call's own, so a token endpoint that drips its answer cannot hold the call past it);
        ExecutionFailed, never sent, when none comes."""
        try:
            token = bearer_token(
                client,
                timeout=min(deadline - time.monotonic(), 20.0),
                allow_private=self.allow_private_token_url,
                fresh=fresh,
            )
        except TokenFailed as exc:
            raise ExecutionFailed(str(exc), sent=False) from None
        return f"Bearer {token}"
