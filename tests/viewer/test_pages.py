"""Every page of the viewer over real HTTP, on a real repository with commands typed, an agent
session that was told something, and a sync: what each page shows, each review action's effect,
and bad input answered in one line."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine

from ..collectors.agent.hookrun import context, payload, run_hook
from ..conftest import Repo, run_cli
from ..test_shell_sync import log_command
from .conftest import Served, serving

NOW = 1_767_400_000.0


@pytest.fixture
def site(settings: Settings, repo: Repo) -> Iterator[Served]:
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "-C", str(repo.path)).returncode == 0
    log_command(settings.home, "pytest tests/test_upload.py", repo.path, 1, NOW)
    log_command(settings.home, "pytest tests/test_upload.py", repo.path, 0, NOW + 60)
    for step, name in enumerate(("failure_bash_exit", "pre_bash", "post_bash_ok")):
        data = {**payload(name, repo.path, session_id="s1"), "tool_use_id": f"toolu_{step}"}
        context(run_hook(data))
    done = run_cli("sync", "-q", "--link-failures", "-C", str(repo.path))
    assert done.returncode == 0, done.stderr
    with serving(settings, repo.path) as served:
        yield served


@pytest.fixture
async def client(site: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with site.signed_in() as signed:
        yield signed


async def slug_of(client: httpx.AsyncClient) -> str:
    answer = await client.get("/")
    return answer.headers["location"].split("/")[2]


def text(html: str) -> str:
    """The page's words, without tags (for a person's reading of it)."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


async def ids(settings: Settings, root: Path, kind: str) -> list[str]:
    async with open_engine(settings, root) as engine:
        return [r["id"] for r in await handlers.list_recent(engine, limit=50, kind=kind)]


async def test_every_page_answers_with_its_time_in_the_server(
    client: httpx.AsyncClient, settings: Settings, repo: Repo
) -> None:
    slug = await slug_of(client)
    commit = (await ids(settings, repo.path, "git_commit"))[0]
    pages = {
        f"/p/{slug}/timeline": "Timeline",
        f"/p/{slug}/timeline?outcome=failed&author=you": "Timeline",
        f"/p/{slug}/search?q=why+was+the+retry+budget+raised": "Search",
        f"/p/{slug}/node/{commit}": "Kind",
        f"/p/{slug}/review?days=0": "Review",
        f"/p/{slug}/agents": "Agents",
        f"/p/{slug}/status": "Status",
        f"/p/{slug}/forget": "Forget a value",
        "/projects?q=retry": "Projects",
    }
    for path, heading in pages.items():
        answer = await client.get(path)
        assert answer.status_code == 200, (path, answer.text)
        assert heading in text(answer.text), path
        assert re.fullmatch(r"app;dur=\d+\.\d", answer.headers["server-timing"]), path


async def test_the_timeline_shows_a_failure_with_its_fix_and_pages_by_keyset(
    client: httpx.AsyncClient,
) -> None:
    slug = await slug_of(client)
    failed = text((await client.get(f"/p/{slug}/timeline?outcome=failed")).text)
    assert "you: pytest tests/test_upload.py" in failed and "failed (1)" in failed
    assert "fixed by retry you: pytest tests/test_upload.py (exit 0)" in failed
    assert "claude-code" in failed and "npm test" in failed  # the agent's failure too
    mine = text((await client.get(f"/p/{slug}/timeline?author=claude-code")).text)
    assert "npm test" in mine and "pytest tests/test_upload.py" not in mine
    first = await client.get(f"/p/{slug}/timeline?kind=git_commit")
    shown = re.findall(r'data-id="([0-9a-f]{64})"', first.text)
    assert len(shown) == 4 and 'rel="next"' not in first.text  # four commits: one page


async def test_a_commit_shows_its_diffs_and_a_failure_what_fixed_it(
    client: httpx.AsyncClient, settings: Settings, repo: Repo
) -> None:
    slug = await slug_of(client)
    async with open_engine(settings, repo.path) as engine:
        found = await handlers.search(engine, "raise the retry budget", vector=False)
        page = await handlers.timeline(engine, outcome="failed", author="you")
    commit = next(r.id for r in found.results if r.kind == "git_commit")
    shown = text((await client.get(f"/p/{slug}/node/{commit[:12]}")).text)  # a prefix works
    assert "fix: raise the retry budget" in shown and "src/retry.py" in shown
    assert "+RETRY_BUDGET = 5" in shown  # the commit's patch
    failure = page.items[0]["id"]
    shown = text((await client.get(f"/p/{slug}/node/{failure}")).text)
    assert "Outcome failed (exit 1)" in shown and "Fixed by retry" in shown


async def test_the_agents_page_lists_what_was_told_and_the_next_digest(
    client: httpx.AsyncClient,
) -> None:
    slug = await slug_of(client)
    shown = text((await client.get(f"/p/{slug}/agents")).text)
    assert "PreToolUse recall npm test" in shown
    assert "failed once" in shown and shown.endswith("") and " ok " in f" {shown} "
    assert "commands that failed here" in shown  # the next SessionStart's digest
    only = text((await client.get(f"/p/{slug}/agents?agent=codex")).text)
    assert "No note has reached an agent here yet" in only


async def test_the_status_page_counts_charts_and_names_the_capture_hooks(
    client: httpx.AsyncClient, settings: Settings, repo: Repo
) -> None:
    slug = await slug_of(client)
    answer = await client.get(f"/p/{slug}/status")
    async with open_engine(settings, repo.path) as engine:
        state = await handlers.status(engine)
    shown = text(answer.text)
    assert f"Nodes {state.nodes}" in shown and " kB" in shown  # the database's size
    assert answer.text.count("<rect ") >= len(state.by_kind) - 1  # one bar part per kind a month
    for name in ("bash", "zsh", "fish", "pwsh", "Claude Code", "Codex"):
        assert name in shown


async def csrf_of(client: httpx.AsyncClient, path: str) -> str:
    page = await client.get(path)
    return re.search(r"csrf=([0-9a-f]{64})", page.text).group(1)  # type: ignore[union-attr]


async def test_review_actions_are_the_cli_s_own(
    client: httpx.AsyncClient, site: Served, settings: Settings, repo: Repo
) -> None:
    slug = await slug_of(client)
    docs = await ids(settings, repo.path, "doc_section")
    old, new = docs[-1], docs[0]
    csrf = await csrf_of(client, f"/p/{slug}/node/{old}")
    origin = {"origin": site.base}
    marked = await client.post(
        f"/p/{slug}/node/{old}/stale?csrf={csrf}", data={"newer": new}, headers=origin
    )
    assert marked.status_code == 303 and marked.headers["location"] == f"/p/{slug}/node/{old}"
    shown = text((await client.get(f"/p/{slug}/node/{new}")).text)
    assert "Supersedes" in shown
    rejected = await client.post(
        f"/p/{slug}/node/{new}/review?csrf={csrf}", data={"action": "reject"}, headers=origin
    )
    assert rejected.status_code == 303
    cleared = run_cli("review", new, "--clear", "--json", "-C", str(repo.path))
    assert json.loads(cleared.stdout)["previous"] == "rejected"  # the viewer's judgement
    # Finding the newer node from the page's own search box.
    found = text((await client.get(f"/p/{slug}/node/{old}?newer=architecture")).text)
    assert "Mark stale, replaced by" in found


async def test_bad_input_is_one_line_naming_it(
    client: httpx.AsyncClient, site: Served, settings: Settings, repo: Repo
) -> None:
    slug = await slug_of(client)
    cases = {
        f"/p/{slug}/timeline?outcome=maybe": (400, "outcome:"),
        f"/p/{slug}/timeline?before=not-a-cursor": (400, "before:"),
        f"/p/{slug}/timeline?since=yesterday": (400, "since:"),
        f"/p/{slug}/search?q=retry&budget=lots": (400, "budget:"),
        f"/p/{slug}/search?q=retry&budget=10": (400, "budget:"),
        f"/p/{slug}/agents?agent=hal": (400, "agent:"),
        f"/p/{slug}/review?days=-1": (400, "days:"),
        f"/p/{slug}/node/0000000000000000": (404, "no node"),
        "/p/000000000000/timeline": (404, "no registered project"),
    }
    for path, (code, said) in cases.items():
        answer = await client.get(path)
        assert answer.status_code == code, (path, answer.text)
        message = re.search(r'<p class="error" role="alert">(.*?)</p>', answer.text)
        assert message is not None and said in message.group(1), (path, answer.text)
        assert "Traceback" not in answer.text
    csrf = await csrf_of(client, f"/p/{slug}/forget")
    origin = {"origin": site.base}
    huge = await client.post(
        f"/p/{slug}/forget?csrf={csrf}", data={"value": "x" * 70_000}, headers=origin
    )
    assert huge.status_code == 413
    empty = await client.post(f"/p/{slug}/forget?csrf={csrf}", data={"value": " "}, headers=origin)
    assert empty.status_code == 400 and "value:" in empty.text
    commit = re.search(
        r'data-id="([0-9a-f]{64})"', (await client.get("/", follow_redirects=True)).text
    )
    assert commit is not None
    bogus = await client.post(
        f"/p/{slug}/node/{commit.group(1)}/review?csrf={csrf}",
        data={"action": "approve"},
        headers=origin,
    )
    assert bogus.status_code == 400 and "action:" in bogus.text
    for elsewhere in ("//evil.example/", "/\\evil.example/", "https://evil.example/", "/p\r\nX: 1"):
        sent = await client.post(
            f"/p/{slug}/node/{commit.group(1)}/review?csrf={csrf}",
            data={"action": "verify", "next": elsewhere},
            headers=origin,
        )
        assert sent.status_code == 400 and "next:" in sent.text, elsewhere
        assert "location" not in sent.headers
    async with open_engine(settings, repo.path) as engine:
        judged = await handlers.get_node(engine, commit.group(1))
    assert judged is not None and judged["trust"] == "candidate"  # refused before it acted


async def test_new_rows_stream_to_an_open_timeline(
    client: httpx.AsyncClient, settings: Settings, repo: Repo
) -> None:
    slug = await slug_of(client)
    page = await client.get(f"/p/{slug}/timeline")
    live = re.search(r'data-live="([^"]+)"', page.text)
    assert live is not None
    url = live.group(1).replace("&amp;", "&")
    events: list[tuple[str, str]] = []
    with anyio.fail_after(20):
        async with client.stream("GET", url) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            log_command(settings.home, "make release-notes", repo.path, 2, NOW + 600)
            event, data = "", []
            async for line in stream.aiter_lines():
                if line.startswith("event: "):
                    event = line[len("event: ") :]
                elif line.startswith("data: "):
                    data.append(line[len("data: ") :])
                elif not line and data:  # the end of one event
                    body, data = "\n".join(data), []
                    if "make release-notes" not in body:
                        continue
                    events.append((event, body))
                    if event == "rows":
                        break
                    # Synced meanwhile, it comes again, as a row of the timeline.
                    async with open_engine(settings, repo.path) as engine:
                        await handlers.sync(engine, embed=False)
    assert [e for e, _ in events] == ["pending", "rows"]
    assert "not synced yet" in events[0][1] and "not synced yet" not in events[1][1]
