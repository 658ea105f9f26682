"""Import expansion: a question naming a file weighs the history of the files it imports."""

from __future__ import annotations

from collections.abc import Callable

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine

from ..conftest import Repo, changed

LIMITS_FIX = "fix(limits): refill the bucket every second"
PROXY_FIX = "fix(proxy): send the header the gateway expects"


def app_repo(make_repo: Callable[[str], Repo]) -> Repo:
    repo = make_repo("app")
    repo.commit(
        "feat: the app",
        {
            "app/__init__.py": "",
            "app/main.py": "from app.limits import bucket\n",
            "app/limits.py": "def bucket():\n    return 1\n",
            "app/proxy.py": "HEADER = 'x'\n",
        },
    )
    repo.commit(
        f"{LIMITS_FIX}\n\nAfter a burst, requests were refused for a whole minute.",
        {"app/limits.py": "def bucket():\n    return 2\n"},
    )
    repo.commit(
        f"{PROXY_FIX}\n\nRequests were refused: the gateway refused requests without it.",
        {"app/proxy.py": "HEADER = 'y'\n"},
    )
    return repo


def expansion(engine: Engine, on: bool) -> None:
    retrieval = changed(engine.config.retrieval, import_expansion=on)
    engine.config = changed(engine.config, retrieval=retrieval)


async def commit_order(engine: Engine, query: str) -> list[str]:
    response = await handlers.search(engine, query, vector=False)
    return [r.title for r in response.results if r.kind == "git_commit"]


async def test_a_file_named_in_the_query_lends_weight_to_its_imports(settings: Settings, make_repo):
    repo = app_repo(make_repo)
    query = "why are requests to main.py refused"
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        expansion(engine, False)
        assert (await commit_order(engine, query))[:1] == [PROXY_FIX]  # the words alone
        expansion(engine, True)
        assert (await commit_order(engine, query))[:2] == [LIMITS_FIX, PROXY_FIX]
        response = await handlers.search(engine, query, vector=False)
        raised = [r for r in response.results if r.title == LIMITS_FIX]
        assert "imports" in raised[0].arms
        # A query naming no file, or a file nothing imports from, is left as it was.
        assert (await commit_order(engine, "why are requests refused"))[:1] == [PROXY_FIX]
        assert (await commit_order(engine, "requests to proxy.py refused"))[:1] == [PROXY_FIX]
