"""NexusMem's core: a library both adapters (``cli.py`` and ``nexusmem_mcp``) call.

Start from ``engine.open_engine`` (one repository's memory as an async context manager) and
``handlers`` (the use cases: sync, search, status, scans, projects). ``store/`` is the SQLite
schema and queries, ``collectors/`` reads git, diffs, docs and shells, ``retrieval/`` turns a
question into a ranked, packed answer, ``embed/`` talks to the embedding model.
"""

__all__: list[str] = []
