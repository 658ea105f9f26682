"""A local Ollama chat model (``/api/chat``), with a timeout: the contradiction check's yes/no
judgement, and the session summaries' one request each (``ask``).

The standard library makes the one request a judgement needs (no ``ollama`` import: ~340 ms
for a call that waits seconds on the model anyway, and the client's default timeout is
infinite). A reply that does not start with yes or no is ``unknown``, never a guess.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import anyio.to_thread

from .http import OllamaHTTPError, post_json

__all__ = [
    "DEFAULT_CHAT_MODEL",
    "ChatTimeoutError",
    "ChatUnavailableError",
    "OllamaJudge",
    "Verdict",
    "ask",
    "parse_verdict",
]

DEFAULT_CHAT_MODEL = "qwen2.5:3b"
TEXT_CHARS = 1500  # of each text: a small model reads two notes, not two files

Verdict = Literal["yes", "no", "unknown"]

_SYSTEM = (
    "You compare two notes from a software project's memory. Answer YES if the newer note "
    "supersedes or contradicts the older one (the older one is no longer true as written), "
    "NO otherwise. Answer with one word: YES or NO."
)
_ANSWER = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


class ChatUnavailableError(Exception):
    """The chat model cannot answer now; ``str(err)`` says why and what to do, in one line."""


class ChatTimeoutError(ChatUnavailableError):
    """The chat model did not answer within the timeout."""


def parse_verdict(answer: str) -> Verdict:
    """YES / NO at the start of the reply (any case, markup around it); anything else is
    ``unknown``."""
    match = _ANSWER.match(answer)
    return "unknown" if match is None else match.group(1).lower()  # type: ignore[return-value]


class OllamaJudge:
    """Asks ``model`` whether a newer note supersedes an older one."""

    def __init__(self, host: str, model: str = DEFAULT_CHAT_MODEL, timeout: float = 20.0) -> None:
        self.host, self.model, self.timeout = host, model, timeout

    async def judge(self, older: str, newer: str) -> Verdict:
        """``yes``, ``no`` or ``unknown``; raises ChatUnavailableError (or its timeout)."""
        answer = await anyio.to_thread.run_sync(self._ask, _prompt(older, newer))
        return parse_verdict(answer)

    def _ask(self, prompt: str) -> str:
        messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}]
        return ask(self.host, self.model, messages, self.timeout, {"temperature": 0})


def ask(
    host: str,
    model: str,
    messages: list[dict[str, str]],
    timeout: float,
    options: dict[str, Any] | None = None,
    setting: str = "contradictions",
) -> str:
    """The text of ``model``'s reply to ``messages`` (empty when the reply holds none); raises
    ChatUnavailableError (or its timeout) in one line. ``setting`` is the config section that
    names the model, for the line that says what to change. Blocking: run it in a thread."""
    body = {"model": model, "stream": False, "options": options or {}, "messages": messages}
    try:
        reply = post_json(host, "/api/chat", body, timeout)
    except OllamaHTTPError as err:
        if err.kind == "timeout":
            raise ChatTimeoutError(
                f"the chat model {model} at {host} did not answer within {timeout:g}s "
                f"({setting}.timeoutSeconds in config.json)"
            ) from err
        if err.status == 404:
            raise ChatUnavailableError(
                f"Ollama at {host} does not have the chat model {model!r}: run "
                f"`ollama pull {model}` or set {setting}.model in config.json"
            ) from err
        if err.kind == "status":
            raise ChatUnavailableError(f"Ollama at {host} refused ({err.status})") from err
        if err.kind == "unreachable":
            raise ChatUnavailableError(
                f"Ollama is not reachable at {host}: start it (`ollama serve`) or set OLLAMA_HOST"
            ) from err
        raise ChatUnavailableError(f"Ollama at {host} sent a malformed reply") from err
    message = reply.get("message") if isinstance(reply, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


def _prompt(older: str, newer: str) -> str:
    return (
        f"Older note:\n{older[:TEXT_CHARS]}\n\nNewer note:\n{newer[:TEXT_CHARS]}\n\n"
        "Does the newer note supersede or contradict the older one? Answer YES or NO."
    )
