"""The viewer end to end, in a real Chromium: a synced real corpus, the shell recorder, the
CLI as a user types it, and every security rule refused where a browser would meet it."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nexusmem_core.collectors.shell.scripts import RECORDER
from nexusmem_core.config import Settings

from ..conftest import Repo, run_cli
from .browser import launched, needs_browser
from .conftest import Served, serving, synced

pytestmark = needs_browser

CORPORA = next(
    (
        Path(p)
        for p in (
            os.environ.get("NEXUSMEM_CORPORA"),
            Path(__file__).resolve().parents[3] / "shared" / "corpora",
            "/work/shared/corpora",
        )
        if p and Path(p, "cobra.bundle").exists()
    ),
    None,
)
FAILING = "go test ./doc -run TestGenManDoc"


@dataclass
class Corpus:
    root: Path
    env: dict[str, str]
    settings: Settings

    def record(self, command: str, exit_code: int, start: float) -> None:
        """One command, through the shell hook's recorder, as bash's prompt hook runs it."""
        subprocess.run(
            [
                sys.executable,
                "-S",
                "-P",
                RECORDER,
                "--home",
                self.env["NEXUSMEM_HOME"],
                "--shell",
                "bash",
                "--exit",
                str(exit_code),
                "--start",
                str(start),
                "--end",
                str(start + 2.5),
                "--cwd",
                str(self.root),
                "--session",
                "s1",
            ],
            input=command.encode(),
            check=True,
            timeout=30,
        )

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, "-C", str(self.root), env=self.env)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """cobra (1,106 commits) cloned from its pinned bundle and synced, with a failing test run
    and its passing retry recorded by the shell hook."""
    if CORPORA is None:
        pytest.skip("no ../shared/corpora/cobra.bundle (set NEXUSMEM_CORPORA)")
    base = tmp_path_factory.mktemp("corpus")
    root = base / "cobra"
    subprocess.run(["git", "clone", "-q", str(CORPORA / "cobra.bundle"), str(root)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "remote",
            "set-url",
            "origin",
            "https://github.com/spf13/cobra.git",
        ],
        check=True,
    )
    env = {
        "NEXUSMEM_HOME": str(base / "home"),
        "NEXUSMEM_VECTOR": "off",
        "OLLAMA_HOST": "127.0.0.1:9",
        "CLAUDE_CONFIG_DIR": str(base / "claude"),
        "CODEX_HOME": str(base / "codex"),
        "GEMINI_CLI_HOME": str(base / "gemini"),
        "XDG_DATA_HOME": str(base / "data"),
    }
    found = Corpus(root, env, Settings.from_env({**os.environ, **env}))
    assert found.cli("init").returncode == 0
    now = time.time()
    found.record(FAILING, 1, now - 600)
    found.record(FAILING, 0, now - 300)
    synced_ = found.cli("sync", "--link-failures")
    assert synced_.returncode == 0, synced_.stderr
    return found


@pytest.fixture
def site(corpus: Corpus) -> Iterator[Served]:
    with serving(corpus.settings, corpus.root) as served:
        yield served


async def opened(browser: Any, site: Served) -> Any:
    page = await browser.new_page()
    await page.goto(site.url)  # the token is exchanged for the cookie, the address cleaned
    assert "token=" not in page.url
    return page


async def test_the_timeline_filters_to_failures_and_follows_a_fix(site: Served) -> None:
    async with launched() as browser:
        page = await opened(browser, site)
        assert await page.locator("ol.timeline li.row").count() == 50  # one keyset page
        await page.select_option("select[name=outcome]", "failed")
        await page.click("form.filters button[type=submit]")
        assert "outcome=failed" in page.url
        failures = page.locator("ol.timeline li.row.failed")
        assert await failures.count() == 1
        assert FAILING in await failures.first.inner_text()
        fix = failures.first.locator("ul.fixes a.fix")
        assert " ".join((await fix.inner_text()).split()) == f"you: {FAILING} (exit 0)"  # retry
        await failures.first.locator("a.title").click()
        await page.wait_for_selector("h1.node-title")
        assert "failed (exit 1)" in await page.locator("#facts").inner_text()
        await page.click("a.fix")
        await page.wait_for_selector("h1.node-title")
        body = await page.locator("pre.body").inner_text()
        assert FAILING in body
        # Older pages by keyset: the second page starts where the first ended.
        await page.goto(f"{site.base}/")
        first = await page.locator("ol.timeline li.row").first.get_attribute("data-id")
        await page.click("a[rel=next]")
        assert "before=" in page.url
        assert await page.locator(f"ol.timeline li.row[data-id='{first}']").count() == 0


async def test_search_explains_why_a_result_ranked(site: Served) -> None:
    async with launched() as browser:
        page = await opened(browser, site)
        await page.click("nav a:text('Search')")
        await page.fill("input[name=q]", "zsh completion for flags")
        await page.press("input[name=q]", "Enter")
        await page.wait_for_selector("ol.results li.result")
        why = page.locator("ol.results li.result").first.locator("details.why")
        assert not await why.get_attribute("open")
        await why.locator("summary").click()
        text = await why.inner_text()
        for label in ("BM25 arm", "Vector arm", "Fused relevance", "Score"):
            assert label in text
        assert "rank " in text  # the word arm found it at some rank


async def test_a_verification_here_is_what_nexusmem_query_shows(
    site: Served, corpus: Corpus
) -> None:
    question = "zsh completion remove bad test"
    before = corpus.cli("query", question, "--budget", "400")
    assert "[verified]" not in before.stdout
    async with launched() as browser:
        page = await opened(browser, site)
        await page.goto(f"{page.url.split('/p/')[0]}/p/{site_slug(page.url)}/search?q={question}")
        await page.locator("ol.results li.result a.title").first.click()
        await page.wait_for_selector("h1.node-title")
        title = await page.locator("h1.node-title").inner_text()
        await page.click("button:text('Verify')")
        await page.wait_for_selector("dd.trust-verified")
    after = corpus.cli("query", question, "--budget", "400")
    line = next(x for x in after.stdout.splitlines() if title in x)
    assert "[verified]" in line


async def test_a_forgotten_value_is_gone_from_search(site: Served, corpus: Corpus) -> None:
    value = "TestGenFishCompletionFile"
    question = f"fish completion {value}"
    answer = lambda: corpus.cli("query", question).stdout.split("\n", 1)[1]  # noqa: E731
    assert value in answer()  # past the header, which repeats the question
    async with launched() as browser:
        page = await opened(browser, site)
        slug = site_slug(page.url)
        await page.goto(f"{site.base}/p/{slug}/forget")
        await page.fill("input[name=value]", value)
        await page.click("button:text('Show what would be deleted')")
        confirm = page.locator("section.confirm")
        text = await confirm.inner_text()
        assert "cannot be undone" in text
        assert value not in page.url  # posted, never in the address or the history
        await page.click("section.confirm button[name=confirm]")
        assert "node(s) deleted" in await page.locator("p.done").inner_text()
        await page.goto(f"{site.base}/p/{slug}/search?q={value}")
        results = page.locator("ol.results")
        assert await results.count() == 1  # the search ran
        assert value not in await results.inner_text()
    assert value not in answer()


async def test_a_recorded_command_appears_on_the_open_timeline(
    site: Served, corpus: Corpus
) -> None:
    async with launched() as browser:
        page = await opened(browser, site)
        await page.wait_for_function("document.querySelector('[data-live]') !== null")
        marker = await page.evaluate("window.performance.timeOrigin")
        corpus.record("go vet ./... # live", 0, time.time())
        row = page.locator("ol.pending li.row", has_text="go vet ./... # live")
        await row.wait_for(timeout=10_000)
        assert "not synced yet" in await row.inner_text()
        # No reload happened: the document is the one first loaded.
        assert await page.evaluate("window.performance.timeOrigin") == marker


def site_slug(url: str) -> str:
    return url.split("/p/")[1].split("/")[0]


class _Attacker(http.server.BaseHTTPRequestHandler):
    """Another site on this machine (another port of 127.0.0.1: the same *site* to a
    browser, so a SameSite cookie is sent): its page posts a review to the viewer."""

    target = ""

    def do_GET(self) -> None:
        page = (
            f"<form id=f method=post action='{self.target}'>"
            "<input name=action value=verify></form>"
            "<script>document.getElementById('f').submit()</script>"
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args: object) -> None:
        pass


async def test_every_rule_refuses_in_the_browser(settings: Settings, repo: Repo) -> None:
    await synced(settings, repo)
    with serving(settings, repo.path) as served:
        port = served.base.rsplit(":", 1)[1]
        async with launched("--host-resolver-rules=MAP rebound.test 127.0.0.1") as browser:
            page = await browser.new_page()
            # No token: refused.
            answer = await page.goto(f"{served.base}/")
            assert answer.status == 403
            # The token, through a name an attacker pointed at this machine: refused.
            answer = await page.goto(served.url.replace("127.0.0.1", "rebound.test"))
            assert answer.status == 403
            # Signed in; then another local site's page posts a review with the cookie.
            await page.goto(served.url)
            slug = site_slug(page.url) if "/p/" in page.url else None
            if slug is None:
                await page.goto(f"{served.base}/")
                slug = site_slug(page.url)
            node = await page.locator("ol.timeline li.row").first.get_attribute("data-id")
            _Attacker.target = f"{served.base}/p/{slug}/node/{node}/review"
            attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
            threading.Thread(target=attacker.serve_forever, daemon=True).start()
            try:
                async with page.expect_response(lambda r: "/review" in r.url) as posted:
                    await page.goto(f"http://127.0.0.1:{attacker.server_port}/")
                assert (await posted.value).status == 403
            finally:
                attacker.shutdown()
                attacker.server_close()
            await page.goto(f"{served.base}/p/{slug}/node/{node}")
            assert await page.locator("dd.trust").inner_text() == "candidate"
            assert port in served.base


HOSTILE = (
    "fix: <script>window.__pwned = 1</script> and <img src=x onerror=window.__pwned=2>\n\n"
    '[click me](javascript:window.__pwned=3) <a href="javascript:window.__pwned=4">here</a>\n'
    "\x1b[31mred\x1b[0m \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \u202eevil\n"
)


async def test_stored_text_is_shown_never_run(settings: Settings, repo: Repo) -> None:
    repo.commit(HOSTILE, {"src/evil.py": "x = '<script>window.__pwned = 5</script>'\n"})
    await synced(settings, repo)
    with serving(settings, repo.path) as served:
        async with launched() as browser:
            page = await browser.new_page()
            dialogs: list[str] = []
            page.on("dialog", lambda d: dialogs.append(d.message))
            await page.goto(served.url)
            slug = site_slug(page.url)
            row = page.locator("ol.timeline li.row", has_text="window.__pwned = 1")
            await row.locator("a.title").click()
            await page.wait_for_selector("h1.node-title")
            node_url = page.url
            for url in (
                f"{served.base}/p/{slug}/timeline",
                node_url,
                f"{served.base}/p/{slug}/search?q=pwned+script",
            ):
                await page.goto(url)
                assert await page.evaluate("window.__pwned") is None, url
                assert (
                    await page.locator("main script, main img, main a[href^='javascript']").count()
                    == 0
                )
                text = await page.locator("main").inner_text()
                assert "<script>window.__pwned = 1</script>" in text, url
                assert "\x1b" not in text and "\u202e" not in text
            await page.goto(node_url)
            body = await page.locator("pre.body").inner_text()
            assert "␛[31mred␛[0m" in body  # the colour codes, shown as marks
            assert not dialogs
