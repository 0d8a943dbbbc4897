"""A small real HTTP server speaking the chat-completions protocol, for the model path's tests.

It answers from the operation lines it is sent (grouping by the noun after the verb), or, as the
test scripts it, with malformed answers, a delay past the client's timeout, or an error status.
Every request body is kept so a test can check what the model was shown.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VERBS = {
    "get",
    "list",
    "create",
    "update",
    "delete",
    "add",
    "remove",
    "modify",
    "set",
    "put",
    "post",
    "patch",
    "edit",
    "bulk",
    "search",
    "join",
    "leave",
    "follow",
    "trigger",
    "execute",
    "batch",
    "crosspost",
    "pin",
    "unpin",
    "ban",
    "unban",
}


def group_lines(lines: list[str]) -> dict[str, Any]:
    names = [ln.split(" — ", 1)[0].strip() for ln in lines]
    nouns = {}
    for name in names:
        words = [
            w for w in name.split("_") if w and w not in VERBS and w not in ("my", "by", "all")
        ]
        nouns[name] = (words[0] if words else "misc").rstrip("s")
    common = {n for n, c in Counter(nouns.values()).most_common(8)}
    cats: dict[str, list[str]] = {}
    for name in names:
        noun = nouns[name] if nouns[name] in common else "misc"
        cat = f"{noun}_ops" if noun in names or len(noun) < 2 else noun
        cats.setdefault(re.sub(r"[^a-z0-9_]", "_", cat), []).append(name)
    return {
        "categories": [
            {"name": n, "description": f"Operations on {n.replace('_', ' ')}.", "operations": ops}
            for n, ops in cats.items()
        ]
    }


class ChatServer:
    """`with ChatServer() as chat:` → chat.url; `chat.script` is a list of behaviours used in turn
    ("good", "malformed", "wrong_ops", "slow", "error"); when it runs out, answers are good."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.requests: list[dict[str, Any]] = []
        # recorded assistant messages, answered in turn to requests that offer tools
        self.answers: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                outer.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                behaviour = outer.script.pop(0) if outer.script else "good"
                if behaviour == "slow":
                    time.sleep(3)
                if behaviour == "error":
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if "tools" in body:
                    message = (
                        outer.answers.pop(0)
                        if outer.answers
                        else {"role": "assistant", "content": "done"}
                    )
                    return self._reply(body, message)
                listing = body["messages"][1]["content"].rsplit("):\n", 1)[-1].split("\n")
                lines = [ln for ln in listing if ln.strip()]
                if behaviour == "malformed":
                    content = "Here are the categories: channels, guilds and users."
                elif behaviour == "wrong_ops":
                    answer = group_lines(lines)
                    answer["categories"][0]["operations"].append("no_such_operation")
                    content = json.dumps(answer)
                else:
                    content = "```json\n" + json.dumps(group_lines(lines)) + "\n```"
                self._reply(body, {"role": "assistant", "content": content})

            def _reply(self, body: dict[str, Any], message: dict[str, Any]) -> None:
                reply = json.dumps(
                    {
                        "id": "c1",
                        "object": "chat.completion",
                        "model": body.get("model"),
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
