"""The viewer's security rules, over real HTTP against a real server. Each attack is made
twice: against the viewer with every rule (refused), and against one served without the rule
that refuses it (let through): so each test shows its rule is what stands in the way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.viewer.guard import RULES, is_loopback_host
from nexusmem_core.viewer.server import loopback

from ..conftest import Repo, run_cli
from .conftest import Served, serving, synced


async def a_node(settings: Settings, root: Path) -> str:
    async with open_engine(settings, root) as engine:
        recent = await handlers.list_recent(engine, limit=1, kind="git_commit")
    return str(recent[0]["id"])


async def trust_of(settings: Settings, root: Path, node_id: str) -> str:
    async with open_engine(settings, root) as engine:
        node = await handlers.get_node(engine, node_id)
    assert node is not None
    return str(node["trust"])


async def rebinding(site: Served, settings: Settings) -> int:
    """A page at attacker.example, whose name now resolves to 127.0.0.1, reads the timeline
    (with the cookie, as if the browser had it: the Host rule alone must stop this)."""
    async with site.signed_in() as client:
        answer = await client.get("/", headers={"host": "attacker.example"})
    return answer.status_code


async def no_token(site: Served, settings: Settings) -> int:
    """Any other local page or process asks for a page without the launch's cookie."""
    async with site.client() as client:
        answer = await client.get("/projects")
    return answer.status_code


async def wrong_token(site: Served, settings: Settings) -> int:
    async with site.client() as client:
        answer = await client.get("/projects?token=guessed", follow_redirects=True)
    return answer.status_code


async def cross_origin_post(site: Served, settings: Settings) -> int:
    """A form on another site posts a review (with the cookie and the form token: only the
    Origin rule is left to refuse it)."""
    node = await a_node(settings, site.root)
    slug = await _slug(site)
    async with site.signed_in() as client:
        csrf = await _csrf(client, slug)
        answer = await client.post(
            f"/p/{slug}/node/{node}/review?csrf={csrf}",
            data={"action": "verify"},
            headers={"origin": "http://evil.example"},
        )
    return answer.status_code


async def missing_csrf(site: Served, settings: Settings) -> int:
    """A same-origin request without the page's form token (a script that got the cookie
    sent, not the page)."""
    node = await a_node(settings, site.root)
    slug = await _slug(site)
    async with site.signed_in() as client:
        answer = await client.post(
            f"/p/{slug}/node/{node}/review",
            data={"action": "verify"},
            headers={"origin": site.base},
        )
    return answer.status_code


async def other_method(site: Served, settings: Settings) -> int:
    async with site.signed_in() as client:
        answer = await client.request("DELETE", "/projects", headers={"origin": site.base})
    return answer.status_code


async def _slug(site: Served) -> str:
    async with site.signed_in() as client:
        answer = await client.get("/")
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"].startswith("/p/"), answer.headers["location"]
    return answer.headers["location"].split("/")[2]


async def _csrf(client: httpx.AsyncClient, slug: str) -> str:
    page = await client.get(f"/p/{slug}/review?days=0")
    assert page.status_code == 200, page.text
    marker = "csrf="
    at = page.text.index(marker) + len(marker)
    return page.text[at : page.text.index('"', at)]


ATTACKS: dict[str, tuple[Callable[..., object], int]] = {
    "host": (rebinding, 403),
    "token": (no_token, 403),
    "origin": (cross_origin_post, 403),
    "csrf": (missing_csrf, 403),
    "methods": (other_method, 405),
}


@pytest.mark.parametrize("rule", sorted(ATTACKS))
async def test_each_rule_refuses_its_attack_and_only_it(
    settings: Settings, repo: Repo, rule: str
) -> None:
    attack, refused = ATTACKS[rule]
    await synced(settings, repo)
    with serving(settings, repo.path, RULES) as site:
        assert await attack(site, settings) == refused  # type: ignore[misc]
    # The same attack against a viewer without this one rule gets through.
    with serving(settings, repo.path, RULES - {rule}) as site:
        assert await attack(site, settings) != refused  # type: ignore[misc]


async def test_a_refused_post_changes_nothing(settings: Settings, repo: Repo) -> None:
    await synced(settings, repo)
    node = await a_node(settings, repo.path)
    with serving(settings, repo.path, RULES) as site:
        assert await cross_origin_post(site, settings) == 403
        assert await missing_csrf(site, settings) == 403
    assert await trust_of(settings, repo.path, node) == "candidate"


async def test_the_token_becomes_a_strict_httponly_cookie_and_leaves_the_address(
    viewer: Served,
) -> None:
    async with viewer.client() as client:
        answer = await client.get(viewer.url.replace("/?", "/projects?q=retry&"))
        assert answer.status_code == 303
        assert answer.headers["location"] == "/projects?q=retry"
        cookie = answer.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert viewer.token not in cookie  # the cookie is derived, not the token itself
        page = await client.get("/projects?q=retry")
        assert page.status_code == 200
        assert "retry" in page.text


async def test_every_answer_carries_a_policy_without_inline_scripts(viewer: Served) -> None:
    async with viewer.signed_in() as client:
        for path in ("/", "/projects", "/static/viewer.css", "/nowhere"):
            answer = await client.get(path)
            policy = answer.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "unsafe-inline" not in policy
            assert "frame-ancestors 'none'" in policy
    async with viewer.client() as client:
        refused = await client.get("/")
        assert "script-src 'self'" in refused.headers["content-security-policy"]


def test_hosts_are_loopback_names_only() -> None:
    for good in ("127.0.0.1", "127.0.0.1:7377", "localhost:80", "[::1]:7377", "::1"):
        assert is_loopback_host(good), good
    for bad in (
        "",
        "attacker.example",
        "127.0.0.1.nip.io",
        "10.0.0.1:7377",
        "[::2]:80",
        "localhost.attacker.example",
        "0.0.0.0",
    ):
        assert not is_loopback_host(bad), bad


def test_the_viewer_refuses_to_bind_elsewhere(repo: Repo) -> None:
    assert loopback("localhost") == "127.0.0.1"
    assert loopback("::1") == "::1"
    done = run_cli("ui", "-C", str(repo.path), "--host", "0.0.0.0", "--no-browser")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "error: --host: '0.0.0.0' is not a loopback address: the viewer serves this machine "
        "only (127.0.0.1 or ::1)"
    )
    assert "Traceback" not in done.stderr


def test_a_repository_without_memory_is_one_line(repo: Repo) -> None:
    done = run_cli("ui", "-C", str(repo.path), "--no-browser", "--port", "0")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "nexusmem init" in done.stderr
