"""Any OpenAI-compatible chat-completions endpoint.

Off unless `SKILLPRESS_LLM_BASE_URL` and `SKILLPRESS_LLM_MODEL` are set; the API key is read
from the environment variable `SKILLPRESS_LLM_API_KEY_ENV` names (never stored). What to ask
and how to repair an answer is the core's (`skillpress.derive.model_grouping`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import httpx

from skillpress.errors import ChatFailed, Retryable
from skillpress.platform.settings import Settings

__all__ = ["ChatClient", "ModelUnavailable", "chat_client"]


class ModelUnavailable(ChatFailed, Retryable):
    """The endpoint did not answer usefully (network, timeout, status, shape)."""


@dataclass(frozen=True)
class ChatClient:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0

    def complete(self, msgs: list[dict[str, str]]) -> str:
        message = self._post({"model": self.model, "messages": msgs, "temperature": 0})
        return str(message.get("content") or "")

    def with_tools(
        self, msgs: list[dict[str, Any]], tools: list[dict[str, Any]], tool_choice: Any = "auto"
    ) -> dict[str, Any]:
        """The assistant's message for `msgs` with `tools` offered (OpenAI function shape) and
        `tool_choice` ("auto", or one function forced): its `content` and `tool_calls`."""
        return self._post(
            {
                "model": self.model,
                "messages": msgs,
                "tools": tools,
                "tool_choice": tool_choice,
                "temperature": 0,
            }
        )

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
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
            message = response.json()["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ModelUnavailable("the model endpoint's answer is not a chat completion") from None
        if not isinstance(message, dict):
            raise ModelUnavailable("the model endpoint's answer is not a chat completion")
        return message


def chat_client(settings: Settings) -> ChatClient | None:
    if not (settings.llm_base_url and settings.llm_model):
        return None
    key = os.environ.get(settings.llm_api_key_env) if settings.llm_api_key_env else None
    return ChatClient(settings.llm_base_url, settings.llm_model, key, settings.llm_timeout)
