"""``nexusmem sync`` killed with SIGKILL anywhere: a first sync, an incremental one with new
commits and hook lines, a rebuild, a post-commit ``--auto`` and the embedding pass. After
each kill, status reads a consistent database and the next sync ends where an uninterrupted
run does. A hundred kills: ``bench/bench_crash.py``."""

from __future__ import annotations

import json
import random
from pathlib import Path

from .conftest import Repo
from .crash import Memory, crash_loop, delays, prepare, reference, scenarios
from .fake_ollama import FakeOllama

# Eight kills; the embedding pass, many small transactions, gets the most.
KILLS = {"first sync": 2, "incremental": 1, "rebuild": 1, "--auto": 1, "embedding": 3}


def _embed_in_small_batches(root: Path) -> None:
    """Many short embedding transactions: a kill lands between two of them, or in one."""
    config = root / ".nexusmem" / "config.json"
    data = json.loads(config.read_text())
    data["embed"]["batch"] = 2
    config.write_text(json.dumps(data))


def test_a_sync_killed_anywhere_leaves_memory_the_next_sync_completes(
    repo: Repo, home: Path, tmp_path: Path
):
    results = []
    with FakeOllama() as fake:
        fake.mode, fake.delay = "slow", 0.02  # every embedding request takes a moment
        memory = Memory(repo.path, home, tmp_path / "snapshots", in_process=True)
        prepare(memory, new_commits=2, lines=8)
        _embed_in_small_batches(repo.path)
        ollama = (("OLLAMA_HOST", fake.url), ("NEXUSMEM_EMBED_MODEL", fake.model))
        rng = random.Random(8)
        for scenario in scenarios(ollama):
            ref = reference(memory, scenario)
            kills = delays(ref, KILLS[scenario.name], rng)
            results += crash_loop(memory, scenario, ref, kills)
        assert ref.vectors, "the embedding reference embedded nothing"

    assert [(it.scenario, it.delay, it.problems) for it in results if it.problems] == []
    assert len(results) == sum(KILLS.values())
    assert any(not it.finished for it in results)  # killed mid-run, not after it ended
