"""What a request does, in the words a person searches with: the verb its method and path make
(list, get, create, add, update, delete, or the action a path names) and the things its path
names, whose they are (`my` for `/me`). Clients search tools by name and description; a spec's
summary is often a generator's ("Create new navigation property ref to members for groups",
"Get open extension." for GET /me/messages), and its verbs are not a person's."""

from __future__ import annotations

import re

__all__ = ["action_phrase"]

_VERBS = {"PUT": "set", "PATCH": "update", "DELETE": "delete", "POST": "create"}
# a segment that names an action in the path itself (`microsoft.graph.sendMail`, `…:cancel`)
_ACTION = re.compile(r"^(?:[a-z]+\.)+([A-Za-z]+)\(?\)?$|^.*:([A-Za-z]+)$")
_VERSION = re.compile(r"^v\d[\w.]*$|^api$|^\d[\w.]*$")


def _words(segment: str) -> str:
    """`joinedTeams` → `joined teams`, `pull_requests` → `pull requests`."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", segment)
    return re.sub(r"[_\-.$]+", " ", spaced).strip().lower()


def _one(noun: str) -> str:
    """A plural's singular, for `get` and `create` of one (`messages` → `message`)."""
    last = noun.rsplit(" ", 1)[-1]
    if last.endswith("ies") and len(last) > 4:
        single = last[:-3] + "y"
    elif last.endswith(("sses", "xes", "ches", "shes")):
        single = last[:-2]
    elif last.endswith("s") and not last.endswith("ss") and len(last) > 3:
        single = last[:-1]
    else:
        single = last
    return noun[: len(noun) - len(last)] + single


def action_phrase(method: str, path: str) -> str:
    """`list my messages` for GET /me/messages, `add members to a group` for POST
    /groups/{group-id}/members/$ref, `send mail for me` for POST /me/microsoft.graph.sendMail;
    '' when the path names nothing to act on."""
    segments = [s for s in path.strip("/").split("/") if s and not _VERSION.match(s)]
    literal = [s for s in segments if "{" not in s]
    last = segments[-1] if segments else ""
    action = _ACTION.match(last)
    if action:
        literal = [s for s in literal if s != last]
    elif not literal:
        return ""
    owner = literal[0] if literal else ""
    mine = owner == "me"
    if action:
        things = [s for s in literal if s != "me"]
        said = _words(action.group(1) or action.group(2))
        where = f" {_one(_words(things[-1]))}" if things else ""
        return f"{said}{where}{' for me' if mine else ''}".strip()
    ref = last == "$ref"
    if ref:
        segments, literal = segments[:-1], literal[:-1]
        if not literal:
            return ""
        last = segments[-1]
    named = [s for s in literal if s != "me"]
    if not named:  # `/me` itself
        return "get my profile" if method == "GET" else f"{_VERBS.get(method, '')} my profile"
    thing = _words(named[-1])
    parent = _one(_words(named[-2])) if len(named) > 1 else ""
    of = " my" if mine else ""
    whose = f" of a {parent}" if parent and not mine else ""
    if ref:
        verb = {"POST": "add", "DELETE": "remove", "GET": "list"}.get(method, "set")
        to = " to" if verb == "add" else " of" if verb != "remove" else " from"
        return f"{verb} {thing}{to}{' my' if mine else ' a'} {parent or 'item'}".replace("  ", " ")
    one = "{" in last
    if method == "GET":
        return f"get{of} {_one(thing)}{whose}" if one else f"list{of} {thing}{whose}"
    if method == "POST" and not one:
        return f"create{of} {_one(thing)}{whose}"
    verb = _VERBS.get(method, method.lower())
    return f"{verb}{of} {_one(thing)}{whose}"
