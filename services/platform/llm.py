"""Any OpenAI-compatible chat-completions endpoint, and asking it for categories.

Off unless `SKILLPRESS_LLM_BASE_URL` and `SKILLPRESS_LLM_MODEL` are set; the API key is read
from the environment variable `SKILLPRESS_LLM_API_KEY_ENV` names (never stored). A failed or
invalid answer is repaired by one bounded retry that tells the model what was wrong, then the
caller falls back to the offline grouping; the reason is returned to be recorded.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

import httpx

from services.derive.categories import Grouping
from services.derive.model_grouping import (
    GroupingInvalid,
    OpSummary,
    assemble,
    batches,
    messages,
    parse_answer,
)
from services.platform.logging import get_logger
from services.platform.settings import Settings

__all__ = ["ChatClient", "ModelUnavailable", "chat_client", "propose_grouping", "summaries_of"]


class ModelUnavailable(Exception):
    """The endpoint did not answer usefully (network, timeout, status, shape)."""


@dataclass(frozen=True)
class ChatClient:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0

    def complete(self, msgs: list[dict[str, str]]) -> str:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        payload = {"model": self.model, "messages": msgs, "temperature": 0}
        try:
            with httpx.Client(
                timeout=self.timeout, follow_redirects=False, trust_env=False
            ) as client:
                response = client.post(
                    self.base_url.rstrip("/") + "/chat/completions", json=payload, headers=headers
                )
        except httpx.TimeoutException:
            raise ModelUnavailable(f"the model did not answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise ModelUnavailable(
                f"the model endpoint failed: {type(exc).__name__}: {exc}"
            ) from None
        if response.status_code != 200:
            raise ModelUnavailable(f"the model endpoint answered {response.status_code}")
        try:
            return str(response.json()["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            raise ModelUnavailable("the model endpoint's answer is not a chat completion") from None


def chat_client(settings: Settings) -> ChatClient | None:
    if not (settings.llm_base_url and settings.llm_model):
        return None
    key = os.environ.get(settings.llm_api_key_env) if settings.llm_api_key_env else None
    return ChatClient(settings.llm_base_url, settings.llm_model, key, settings.llm_timeout)


def summaries_of(files: dict[str, bytes]) -> tuple[str, list[OpSummary]]:
    """(title, each operation's name and first line) from a derived package: all the model sees."""
    from services.derive.frontmatter import split_frontmatter

    meta = json.loads(files["skill.json"])
    out = []
    for op in meta.get("operations", []):
        text = files.get(op["file"], b"").decode("utf-8", "replace")
        out.append(OpSummary(op["name"], split_frontmatter(op["file"], text).description()[:120]))
    return str(meta.get("title", "")), out


def propose_grouping(
    client: ChatClient,
    title: str,
    ops: list[OpSummary],
    tag_failure: str | None,
    budget_chars: int = 12_000,
    retries: int = 1,
) -> tuple[Grouping | None, str]:
    """The model's grouping, or None and why not (the caller then uses the offline grouping)."""
    log = get_logger("categorize.model", model=client.model, operations=len(ops))
    all_ops = {op.name for op in ops}
    known: dict[str, list[str]] = {}
    descriptions: dict[str, str] = {}
    parts: list[dict[str, tuple[str, list[str]]]] = []
    started = time.monotonic()
    for i, batch in enumerate(batches(ops, budget_chars)):
        msgs = messages(title, batch, descriptions, len(ops))
        answer: dict[str, tuple[str, list[str]]] | None = None
        for attempt in range(retries + 1):
            try:
                text = client.complete(msgs)
                answer = parse_answer(text, batch, all_ops, known)
                break
            except GroupingInvalid as exc:
                log.warning(
                    "categorize.model_answer_invalid", batch=i, attempt=attempt, reason=str(exc)
                )
                if attempt == retries:
                    return None, f"the model's answer was invalid {retries + 1} times (last: {exc})"
                msgs = [
                    *msgs,
                    {"role": "assistant", "content": text[:4000]},
                    {
                        "role": "user",
                        "content": f"That answer cannot be used: {exc}. Answer again with the corrected JSON only.",
                    },
                ]
            except ModelUnavailable as exc:
                log.warning("categorize.model_unavailable", batch=i, reason=str(exc))
                return None, str(exc)
        assert answer is not None
        parts.append(answer)
        for name, (desc, members) in answer.items():
            known.setdefault(name, []).extend(members)
            descriptions.setdefault(name, desc)
    log.info(
        "categorize.model_grouped",
        categories=len(known),
        seconds=round(time.monotonic() - started, 2),
    )
    return assemble(parts, tag_failure, [op.name for op in ops]), "the model grouped the operations"
