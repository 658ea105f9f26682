"""The chat judge: one request to a (fake, real-HTTP) Ollama, a verdict, or one line on why not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nexusmem_core.embed.chat import (
    ChatTimeoutError,
    ChatUnavailableError,
    OllamaJudge,
    parse_verdict,
)

from ..fake_ollama import FakeOllama


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        yield fake


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("YES", "yes"),
        ("**Yes**, the newer note replaces it.", "yes"),
        ("no.", "no"),
        ("NO", "no"),
        ("Yesterday it held.", "unknown"),
        ("Not sure", "unknown"),
        ("", "unknown"),
    ],
)
def test_only_a_leading_yes_or_no_is_a_verdict(answer: str, verdict: str):
    assert parse_verdict(answer) == verdict


@pytest.mark.parametrize(
    ("mode", "verdict"), [("yes", "yes"), ("no", "no"), ("garbage", "unknown")]
)
async def test_the_judge_asks_once_without_streaming(ollama: FakeOllama, mode: str, verdict: str):
    ollama.chat_mode = mode
    judge = OllamaJudge(ollama.url, "fake-chat", timeout=5)
    assert await judge.judge("Deploy with fabric.", "Deploy with ansible now.") == verdict
    (request,) = ollama.chat_requests
    assert request["stream"] is False and request["model"] == "fake-chat"
    assert "Older note:\nDeploy with fabric." in request["messages"][-1]["content"]


async def test_a_slow_model_times_out_in_one_line(ollama: FakeOllama):
    ollama.chat_mode, ollama.delay = "slow", 3.0
    with pytest.raises(ChatTimeoutError, match=r"did not answer within 1s \(contradictions"):
        await OllamaJudge(ollama.url, "fake-chat", timeout=1).judge("a", "b")


@pytest.mark.parametrize(
    ("host", "model", "expected"),
    [
        ("fake", "qwen2.5:3b", "run `ollama pull qwen2.5:3b` or set contradictions.model"),
        ("http://127.0.0.1:9", "fake-chat", "Ollama is not reachable at http://127.0.0.1:9"),
    ],
)
async def test_a_missing_model_or_server_says_what_to_do(
    ollama: FakeOllama, host: str, model: str, expected: str
):
    judge = OllamaJudge(ollama.url if host == "fake" else host, model, timeout=2)
    with pytest.raises(ChatUnavailableError) as err:
        await judge.judge("a", "b")
    assert expected in str(err.value) and "\n" not in str(err.value)
