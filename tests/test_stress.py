"""Many processes on one memory at once: stdio MCP servers searching, syncs (plain and
``--auto``), both hooks appending and commits landing. Nothing is lost, nothing is locked,
nothing is stored twice. The minute-long version with 8 servers is ``bench/bench_stress.py``."""

from __future__ import annotations

from pathlib import Path

from nexusmem_core import handlers
from nexusmem_core.engine import Engine

from .conftest import Repo
from .stress import Plan, run_stress


async def test_servers_syncs_and_hooks_at_once_lose_nothing_and_never_lock(
    engine: Engine, repo: Repo, home: Path, tmp_path: Path
):
    await handlers.sync(engine)  # in use already, as memory is when the servers start
    plan = Plan(
        root=repo.path,
        home=home,
        seconds=3,
        servers=2,
        shell_writers=1,
        agent_writers=1,
        commit_every=1.0,
        logs=tmp_path / "logs",
    )
    outcome = await run_stress(plan)

    assert outcome.problems() == []
    # Everyone took part, and the audit had something to find.
    assert all(actor.latencies for actor in outcome.actors.values()), outcome.actors
    audit = outcome.audit
    assert audit.appended > 0 and audit.in_log == audit.appended
    assert audit.commits > 0
