"""Languages without spaces: Chinese and Japanese commits and docs are found by BM25 alone,
through the trigram index (retrieval/cjk.py, migration v7)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.retrieval.cjk import cjk_query, has_cjk
from nexusmem_core.store.db import open_database

from ..conftest import Repo, run_cli


@pytest.fixture
def zh_repo(make_repo) -> Repo:  # type: ignore[no-untyped-def]
    r = make_repo("zh")
    r.commit("feat: 添加用户登录页面", {"src/login.py": "def login():\n    pass\n"})
    r.commit(
        "fix: 修复缓存失效导致的崩溃\n\n当缓存过期时，服务会读取空值并崩溃；现在先检查再读取。",
        {"src/cache.py": "TTL = 60\n"},
    )
    r.commit("chore: 更新依赖版本", {"VERSION": "2\n"})
    r.commit("ci: pin the runner image", {"ci.yml": "image: ubuntu-24.04\n"})
    r.commit(
        "docs: 部署说明",
        {
            "docs/部署.md": "# 部署\n\n## 数据库迁移\n\n上线前先运行迁移脚本，否则服务无法启动。\n",
            "docs/運用.md": "# 運用ガイド\n\n## ログの確認\n\n"
            "エラーが出たらまずログを確認してください。\n",
        },
    )
    assert run_cli("init", "-C", str(r.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(r.path)).returncode == 0
    return r


def titles(repo: Repo, query: str) -> list[str]:
    out = run_cli("query", "--json", "--no-vector", "-C", str(repo.path), query)
    assert out.returncode == 0, out.stderr
    return [r["title"] for r in json.loads(out.stdout)["results"]]


def test_pieces_of_a_query() -> None:
    assert has_cjk("缓存") and has_cjk("ログ") and not has_cjk("cache invalidation")
    assert cjk_query("为什么缓存失效") == (["为什么", "什么缓", "么缓存", "缓存失", "存失效"], [])
    assert cjk_query("redis 缓存 挂了 ok") == ([], ["缓存", "挂了"])


CASES = [
    ("缓存失效", "fix: 修复缓存失效导致的崩溃"),  # inside a longer run of the title
    ("为什么缓存会失效", "fix: 修复缓存失效导致的崩溃"),  # a question, not the title's words
    ("缓存", "fix: 修复缓存失效导致的崩溃"),  # two characters: no trigram, a substring
    ("运行迁移脚本", "数据库迁移"),  # a doc section's body
    ("ログを確認", "ログの確認"),  # Japanese
    ("login 登录页面", "feat: 添加用户登录页面"),  # mixed with a word
]


def test_cjk_queries_find_their_node_first(zh_repo: Repo) -> None:
    for query, expected in CASES:
        found = titles(zh_repo, query)
        assert found and expected in found[0], (query, found)


def test_a_query_without_cjk_is_answered_as_before(zh_repo: Repo) -> None:
    assert titles(zh_repo, "chore")[0] == "chore: 更新依赖版本"
    assert titles(zh_repo, "nothing matches xyzzy") == []


def test_the_excerpt_shows_the_matching_line(zh_repo: Repo) -> None:
    out = run_cli("query", "--no-vector", "-C", str(zh_repo.path), "迁移脚本")
    assert out.returncode == 0
    assert "上线前先运行迁移脚本" in out.stdout


def test_only_cjk_nodes_are_in_the_trigram_index_and_it_follows_changes(
    zh_repo: Repo,
) -> None:
    db = zh_repo.path / ".nexusmem" / "memory.db"
    with sqlite3.connect(db) as conn:
        # One docsize row per indexed node (reading the table itself reads the content).
        total, cjk = conn.execute(
            "select (select count(*) from nodes), (select count(*) from nodes_cjk_docsize)"
        ).fetchone()
    assert 0 < cjk < total  # the ci commit and its diff hold no CJK text
    # A rebuild (deferred indexing, triggers dropped) and an incremental sync index the same.
    zh_repo.commit("fix: 修正日志轮转", {"src/log.py": "x = 1\n"})
    assert run_cli("sync", "-q", "--no-embed", "-C", str(zh_repo.path)).returncode == 0
    assert "fix: 修正日志轮转" in titles(zh_repo, "日志轮转")[0]
    assert run_cli("sync", "-q", "--rebuild", "--no-embed", "-C", str(zh_repo.path)).returncode == 0
    assert "fix: 修正日志轮转" in titles(zh_repo, "日志轮转")[0]
    # Forgetting removes the value from both indexes, and they stay consistent.
    out = run_cli("forget", "--yes", "-C", str(zh_repo.path), "日志轮转")
    assert out.returncode == 0, out.stderr
    assert titles(zh_repo, "日志轮转") == []
    with sqlite3.connect(db) as conn:
        conn.execute("insert into nodes_cjk(nodes_cjk) values ('integrity-check')")
        conn.execute("insert into nodes_fts(nodes_fts) values ('integrity-check')")
        (left,) = conn.execute(
            "select count(*) from nodes_cjk where nodes_cjk match '日志轮'"
        ).fetchone()
    assert left == 0


async def test_a_v6_database_gets_its_cjk_nodes_indexed(tmp_path: Path) -> None:
    """Upgrading: the nodes written before the trigram index existed are indexed by v7."""
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "create table schema_migrations "
        "(version integer primary key, name text not null, applied_at integer not null)"
    )
    conn.close()
    async with open_database(path) as db:  # migrates to the latest
        pass
    conn = sqlite3.connect(path)
    conn.execute("delete from schema_migrations where version = 7")
    conn.executescript(
        "drop trigger nodes_cjk_ai; drop trigger nodes_cjk_ad; drop trigger nodes_cjk_au; "
        "drop table nodes_cjk; alter table nodes drop column cjk;"
        "insert into projects values ('p', 'p', '/p', null, 0);"
        "insert into nodes (id, project_id, kind, source, ref, title, body, created_at, signal, "
        "provenance, content_hash) values ('a', 'p', 'git_commit', 'git', 'a', "
        "'fix: 修复内存泄漏', '', 0, 0.5, 'observed', '');"
    )
    conn.commit()
    conn.close()
    async with open_database(path) as db:
        rows = await db.fetchall("select rowid from nodes_cjk where nodes_cjk match '内存泄'")
    assert len(rows) == 1


async def test_search_in_process_fuses_words_and_trigrams(
    settings: Settings, zh_repo: Repo
) -> None:
    async with open_engine(settings, zh_repo.path) as engine:
        response = await handlers.search(engine, "cache 缓存失效", vector=False)
    assert response.results[0].title.startswith("fix: 修复缓存失效")
    assert response.results[0].arms == ["bm25"]
