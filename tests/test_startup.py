"""What a command pays for before it does anything: the modules a sync with nothing new and a
query import, seen from outside (``python -X importtime`` on the console script). Each module
here costs every such command its import; they are loaded when their work is there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import Repo, modules_imported_by, run_cli


def _imported(repo: Repo, *args: str) -> set[str]:
    return modules_imported_by(repo.path, *args)


# Loaded only for the work that needs them: a graph to build, a rebuild's judgements, failures
# to link (a query follows chains, a sync links them), a commit to check, an HTTP request to
# Ollama, the ollama client, the schema (see test_config_snapshot.py).
_DEFERRED = {
    "nexusmem_core.collectors.structure.graph",
    "nexusmem_core.collectors.structure.python",
    "nexusmem_core.precheck",
    "urllib.request",
    "ollama",
    "pydantic",
}


# What a sync loads only when it has that work: a model to embed
# with or judge by (vectors, the contradiction judge and the stale report it renders), an
# origin that moved (rekey), nodes to remove; and what is never a sync's: the query stack, the
# other use cases, the agent hook's recall note, the log scrubber.
_NOT_A_NOOP_SYNCS = {
    "nexusmem_core.chains",
    "nexusmem_core.collectors.agent.recall",
    "nexusmem_core.handlers.scan",
    "nexusmem_core.handlers.search",
    "nexusmem_core.handlers.status",
    "nexusmem_core.hygiene.contradictions",
    "nexusmem_core.hygiene.scrub_logs",
    "nexusmem_core.hygiene.stale",
    "nexusmem_core.render",
    "nexusmem_core.retrieval.pack",
    "nexusmem_core.retrieval.query",
    "nexusmem_core.store.rekey",
    "nexusmem_core.store.sketches",
    "nexusmem_core.store.vectors",
}


def test_a_sync_with_nothing_new_imports_only_what_it_runs(repo: Repo):
    assert run_cli("init", cwd=repo.path).returncode == 0
    assert run_cli("sync", cwd=repo.path).returncode == 0
    loaded = _imported(repo, "sync")
    assert "nexusmem_core.sync" in loaded  # the measurement sees our modules at all
    assert "nexusmem_core.hygiene.flags" in loaded  # the open flags are counted all the same
    unwanted = _DEFERRED | _NOT_A_NOOP_SYNCS
    assert not loaded & unwanted, loaded & unwanted


def test_the_first_sync_in_a_new_home_validates_no_settings(repo: Repo, home: Path):
    assert not home.exists()  # init makes it: the settings were read before it existed
    assert run_cli("init", cwd=repo.path).returncode == 0
    assert (home / "settings.checked.json").is_file()
    loaded = _imported(repo, "sync")
    assert "nexusmem_core.sync" in loaded
    assert "pydantic" not in loaded


def test_a_changed_tree_builds_its_graph_with_its_languages_extractors_alone(repo: Repo):
    assert run_cli("init", cwd=repo.path).returncode == 0
    assert run_cli("sync", cwd=repo.path).returncode == 0
    repo.commit("feat: a new module", {"src/new.py": "from src import retry\n"})
    loaded = _imported(repo, "sync")
    structure = "nexusmem_core.collectors.structure"
    assert {f"{structure}.graph", f"{structure}.python"} <= loaded
    others = {f"{structure}.{name}" for name in ("golang", "java", "javascript", "rust")}
    assert not loaded & others, loaded & others
    repo.commit("feat: a crate", {"src/lib.rs": "mod retry;\n"})
    assert f"{structure}.rust" in _imported(repo, "sync")


def test_a_query_imports_no_writer(repo: Repo):
    assert run_cli("init", cwd=repo.path).returncode == 0
    assert run_cli("sync", cwd=repo.path).returncode == 0
    loaded = _imported(repo, "query", "retry budget")
    assert "nexusmem_core.retrieval.search" in loaded
    writers = {"nexusmem_core.sync", "nexusmem_core.ingest", "nexusmem_core.collectors.diffs"}
    assert not loaded & (_DEFERRED | writers), loaded & (_DEFERRED | writers)


def test_a_query_of_a_memory_without_vectors_loads_no_vector_store(repo: Repo):
    """BM25 alone, the usual case (a model configured, nothing embedded: no Ollama): the
    query says why the vector arm is off without loading the vector store."""
    assert run_cli("init", cwd=repo.path).returncode == 0
    assert run_cli("sync", cwd=repo.path).returncode == 0
    loaded = _imported(repo, "query", "retry budget")
    answer = run_cli("query", "--json", "retry budget", cwd=repo.path)
    assert "nexusmem_core.retrieval.semantic" in loaded
    vector_store = {"nexusmem_core.store.vectors", "nexusmem_core.store.sketches"}
    assert not loaded & vector_store, loaded & vector_store
    assert json.loads(answer.stdout)["vector"].startswith("off: nothing embedded")


def test_a_use_case_named_like_its_module_is_the_use_case_whatever_came_first():
    """``handlers.search`` is the function even when ``handlers.get_node`` was looked up first:
    importing ``handlers/search.py`` binds the package's ``search`` to that module (an MCP
    client that read a resource before it searched got "'module' object is not callable")."""
    code = (
        "import inspect\n"
        "from nexusmem_core import handlers\n"
        "handlers.get_node, handlers.scan_github, handlers.status\n"
        "for use in (handlers.search, handlers.scan, handlers.status):\n"
        "    assert inspect.iscoroutinefunction(use), use\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
