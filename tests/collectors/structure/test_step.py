"""The import graph through sync, status and scan-structure, as a user meets it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine

from ...conftest import Repo, changed, run_cli

FILES = {
    "app/__init__.py": "",
    "app/main.py": "from app import db\nfrom app.limits import bucket\n",
    "app/db.py": "",
    "app/limits.py": "def bucket():\n    pass\n",
}


def app_repo(make_repo: Callable[[str], Repo]) -> Repo:
    repo = make_repo("app")
    repo.commit("feat: the app", FILES)
    return repo


async def stored(engine: Engine) -> set[tuple[str, str, str]]:
    rows = await engine.db.fetchall(
        "select src, dst, lang from import_edges where project_id = ?", (engine.project_id,)
    )
    return {tuple(row) for row in rows}


async def test_sync_rebuilds_the_graph_when_an_import_goes(settings: Settings, make_repo):
    repo = app_repo(make_repo)
    async with open_engine(settings, repo.path, create=True) as engine:
        report = await handlers.sync(engine, embed=False)
        assert report.import_edges == 2
        assert await stored(engine) == {
            ("app/main.py", "app/db.py", "python"),
            ("app/main.py", "app/limits.py", "python"),
        }
        repo.write("app/main.py", "from app import db\n")  # not even committed yet
        report = await handlers.sync(engine, embed=False)
        assert report.import_edges == 1
        assert await stored(engine) == {("app/main.py", "app/db.py", "python")}
        report = await handlers.sync(engine, embed=False, rebuild=True)
        assert await stored(engine) == {("app/main.py", "app/db.py", "python")}


async def test_an_unchanged_tree_is_not_read_again(settings: Settings, make_repo):
    repo = app_repo(make_repo)
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        # Had the second sync built the graph again, these rows would be back.
        await engine.db.execute("delete from import_edges where dst = 'app/db.py'")
        await handlers.sync(engine, embed=False)
        assert await stored(engine) == {("app/main.py", "app/limits.py", "python")}
        repo.write("app/db.py", "import app.limits\n")
        await handlers.sync(engine, embed=False)
        assert len(await stored(engine)) == 3


async def test_a_forgotten_path_leaves_the_graph_and_stays_out(settings: Settings, make_repo):
    repo = app_repo(make_repo)
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        await handlers.forget(engine, "limits", apply=True)
        assert await stored(engine) == {("app/main.py", "app/db.py", "python")}
        repo.write("app/other.py", "from app import limits\n")  # a change: the graph is rebuilt
        await handlers.sync(engine, embed=False)
        assert await stored(engine) == {("app/main.py", "app/db.py", "python")}


async def test_the_source_can_be_turned_off(settings: Settings, make_repo):
    repo = app_repo(make_repo)
    async with open_engine(settings, repo.path, create=True) as engine:
        sources = engine.config.sources
        off = changed(sources.structure, enabled=False)
        engine.config = changed(engine.config, sources=changed(sources, structure=off))
        report = await handlers.sync(engine, embed=False)
        assert report.import_edges == 0 and await stored(engine) == set()
        status = await handlers.status(engine)
        assert status.structure == "off (sources.structure.enabled is false)"


def test_status_shows_the_edges_by_language(make_repo):
    repo = app_repo(make_repo)
    repo.write("web/a.ts", 'import "./b";\n')
    repo.write("web/b.ts", "")
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    out = run_cli("status", "-C", str(repo.path)).stdout
    assert "imports    3 file-to-file import edge(s): python 2, typescript 1" in out


def test_scan_structure_prints_edges_and_writes_nothing(make_repo):
    repo = app_repo(make_repo)
    done = run_cli("scan-structure", "-C", str(repo.path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "app/main.py -> app/db.py (python)",
        "app/main.py -> app/limits.py (python)",
    ]
    assert "2 import edge(s) (python 2) among 4 source file(s)" in done.stderr
    assert not (Path(repo.path) / ".nexusmem").exists()
    limited = run_cli("scan-structure", "--limit", "1", "--json", "-C", str(repo.path))
    assert '"edge_count": 2' in limited.stdout and limited.stdout.count('"src"') == 1
