"""Build the evaluation fixture: the "photodrop" git repository and its shell hook log.

    .venv/bin/python bench/eval/fixture.py OUT_DIR [--home HOME]

Deterministic: the same FIXTURE_VERSION and sources give the same commits (same shas), the
same doc files and the same hook-log lines (record ids and command hashes included; the hook
key is fixed). The history is ``story.py`` (hand-written, the facts the queries ask about)
woven with ``filler.py`` (everyday commits and commands) on one timeline, March to September
2026. Commands go to ``HOME/shell-history.jsonl`` exactly as the shell hook writes them
(``record.build_record`` + ``hooklog.append``), with their cwd inside the repository (a few
outside it, which sync must leave out). The coding agents' sessions (``story.AGENT_SESSIONS``)
go through the agent hook's own handling, each payload in its agent's format (``agents.py``),
into ``HOME/agent-events.jsonl``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import agents  # noqa: E402
import filler  # noqa: E402
import story  # noqa: E402
from model import Commit, Edit, Shell, ts  # noqa: E402

__all__ = ["FIXTURE_VERSION", "build", "source_digest"]

FIXTURE_VERSION = 2  # bump when the fixture's output changes (2: the agents' sessions)
SEED = 20260302
N_FILLER = 112  # snippets first (as their dates allow), dependency bumps for the rest
N_ROUTINE_SESSIONS = 26
START, END = "2026-03-02 12:00", "2026-09-30 18:00"
REPO_NAME = "photodrop"
SHELLS = {"ana": "zsh", "ben": "bash", "chen": "zsh", "dana": "fish"}


def source_digest() -> str:
    """A hash of the files that define the fixture: a cache is stale when they change."""
    h = hashlib.sha256(str(FIXTURE_VERSION).encode())
    for name in ("model.py", "story.py", "filler.py", "fixture.py", "agents.py"):
        h.update((HERE / name).read_bytes())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------------------------ git


class Git:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root),
            "LANG": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
        }

    def __call__(
        self, *args: str, env: dict[str, str] | None = None, input: str | None = None
    ) -> str:
        out = subprocess.run(
            ["git", *args],
            cwd=self.root,
            env={**self.env, **(env or {})},
            input=input,
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr}")
        return out.stdout

    def commit(self, message: str, author: str, epoch: int, committer: str | None = None) -> str:
        name, email, tz = story.AUTHORS[author]
        cname, cemail, _ = story.AUTHORS[committer or author]
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": f"@{epoch} {tz}",
            "GIT_COMMITTER_NAME": cname,
            "GIT_COMMITTER_EMAIL": cemail,
            "GIT_COMMITTER_DATE": f"@{epoch} {tz}",
        }
        self("add", "-A")
        self("commit", "-q", "--allow-empty", "--no-verify", "-F", "-", env=env, input=message)
        return self("rev-parse", "HEAD").strip()


# ----------------------------------------------------------------------------- work tree


class Tree:
    """The work tree's files as text, and the managed ones rendered from state."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, str] = {}
        self.deps: dict[str, str] = {k: f"=={v}" for k, v in filler.PYTHON_DEPS.items()}
        self.npm: dict[str, str] = {}
        self.version = "0.1.0"
        self.docs: dict[str, dict[str, str]] = {}

    def apply(self, edit: Edit) -> None:
        path = edit.path
        if edit.op == "write":
            self.files[path] = edit.text
        elif edit.op == "append":
            old = self.files.get(path, "")
            gap = "\n\n\n" if path.endswith(".py") else "\n\n"
            self.files[path] = (old.rstrip("\n") + gap if old else "") + edit.text
        elif edit.op == "replace":
            text = self.files[path]
            count = text.count(edit.text)
            if count != 1:
                raise ValueError(f"{path}: expected one match of {edit.text!r}, found {count}")
            self.files[path] = text.replace(edit.text, edit.new)
        elif edit.op == "delete":
            del self.files[path]
        else:  # pragma: no cover
            raise ValueError(edit.op)

    def add_docs(self, keys: Iterable[str]) -> None:
        for key in keys:
            path, heading = key.split("#", 1)
            doc = story.DOCS[path]
            section = next(s for s in doc.sections if s.heading == heading)
            self.docs.setdefault(path, {})[heading] = section.text

    def set_deps(self, deps: Iterable[tuple[str, str | None]]) -> None:
        for name, spec in deps:
            target = self.npm if name.startswith("npm:") else self.deps
            key = name.removeprefix("npm:")
            if spec is None:
                target.pop(key, None)
            else:
                target[key] = spec.removeprefix("==") if target is self.npm else spec

    def render(self, epoch: int) -> None:
        """Write every file whose content differs from the disk; delete the ones dropped."""
        files = dict(self.files)
        files["pyproject.toml"] = self._pyproject()
        if epoch >= ts(filler.FRONTEND_FROM):
            if not self.npm:
                self.npm = dict(filler.NPM_DEPS)
            files["frontend/package.json"] = self._package_json()
        for path, present in self.docs.items():
            files[path] = story.DOCS[path].render(present)
        for path in list(self._on_disk()):
            if path not in files:
                (self.root / path).unlink()
        for path, text in files.items():
            target = self.root / path
            if target.exists() and target.read_text() == text:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)

    def _on_disk(self) -> Iterable[str]:
        for p in self.root.rglob("*"):
            if p.is_file() and ".git" not in p.relative_to(self.root).parts[:1]:
                yield p.relative_to(self.root).as_posix()

    def _pyproject(self) -> str:
        deps = "\n".join(f'    "{n}{s}",' for n, s in sorted(self.deps.items()))
        return (
            "[project]\n"
            f'name = "photodrop"\nversion = "{self.version}"\nrequires-python = ">=3.12"\n'
            f"dependencies = [\n{deps}\n]\n\n"
            '[project.optional-dependencies]\ndev = ["pytest>=8", "ruff>=0.4", "locust>=2.24"]\n\n'
            "[tool.ruff]\nline-length = 100\n"
        )

    def _package_json(self) -> str:
        runtime = {k: f"^{v}" for k, v in sorted(self.npm.items()) if k.startswith("react")}
        dev = {k: f"^{v}" for k, v in sorted(self.npm.items()) if not k.startswith("react")}
        return (
            json.dumps(
                {
                    "name": "photodrop-web",
                    "private": True,
                    "type": "module",
                    "scripts": {
                        "dev": "vite",
                        "build": "tsc && vite build",
                        "typecheck": "tsc --noEmit",
                        "test": "vitest run",
                        "lint": "eslint src",
                    },
                    "dependencies": runtime,
                    "devDependencies": dev,
                },
                indent=2,
            )
            + "\n"
        )


# ------------------------------------------------------------------------------- timeline


def _weekday_times(rng: random.Random, count: int, taken: set[int]) -> list[int]:
    lo, hi = ts(START), ts(END)
    out: set[int] = set()
    while len(out) < count:
        day = lo + rng.randrange((hi - lo) // 86_400) * 86_400
        if (day // 86_400 + 4) % 7 in (5, 6):
            continue
        when = day - day % 86_400 + rng.randrange(7 * 3600, 17 * 3600)
        when -= when % 60
        if all(abs(when - t) > 1800 for t in taken | out):
            out.add(when)
    return sorted(out)


def _stamp(epoch: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(epoch))


def timeline(rng: random.Random) -> list[Commit]:
    """Story, releases and filler commits, in time order."""
    commits = list(story.STORY)
    for when, version in filler.RELEASES:
        commits.append(
            Commit(
                when,
                "ben",
                f"chore(release): {version}",
                docs=tuple(story.DOCS["CHANGELOG.md"].key(h) for h in ("Changelog", version)),
                deps=(("__version__", version),),
            )
        )
    taken = {ts(c.when) for c in commits}
    times = _weekday_times(rng, N_FILLER, taken)
    snippets = list(filler.SNIPPETS)
    rng.shuffle(snippets)
    bump_times = []
    team = ["ana", "ben", "chen", "dana"]
    for epoch in times:
        day = _stamp(epoch)[:10]
        ready = [s for s in snippets if s.not_before <= day]
        if ready and rng.random() < 0.85:
            snippet = ready[0]
            snippets.remove(snippet)
            subject = snippet.subject
            if rng.random() < 0.12:
                subject = rng.choice(filler.PLAIN_SUBJECTS)
            commits.append(
                Commit(
                    _stamp(epoch),
                    rng.choice(team),
                    subject,
                    snippet.body,
                    edits=(Edit("append", snippet.path, snippet.code),),
                )
            )
        else:
            bump_times.append(_stamp(epoch))
    commits += filler.bump_commits(bump_times, rng)
    for left in snippets:  # whatever the dates did not place goes in at the end of its week
        epoch = ts(left.not_before + " 16:00") + 3 * 86_400
        commits.append(
            Commit(
                _stamp(epoch),
                rng.choice(team),
                left.subject,
                left.body,
                edits=(Edit("append", left.path, left.code),),
            )
        )
    commits.sort(key=lambda c: ts(c.when))
    return commits


# ------------------------------------------------------------------------------------ build


def build(dest: Path, home: Path | None = None, quiet: bool = True) -> dict[str, Any]:
    """Build the repository in ``dest`` (replaced) and, with ``home``, its hook log there."""
    started = time.perf_counter()
    rng = random.Random(SEED)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    git = Git(dest)
    git("init", "-q", "-b", "main")
    git("config", "commit.gpgsign", "false")
    tree = Tree(dest)
    shas: dict[str, str] = {}
    merges = 0
    commits = timeline(rng)
    for commit in commits:
        epoch = ts(commit.when)
        for edit in commit.edits:
            tree.apply(edit)
        version = dict(commit.deps).get("__version__")
        if version:
            tree.version = version
            tree.files["src/photodrop/__init__.py"] = f'__version__ = "{version}"\n'
        tree.set_deps((n, s) for n, s in commit.deps if n != "__version__")
        tree.add_docs(commit.docs)
        message = commit.subject
        body = commit.body
        if commit.revert_of:
            body = f"This reverts commit {shas[commit.revert_of]}.\n\n{body}"
        if body:
            message += "\n\n" + body
        message += "\n"
        if commit.pr:
            branch, number = commit.pr
            git("checkout", "-q", "-b", branch)
        tree.render(epoch)
        sha = git.commit(message, commit.author, epoch)
        if commit.subject in shas:
            shas[commit.subject] = "(ambiguous)"
        else:
            shas[commit.subject] = sha
        if commit.pr:
            git("checkout", "-q", "main")
            name, email, tz = story.AUTHORS[commit.author]
            merge_epoch = epoch + 25 * 60
            env = {
                "GIT_AUTHOR_NAME": name,
                "GIT_AUTHOR_EMAIL": email,
                "GIT_AUTHOR_DATE": f"@{merge_epoch} {tz}",
                "GIT_COMMITTER_NAME": "GitHub",
                "GIT_COMMITTER_EMAIL": "noreply@github.com",
                "GIT_COMMITTER_DATE": f"@{merge_epoch} {tz}",
            }
            git(
                "merge",
                "-q",
                "--no-ff",
                "-m",
                f"Merge pull request #{number} from {branch}\n\n{commit.subject}",
                branch,
                env=env,
            )
            git("branch", "-q", "-d", branch)
            merges += 1
    head = git("rev-parse", "HEAD").strip()
    records = write_shell_log(home, dest, rng) if home is not None else 0
    payloads = write_agent_log(home, dest) if home is not None else {}
    doc_sections = sum(len(v) for v in tree.docs.values())
    stats = {
        "fixture_version": FIXTURE_VERSION,
        "digest": source_digest(),
        "head": head,
        "commits": len(commits) + merges,
        "merges": merges,
        "doc_files": len(tree.docs),
        "doc_sections": doc_sections,
        "shell_records": records,
        "agent_payloads": payloads,
        "seconds": round(time.perf_counter() - started, 2),
    }
    if not quiet:
        print(json.dumps(stats), file=sys.stderr)
    return stats


def _author_of(session: Shell) -> str:
    name = session.session.split("-", 1)[0]
    return name if name in SHELLS else "ben"


def write_shell_log(home: Path, repo: Path, rng: random.Random) -> int:
    """Every session's commands as hook records, in time order, into ``home``'s hook log."""
    from nexusmem_core.collectors.shell import hooklog
    from nexusmem_core.collectors.shell.record import build_record
    from nexusmem_core.trust import KEY_FILE

    home.mkdir(parents=True, exist_ok=True)
    (home / hooklog.LOG_FILE).unlink(missing_ok=True)
    (home / KEY_FILE).write_bytes(hashlib.sha256(b"nexusmem-eval-fixture").digest())
    os.chmod(home / KEY_FILE, 0o600)
    sessions = list(story.SESSIONS) + filler.filler_sessions(
        rng, N_ROUTINE_SESSIONS, "2026-03-09 00:00", "2026-09-28 00:00"
    )
    entries = []
    for s_index, session in enumerate(sessions):
        clock = float(ts(session.when))
        who = _author_of(session)
        for c_index, cmd in enumerate(session.cmds):
            clock += cmd.after * 60
            entries.append((clock, s_index, c_index, session, cmd, who))
            clock += cmd.duration
    # A few commands typed elsewhere: the hook log is per user, sync keeps only this repository's.
    outside = Path(repo).parent / "elsewhere"
    for i, text in enumerate(("ls -la", "npm whoami", "git clone git@github.com:ana/dotfiles.git")):
        entries.append((float(ts("2026-05-01 10:00") + i * 600), -1, i, None, text, "ana"))
    entries.sort(key=lambda e: (e[0], e[1], e[2]))
    written = 0
    for clock, s_index, c_index, session, cmd, who in entries:
        if session is None:
            text, code, cwd, duration, sid = cmd, 0, outside, 0.1, "elsewhere"
        else:
            text, code, duration = cmd.cmd, cmd.exit, cmd.duration
            cwd = repo / cmd.cwd if cmd.cwd else repo
            sid = session.session or f"s{s_index}"
        record = build_record(
            text,
            {
                "shell": SHELLS.get(who, "bash"),
                "exit": str(code),
                "cwd": str(cwd),
                "start": f"{clock:.3f}",
                "duration": f"{duration:.3f}",
                "session": hashlib.sha256(sid.encode()).hexdigest()[:12],
            },
            home,
        )
        assert record is not None
        record["id"] = hashlib.sha256(f"{s_index}:{c_index}:{text}".encode()).hexdigest()[:24]
        hooklog.append(home, record)
        written += 1
    return written


def write_agent_log(home: Path, repo: Path) -> dict[str, int]:
    """The agents' sessions through their hooks. The hook records only in a repository where
    NexusMem has run: the workspace is made first (the evaluation makes a fresh one)."""
    from nexusmem_core.collectors.agent import AGENT_LOG

    cli = HERE.parent.parent / "cli.py"
    env = {**os.environ, "NEXUSMEM_HOME": str(home), "NEXUSMEM_VECTOR": "off"}
    subprocess.run(
        [sys.executable, str(cli), "init", "-C", str(repo)],
        env=env,
        check=True,
        capture_output=True,
    )
    (home / AGENT_LOG).unlink(missing_ok=True)
    return agents.replay(story.AGENT_SESSIONS, repo, home)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory for the repository (replaced)")
    parser.add_argument("--home", type=Path, help="NEXUSMEM_HOME to write the hook log into")
    args = parser.parse_args()
    stats = build(args.out, args.home, quiet=True)
    print(json.dumps(stats, indent=2))


if __name__ == "__main__":
    main()
