"""Check a labelled question file of the real set against its repository.

    python3 bench/eval/real/check.py bench/eval/real/click.json [--clone /tmp/corpora/click]

Reports, one line each, what would make a label unfit to score with:

- a target that is not a natural reference of something in the repository: a full sha of a
  commit reachable from HEAD, ``<sha>:<path>`` of a file that commit changed, or
  ``<path>#<heading>`` of a heading the file has at HEAD;
- a query that shares three consecutive words with a target's subject (the commit subject, or
  the heading of a doc target): it would measure copying, not retrieval;
- a "recent" target outside the 200 newest non-merge commits (the diff window), a "revert"
  with fewer than two targets, duplicate ids or target sets;
- fewer than 15% of the set in a kind, or of agent-phrased queries.

A set written the way an outside judge writes one (``"style": "outside"``, issue 48) is held to
more: 30 questions or more; at least a third phrased in the words of a symptom (``"symptom":
true``: what the user saw, not what the code names) and a third as an agent mid-task
(``"agent": true``); at least a fifth of its commit questions answered only by the target's
body (``"body": true``); a revert kind of at least two where the history has few reverts.

Standard library only, so the question writers can run it without the project installed.
Exit status 1 when anything is reported.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

KINDS = ("why", "broke", "recent", "howto", "release", "revert")
DIFF_WINDOW = 200
_WORD = re.compile(r"\w+")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_ERRORISH = re.compile(r"(Error|Exception|panic|error\[|error:|Traceback|FAIL|warning:)")


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def shared_trigram(query: str, subject: str) -> str | None:
    """The first three consecutive words the two texts share, or None."""
    q, s = words(query), words(subject)
    grams = {tuple(s[i : i + 3]) for i in range(len(s) - 2)}
    for i in range(len(q) - 2):
        if tuple(q[i : i + 3]) in grams:
            return " ".join(q[i : i + 3])
    return None


class Repo:
    """The few git facts the checks need, read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        log = self._git("log", "--format=%H%x00%s%x00%P")
        self.subjects: dict[str, str] = {}
        self.parents: dict[str, int] = {}
        for line in log.split("\n"):
            if not line:
                continue
            sha, subject, parents = line.split("\x00")
            self.subjects[sha] = subject
            self.parents[sha] = len(parents.split())
        recent = self._git("log", "--no-merges", f"-n{DIFF_WINDOW}", "--format=%H")
        self.recent = set(recent.split())
        self._headings: dict[str, set[str] | None] = {}

    def _git(self, *args: str) -> str:
        # Bytes, split on "\n" alone: a subject may hold a carriage return (preact's ed15863e),
        # which text mode would read as a line break.
        done = subprocess.run(
            ["git", "-C", str(self.root), *args], capture_output=True, check=False
        )
        return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""

    def changed(self, sha: str) -> set[str]:
        return set(self._git("show", "--format=", "--name-only", sha).split("\n")) - {""}

    def headings(self, path: str) -> set[str] | None:
        """Every line of the file at HEAD that can be a heading, as a heading's text."""
        if path not in self._headings:
            text = self._git("show", f"HEAD:{path}")
            if not text:
                self._headings[path] = None
            else:
                lines = text.splitlines()
                found = {ln.lstrip("#").strip().rstrip("#").strip() for ln in lines}
                self._headings[path] = {h for h in found if h}
        return self._headings[path]


def subject_of(repo: Repo, target: str) -> str:
    if "#" in target and not _SHA.match(target.split(":", 1)[0]):
        return target.split("#", 1)[1]
    return repo.subjects.get(target.split(":", 1)[0], "")


def check_target(repo: Repo, target: str) -> str | None:
    head, _, rest = target.partition(":")
    if _SHA.match(head):
        if head not in repo.subjects:
            return f"{head} is not a commit reachable from HEAD"
        if repo.parents[head] > 1:
            return f"{head} is a merge commit: name the commit it merged"
        if rest and rest not in repo.changed(head):
            return f"{head} does not change {rest}"
        return None
    path, hash_, heading = target.partition("#")
    if not hash_ or not heading:
        return f"{target!r} is neither a sha, <sha>:<path>, nor <path>#<heading>"
    found = repo.headings(path)
    if found is None:
        return f"{path} does not exist at HEAD"
    if heading.strip() not in found:
        return f"{path} has no heading {heading!r} at HEAD"
    return None


def check(data: dict, repo: Repo) -> list[str]:
    problems: list[str] = []
    queries = data.get("queries", [])
    ids = Counter(q.get("id") for q in queries)
    problems += [f"id {i!r} is used {n} times" for i, n in ids.items() if n > 1]
    sets = Counter(tuple(sorted(q.get("targets", []))) for q in queries)
    problems += [f"target set {list(s)} is used {n} times" for s, n in sets.items() if n > 1]
    for q in queries:
        qid, kind, text = q.get("id"), q.get("kind"), q.get("query", "")
        if kind not in KINDS:
            problems.append(f"{qid}: kind {kind!r} is not one of {', '.join(KINDS)}")
        if not q.get("note"):
            problems.append(f"{qid}: no note")
        targets = q.get("targets") or []
        if not targets:
            problems.append(f"{qid}: no target")
        for target in targets:
            if why := check_target(repo, target):
                problems.append(f"{qid}: {why}")
                continue
            if gram := shared_trigram(text, subject_of(repo, target)):
                problems.append(f"{qid}: shares {gram!r} with the subject of {target}")
        if kind == "recent":
            shas = [t.split(":", 1)[0] for t in targets if _SHA.match(t.split(":", 1)[0])]
            if not shas or any(s not in repo.recent for s in shas):
                problems.append(f"{qid}: a recent target must be among the {DIFF_WINDOW} newest")
        if kind == "revert" and len(targets) < 2:
            problems.append(f"{qid}: a revert names the revert and the commit it reverts")
    outside = data.get("style") == "outside"
    problems += _shares(queries, outside)
    if outside:
        problems += _outside(queries)
    return problems


def _outside(queries: list[dict]) -> list[str]:
    """What a set in an outside judge's style must also hold (see the module text)."""
    n = len(queries)
    notes = [f"an outside-style set has {n} questions (< 30)"] if n < 30 else []
    for flag, what in (("symptom", "in a symptom's words"), ("agent", "agent-phrased")):
        count = sum(1 for q in queries if q.get(flag))
        if count * 3 < n:
            notes.append(f"{what}: {count} of {n} (< a third)")
    commits = [q for q in queries if q.get("kind") in ("why", "broke", "recent")]
    body = sum(1 for q in commits if q.get("body"))
    if body * 5 < len(commits):
        notes.append(f"answered only by a body: {body} of {len(commits)} commit questions (< 1/5)")
    return notes


def _shares(queries: list[dict], outside: bool = False) -> list[str]:
    if not queries:
        return ["no queries"]
    floor = 0.15 * len(queries)
    kinds = Counter(q.get("kind") for q in queries)
    # An outside-style set may hold as few reverts as its history has: two at least.
    floors = {k: (floor, "15%") for k in KINDS}
    if outside:
        floors["revert"] = (min(floor, 2), "2")
    notes = [
        f"kind {k!r}: {kinds[k]} of {len(queries)} (< {label})"
        for k, (least, label) in floors.items()
        if kinds[k] < least
    ]
    agent = [q for q in queries if q.get("agent")]
    if len(agent) < floor:
        notes.append(f"agent-phrased: {len(agent)} of {len(queries)} (< 15%)")
    pasted = sum(1 for q in agent if _ERRORISH.search(q.get("query", "")))
    if pasted < 3:
        notes.append(f"agent queries with a pasted error line: {pasted} (< 3)")
    return notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--clone", type=Path, help="the repository (default /tmp/corpora/NAME)")
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        print(f"{args.file}: cannot read: {err}", file=sys.stderr)
        return 1
    clone = args.clone or Path("/tmp/corpora") / data.get("repo", args.file.stem)
    if not (clone / ".git").exists() and not (clone / "HEAD").exists():
        print(f"{clone}: no clone; see ../shared/corpora/README.md", file=sys.stderr)
        return 1
    problems = check(data, Repo(clone))
    for line in problems:
        print(line)
    kinds = Counter(q.get("kind") for q in data.get("queries", []))
    summary = ", ".join(f"{k} {kinds[k]}" for k in KINDS)
    print(
        f"{args.file.name}: {len(data.get('queries', []))} queries ({summary}); "
        f"{len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
