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
    last = segments[-1] if segments else ""
    action = _ACTION.match(last)
    literal = [s for s in segments if "{" not in s and not (action and s == last)]
    mine = bool(literal) and literal[0] == "me"
    if action:
        return _named_action(action.group(1) or action.group(2), literal, mine)
    if not literal:
        return ""
    if last == "$ref":
        return _reference(method, segments[:-1], literal[:-1], mine)
    named = [s for s in literal if s != "me"]
    if not named:  # `/me` itself
        return "get my profile" if method == "GET" else f"{_VERBS.get(method, '')} my profile"
    return _acting(method, "{" in last, named, mine)


def _named_action(action: str, literal: list[str], mine: bool) -> str:
    """`send mail for me`, `cancel project`: the action a path names, on what it names last."""
    things = [s for s in literal if s != "me"]
    where = f" {_one(_words(things[-1]))}" if things else ""
    return f"{_words(action)}{where}{' for me' if mine else ''}".strip()


def _reference(method: str, segments: list[str], literal: list[str], mine: bool) -> str:
    """`add members to a group`: a `$ref` collection's reference added, listed or removed."""
    named = [s for s in literal if s != "me"]
    if not segments or not named:
        return ""
    thing = _words(named[-1])
    parent = _one(_words(named[-2])) if len(named) > 1 else "item"
    verb = {"POST": "add", "DELETE": "remove", "GET": "list"}.get(method, "set")
    to = {"add": "to", "remove": "from"}.get(verb, "of")
    return f"{verb} {thing} {to} {'my' if mine else 'a'} {parent}"


def _acting(method: str, one: bool, named: list[str], mine: bool) -> str:
    """`list pods of a namespace`, `get my event`, `create refund`: the method's verb on what
    the path names last, and whose it is."""
    thing = _words(named[-1])
    parent = _one(_words(named[-2])) if len(named) > 1 else ""
    of = " my" if mine else ""
    whose = f" of a {parent}" if parent and not mine else ""
    if method == "GET":
        return f"get{of} {_one(thing)}{whose}" if one else f"list{of} {thing}{whose}"
    if method == "POST" and not one:
        return f"create{of} {_one(thing)}{whose}"
    return f"{_VERBS.get(method, method.lower())}{of} {_one(thing)}{whose}"
