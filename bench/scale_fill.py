"""Synthetic memory for bench_scale.py: shell and agent commands and doc sections, built from a
synced repository's own commits and written through the store's API.

A synced 100k-commit repository holds about 100k commits and, with diffs read for every
commit, a few hundred thousand file diffs. A repository that old also has years of commands
and documentation, which its git history does not give. This module adds them until the
database holds the wanted number of nodes:

- Commands as the shell hook and the Claude Code hook record them (``hook_node`` and
  ``agent_node`` build the nodes), in sessions: tests and type checks of the repository's own
  files and functions, edits, greps, ``git commit -m "<a real subject>"``. About one test in
  four fails, is followed by an edit (for the agent, the next command's ``edited``), and is
  retried; most retries pass, so ``chains.link_failures`` finds failure -> fix links.
- Doc sections (``ingest.doc_nodes`` parses the Markdown): design notes whose headings are
  commit subjects and whose paragraphs are commit bodies.

Timestamps spread over the repository's own history. Everything is written in one transaction
with the FTS index built once at the end (``deferred_index``: every row written is new), and
the failure links are made as ``sync --link-failures`` makes them.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem_core import chains, ingest
from nexusmem_core.collectors.agent.nodes import agent_node
from nexusmem_core.collectors.shell.nodes import hook_node
from nexusmem_core.engine import Engine
from nexusmem_core.models import Node
from nexusmem_core.store.fts import deferred_index
from nexusmem_core.store.nodes import upsert_nodes

__all__ = ["Corpus", "FillReport", "fill"]

AGENT_SHARE = 0.35  # of the sessions: run by the coding agent, the rest typed at a prompt
DOC_SHARE = 0.15  # of the nodes added: doc sections
SECTIONS_PER_DOC = 8
BATCH = 2000
DIRS = ["", "", "", "src", "tests", "docs"]
SHELLS = ["zsh", "zsh", "bash", "fish"]


@dataclass
class Corpus:
    """What the repository itself talks about: subjects, explaining bodies, paths, functions."""

    subjects: list[str]
    bodies: list[str]
    paths: list[str]
    functions: list[str]
    shas: list[str]
    first_ts: int
    last_ts: int

    @classmethod
    async def load(cls, engine: Engine, sample: int = 20_000) -> Corpus:
        db, pid = engine.db, engine.project_id
        (count,) = await db.fetchone(
            "select count(*) from nodes where project_id = ? and kind = 'git_commit'", (pid,)
        ) or (0,)
        step = max(1, count // sample)
        rows = await db.fetchall(
            "select title, body, ref, ts from nodes where project_id = ? and kind = 'git_commit' "
            "and seq % ? = 0",
            (pid, step),
        )
        paths = [
            p for (p,) in await db.fetchall("select distinct path from node_files order by path")
        ]
        bodies = [b.split("\n", 1)[1].strip() for _, b, _, _ in rows if len(b) > 200]
        functions = sorted({f for b in bodies for f in re.findall(r"\b([a-z_]{4,})\(\)", b)})
        stamps = [ts for *_, ts in rows if ts]
        return cls(
            subjects=[t for t, *_ in rows],
            bodies=bodies,
            paths=paths,
            functions=functions or ["main"],
            shas=[ref for _, _, ref, _ in rows],
            first_ts=min(stamps),
            last_ts=max(stamps),
        )


@dataclass
class Command:
    ts: float
    cmd: str
    cwd: str
    exit: int
    session: str
    agent: bool
    edited: list[str] = field(default_factory=list)
    error: str | None = None


class Sessions:
    """Commands in sessions, oldest first, with failures that a later run fixes."""

    def __init__(self, corpus: Corpus, root: Path, count: int, rng: random.Random) -> None:
        self.c, self.root, self.rng = corpus, root, rng
        self.gap = (corpus.last_ts - corpus.first_ts) / max(1, count)  # mean seconds apart
        self.clock = float(corpus.first_ts)

    def _pick(self, items: list[str]) -> str:
        return self.rng.choice(items)

    def _tests(self) -> list[str]:
        return [p for p in self.c.paths if p.startswith("tests/")] or self.c.paths

    def checking(self) -> str:
        """A command that can fail: a test run or a check of one of the repository's files."""
        r, path, func = self.rng, self._pick(self.c.paths), self._pick(self.c.functions)
        return r.choice(
            [
                f"pytest {self._pick(self._tests())} -k {func}",
                f"pytest {self._pick(self._tests())} -x -q",
                f"mypy {path}",
                f"ruff check {path}",
                "make test",
                "tox -e py311",
                f"python -m orbit.cli {func.replace('_', '-')}",
            ]
        )

    def routine(self) -> str:
        r, path, func = self.rng, self._pick(self.c.paths), self._pick(self.c.functions)
        subject = self._pick(self.c.subjects).replace('"', "'")
        return r.choice(
            [
                "git status",
                f"git diff {path}",
                f"git log --oneline -- {path}",
                f"git show {self._pick(self.c.shas)[:7]} --stat",
                f"grep -rn {func} src",
                f"cat {path}",
                f'git commit -am "{subject}"',
                f"git switch -c fix/{func.replace('_', '-')}",
                "git pull --rebase",
            ]
        )

    def edit(self) -> tuple[str, str]:
        path, func = self._pick(self.c.paths), self._pick(self.c.functions)
        return self.rng.choice([f"vim {path}", f"sed -i 's/{func}/{func}_v2/' {path}"]), path

    def _tick(self) -> float:
        self.clock += self.rng.expovariate(1 / self.gap)
        return self.clock

    def __iter__(self) -> Iterator[Command]:
        r = self.rng
        while True:
            session, agent = f"{r.getrandbits(48):012x}", r.random() < AGENT_SHARE
            cwd = str(self.root / r.choice(DIRS)).rstrip("/")
            for _ in range(r.randint(8, 40)):
                if r.random() < 0.7:
                    yield Command(self._tick(), self.routine(), cwd, 0, session, agent)
                    continue
                cmd = self.checking()
                if r.random() > 0.25:
                    yield Command(self._tick(), cmd, cwd, 0, session, agent)
                    continue
                code, error = r.choice([1, 1, 2]), f"AssertionError: {self._pick(self.c.subjects)}"
                yield Command(self._tick(), cmd, cwd, code, session, agent, error=error)
                yield from self._fix(cmd, cwd, session, agent)

    def _fix(self, cmd: str, cwd: str, session: str, agent: bool) -> Iterator[Command]:
        """Edits, then the failed command again: it passes seven times in ten."""
        r, edited = self.rng, []
        for _ in range(r.randint(1, 2)):
            text, path = self.edit()
            if agent:
                edited.append(path)  # the agent edits with a tool, not a command
            else:
                yield Command(self._tick(), text, cwd, 0, session, agent)
        passed = r.random() < 0.7
        error = None if passed else "AssertionError: still failing"
        yield Command(self._tick(), cmd, cwd, 0 if passed else 1, session, agent, edited, error)


def _hash(cmd: str) -> str:
    return hashlib.sha256(cmd.encode()).hexdigest()


def command_node(pid: str, c: Command, root: str, limit: int, rng: random.Random) -> Node:
    """The node the shell hook's or the agent hook's record of ``c`` becomes at sync."""
    ident = f"{rng.getrandbits(96):024x}"
    if c.agent:
        record: dict[str, Any] = {
            "id": ident,
            "cmd": c.cmd,
            "cwd": c.cwd,
            "ts": int(c.ts),
            "exit": c.exit,
            "outcome": "failed" if c.exit else None,
            "edited": c.edited,
            "error": c.error if c.exit else None,
            "session": c.session,
            "tool_use_id": f"toolu_{ident}",
            "cmd_hash": _hash(c.cmd),
        }
        return agent_node(pid, record, limit, root)
    record = {
        "v": 1,
        "id": ident,
        "shell": rng.choice(SHELLS),
        "session": c.session,
        "cwd": c.cwd,
        "exit": c.exit,
        "start": round(c.ts, 3),
        "duration": round(rng.lognormvariate(-1.0, 1.5), 3),
        "cmd": c.cmd,
        "cmd_hash": _hash(c.cmd),
        "redactions": 0,
    }
    return hook_node(pid, record, limit, root)


def doc_file(corpus: Corpus, number: int, rng: random.Random) -> ingest.DocFile:
    """A design-notes page: a commit subject per heading, commit bodies as its paragraphs."""
    lines = [f"# Notes {number}: {rng.choice(corpus.subjects)}", ""]
    for _ in range(SECTIONS_PER_DOC):
        heading = rng.choice(corpus.subjects).split(": ", 1)[-1]
        lines += [f"## {heading}", ""]
        for body in rng.sample(corpus.bodies, rng.randint(1, 2)):
            lines += [body, ""]
        lines += [f"See `{rng.choice(corpus.paths)}`.", ""]
    text = "\n".join(lines)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return ingest.DocFile(f"docs/notes/{number:05d}.md", text, digest, corpus.first_ts)


@dataclass
class FillReport:
    added: dict[str, int] = field(default_factory=dict)  # by source
    links: int = 0


async def fill(engine: Engine, target: int, seed: int) -> FillReport:
    """Add commands and doc sections until the project holds ``target`` nodes."""
    db, pid = engine.db, engine.project_id
    limit = engine.config.limits.max_body_chars
    (have,) = await db.fetchone("select count(*) from nodes where project_id = ?", (pid,)) or (0,)
    report = FillReport()
    wanted = target - int(have)
    if wanted <= 0:
        return report
    rng = random.Random(seed)
    corpus = await Corpus.load(engine)
    root = str(engine.repo.root)
    docs = int(wanted * DOC_SHARE)
    commands = iter(Sessions(corpus, Path(root), wanted - docs, rng))

    def nodes() -> Iterator[Node]:
        made, number = 0, 0
        while made < docs:
            number += 1
            ts = rng.randint(corpus.first_ts, corpus.last_ts)
            for node in ingest.doc_nodes(pid, doc_file(corpus, number, rng), ts, limit):
                if made < docs:
                    made += 1
                    yield node
        for _ in range(wanted - docs):
            yield command_node(pid, next(commands), root, limit, rng)

    async with db.transaction():
        async with deferred_index(db):
            batch: list[Node] = []
            for node in nodes():
                batch.append(node)
                report.added[node.source] = report.added.get(node.source, 0) + 1
                if len(batch) == BATCH:
                    await upsert_nodes(db, batch)
                    batch = []
            await upsert_nodes(db, batch)
        report.links = (await chains.link_failures(db, pid)).retry
    return report
