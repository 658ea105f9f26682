"""What redaction takes from real history that is not a secret: spans by class, before and after.

    .venv/bin/python bench/bench_false_positives.py --before /tmp/base [--corpus click ...]

Every corpus bundle of ``../shared/corpora/`` is cloned (into ``bench/out/false-positives``)
and its whole history, ``git log -p`` (messages and patches), goes through ``redact`` one commit
at a time, once with the checkout given by ``--before`` (its ``nexusmem_core`` first on
``PYTHONPATH``) and once with this one, each in a child process. The spans each replaced are
classed by ``nexusmem_core.redact.values.ordinary_kind`` of this checkout: placeholder, boolean,
call, reference, version, or other (which holds the real secrets a history has, and the false
positives no class names). The table gives the count of each class per corpus, before -> after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from _common import CORPORA, OUT, PYTHON, ROOT

CLASSES = ("placeholder", "boolean", "call", "reference", "version", "other")
_PLACEHOLDER = "[REDACTED]"


def _clone(name: str, clones: Path) -> Path:
    clone = clones / name
    if not (clone / ".git").exists():
        clones.mkdir(parents=True, exist_ok=True)
        bundle = CORPORA / f"{name}.bundle"
        subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True)
    return clone


def _commits(clone: Path) -> list[str]:
    """Every commit's message and patch, as ``git log -p`` prints them."""
    out = subprocess.run(
        ["git", "-C", str(clone), "log", "-p", "--format=%x1e%H%n%B"],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")
    return [commit for commit in out.split("\x1e") if commit]


def spans(text: str, redacted: str) -> list[str]:
    """What ``redact`` replaced in ``text``, given its output: the text between the pieces of
    ``redacted`` around each placeholder, found in order."""
    pieces = redacted.split(_PLACEHOLDER)
    found, at = [], len(pieces[0])
    for piece in pieces[1:]:
        end = text.find(piece, at) if piece else len(text)
        if end == -1:
            break
        found.append(text[at:end])
        at = end + len(piece)
    return found


def measure(names: list[str], clones: Path) -> dict[str, list[str]]:
    """The spans redaction takes from each corpus's history (run in a child process)."""
    from nexusmem_core.redact import redact

    found: dict[str, list[str]] = {}
    for name in names:
        commits = _commits(_clone(name, clones))
        found[name] = [span for commit in commits for span in spans(commit, redact(commit))]
    return found


def _run(checkout: Path, names: list[str], clones: Path) -> dict[str, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_false_positives as b;"
        "print(json.dumps(b.measure(sys.argv[2].split(','), b.Path(sys.argv[3]))))"
    )
    done = subprocess.run(
        [PYTHON, "-c", code, str(Path(__file__).parent), ",".join(names), str(clones)],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def tally(found: dict[str, list[str]]) -> dict[str, Counter[str]]:
    """Per corpus, how many spans of each class."""
    sys.path.insert(0, str(ROOT))
    from nexusmem_core.redact.values import ordinary_kind

    return {
        name: Counter(ordinary_kind(span) or "other" for span in spans_)
        for name, spans_ in found.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="an older checkout")
    parser.add_argument("--corpus", action="append", help="a bundle's name (default: all)")
    parser.add_argument("--out", type=Path, default=OUT / "false-positives")
    parser.add_argument("--show", type=int, default=0, help="print N spans of each class after")
    parser.add_argument("--dump", type=Path, help="write the spans, before and after, as JSON")
    args = parser.parse_args()
    names = args.corpus or sorted(p.stem for p in CORPORA.glob("*.bundle"))
    before_spans = _run(args.before, names, args.out / "clones")
    after_spans = _run(ROOT, names, args.out / "clones")
    if args.dump:
        args.dump.write_text(json.dumps({"before": before_spans, "after": after_spans}))
    before, after = tally(before_spans), tally(after_spans)
    print("| corpus | " + " | ".join(CLASSES) + " | all |")
    print("|---" * (len(CLASSES) + 2) + "|")
    for name in [*names, "all"]:
        old = sum((before[n] for n in names), Counter()) if name == "all" else before[name]
        new = sum((after[n] for n in names), Counter()) if name == "all" else after[name]
        cells = [f"{old[c]} -> {new[c]}" for c in CLASSES]
        total = f"{sum(old.values())} -> {sum(new.values())}"
        print(f"| {name} | " + " | ".join(cells) + f" | {total} |")
    if args.show:
        from nexusmem_core.redact.values import ordinary_kind

        for klass in CLASSES:
            shown = [s for n in names for s in after_spans[n] if ordinary_kind(s) in (klass, None)]
            for span in [s for s in shown if (ordinary_kind(s) or "other") == klass][: args.show]:
                print(f"{klass}: {span[:100]!r}")


if __name__ == "__main__":
    main()
