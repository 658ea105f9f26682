"""Attack 5 of issue 47: a question nobody bounded. One long token (a minified bundle's error
line pasted whole) or a flood of distinct words, asked in a cloned repository through
``nexusmem query`` and through the MCP server's ``search_memory``: each is answered, cut to the
caps, and the answer says so."""

from __future__ import annotations

import json
import random
import string
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from nexusmem_core.retrieval.query import MAX_QUESTION_CHARS, MAX_QUESTION_TERMS

from ..conftest import Repo, run_cli
from ..mcp.wire import INITIALIZE, INITIALIZED, Wire, spawned, tool_call

LONG_TOKEN = "TypeError in bundle.min.js: " + "a" * 100_000
FIX = "fix: TypeError in bundle.min.js when the upload widget loads twice"
# A hang guard, not a speed test: a question the server cannot finish fails here, not never.
HANG = 60


def published(make_repo: Callable[[str], Repo]) -> Repo:
    """A project that ships a minified bundle, whose errors users paste whole."""
    r = make_repo("published")
    r.commit("feat: the upload widget", {"dist/bundle.min.js": "!function(){" + "a;" * 5000 + "}"})
    r.commit(
        f"{FIX}\n\nThe widget registered its handler on every load.",
        {"dist/bundle.min.js": "!function(){" + "b;" * 5000 + "}"},
    )
    return r


def synced_clone(make_repo: Callable[[str], Repo], cloned: Callable[[Repo], Path]) -> Path:
    clone = cloned(published(make_repo))
    for command in (["init"], ["sync"]):
        done = run_cli(*command, cwd=clone)
        assert done.returncode == 0, done.stderr
    return clone


def distinct_words(n: int) -> str:
    """``n`` distinct made-up words of letters, the way a pasted document reads to the parser
    (neighbouring words of letters are joined into terms as well)."""
    rng = random.Random(47)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=8)) for _ in range(n))


def test_one_long_token_is_cut_and_answered_by_the_cli(make_repo, cloned):
    clone = synced_clone(make_repo, cloned)
    done = run_cli("query", "--no-vector", LONG_TOKEN, cwd=clone)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == (
        f"note: the question was cut to {MAX_QUESTION_CHARS:,} characters / 6 terms "
        f"(it had {len(LONG_TOKEN):,} characters)"
    )
    assert FIX in done.stdout
    as_json = json.loads(run_cli("query", "--no-vector", "--json", LONG_TOKEN, cwd=clone).stdout)
    assert as_json["cut"] == lines[1].removeprefix("note: ")
    assert as_json["results"][0]["title"] == FIX


def test_a_flood_of_distinct_words_is_cut_to_the_term_cap_by_the_cli(make_repo, cloned):
    clone = synced_clone(make_repo, cloned)
    question = "TypeError bundle.min.js upload widget " + distinct_words(10_000)
    done = run_cli("query", "--no-vector", "--json", question, cwd=clone)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert f"/ {MAX_QUESTION_TERMS:,} terms" in answer["cut"]
    assert answer["results"][0]["title"] == FIX
    ordinary = run_cli("query", "--no-vector", "--json", "TypeError in bundle.min.js", cwd=clone)
    assert json.loads(ordinary.stdout)["cut"] is None


@asynccontextmanager
async def mcp_server(root: Path, home: Path) -> AsyncIterator[Wire]:
    """``python -m nexusmem_mcp`` started in ``root``, initialised."""
    async with spawned([sys.executable, "-m", "nexusmem_mcp"], root, home) as wire:
        with anyio.fail_after(HANG):
            await wire.send(INITIALIZE)
            assert "result" in await wire.reply(1)
            await wire.send(INITIALIZED)
            yield wire


async def replies_to(wire: Wire, ids: set[int]) -> dict[int, dict[str, Any]]:
    """The replies to ``ids``, in whatever order they come."""
    found: dict[int, dict[str, Any]] = {}
    while ids - found.keys():
        message = json.loads(await wire.stdout.receive_until(b"\n", 1 << 24))
        if message.get("id") in ids and "method" not in message:
            found[message["id"]] = message
    return found


async def test_a_megabyte_question_over_mcp_is_cut_answered_and_the_server_lives_on(
    make_repo, cloned, home: Path
):
    clone = synced_clone(make_repo, cloned)
    long_token = "TypeError in bundle.min.js: " + "a" * 1_000_000
    flood = "TypeError bundle.min.js upload widget " + distinct_words(100_000)
    async with mcp_server(clone, home) as wire:
        with anyio.fail_after(HANG):
            for request_id, question in ((2, long_token), (3, flood)):
                arguments = json.dumps({"query": question, "vector": False}).encode()
                await wire.send(tool_call(request_id, "search_memory", arguments))
            await wire.send(b'{"jsonrpc":"2.0","id":4,"method":"ping"}')
            replies = await replies_to(wire, {2, 3, 4})
    token, words = replies[2]["result"], replies[3]["result"]
    assert replies[4]["result"] == {}
    for answer, cut in ((token, "6 terms"), (words, f"{MAX_QUESTION_TERMS:,} terms")):
        assert not answer.get("isError"), answer["content"]
        text = answer["content"][0]["text"]
        assert text.splitlines()[1] == f"note: {answer['structuredContent']['cut']}"
        assert cut in answer["structuredContent"]["cut"]
        assert FIX in text
