"""Secrets through every channel, end to end: what redaction catches and what reaches disk.

    .venv/bin/python bench/bench_secret_channels.py [--seed 0] [--per-format 2] [--per-style 3]
                                                    [--channels commit shell ...] [--keep DIR]

The labelled corpus of ``tests/secrets/corpus.py`` (tokens in ~90 providers' formats, private
keys, connection strings; keyword-adjacent random values written two dozen ways; 200-odd
ordinary commands) goes through the real entry points (``tests/secrets/channels.py``: commit
messages, file contents, docs, file names, the shell recorder, the Claude Code hook, a
transcript, then ``query --json`` and ``scrub-secrets --yes``) and the raw bytes NexusMem left
are searched for each secret. The commit messages of two real repositories
(``../shared/corpora``) are redacted in process and every sha in them must survive.

Prints Markdown to stdout: the summary table, what is left after ``scrub-secrets`` by channel,
the providers and styles that left a copy (and where), and every ordinary command or sha that
came out changed. Progress goes to stderr. Takes a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nexusmem_core.redact import redact  # noqa: E402
from tests.secrets.channels import CHANNELS, Negatives, Results, run_channels  # noqa: E402
from tests.secrets.corpus import (  # noqa: E402
    corpus_commits,
    keyworded,
    ordinary_commands,
    prefixed,
)
from tests.secrets.formats import KINDS  # noqa: E402
from tests.secrets.leaks import counts, missed, sha_survival  # noqa: E402
from tests.secrets.ordinary import ordinary_errors  # noqa: E402

CORPORA = ("click", "httpx")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-format", type=int, default=2, help="tokens per provider format")
    parser.add_argument("--per-style", type=int, default=3, help="secrets per keyword style")
    parser.add_argument("--channels", nargs="*", choices=[c.name for c in CHANNELS])
    parser.add_argument("--keep", type=Path, help="leave the workspaces in this directory")
    args = parser.parse_args()

    secrets = prefixed(args.seed, args.per_format) + keyworded(args.seed, args.per_style)
    negatives = Negatives(ordinary_commands(args.seed), ordinary_errors(args.seed))
    started = time.monotonic()

    def progress(name: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] channel {name}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="nexusmem-corpora-") as scratch:
        commits = [c for name in CORPORA for c in corpus_commits(name, Path(scratch))]
    shas = sha_survival(commits, redact)
    runs = run_channels(secrets, negatives, args.channels, args.keep, progress)
    results = Results(runs, secrets, negatives, shas, CORPORA)
    progress("done")

    kinds = Counter(s.klass for s in secrets)
    providers = len({s.family for s in secrets if s.klass == "prefixed"} - KINDS)
    print(f"## Secret channels (seed {args.seed})\n")
    print(f"{kinds['prefixed']} prefixed tokens ({providers} providers, private keys, "
          "connection strings), "
          f"{kinds['keyword']} keyword secrets, {len(negatives.commands)} ordinary commands, "
          f"{len(negatives.errors)} ordinary failure messages.\n")  # fmt: skip
    print(results.markdown())
    print(_after_scrub(results))
    print(_missed(results))
    print(_changed(results))
    print(f"\n{time.monotonic() - started:.0f} s in all.")
    return 0


def _after_scrub(results: Results) -> str:
    lines = ["\n### Left after `scrub-secrets --yes`, by channel\n",
             "| channel | after sync (whole, partial) | after scrub (whole, partial) "
             "| secrets in the scrub's backup |", "| --- | --- | --- | ---: |"]  # fmt: skip
    for run in results.runs:
        before, after = counts(run.stored), counts(run.scrubbed)
        lines.append(f"| {run.label} | {before['whole']}, {before['partial']} "
                     f"| {after['whole']}, {after['partial']} | {run.backup_copies} |")  # fmt: skip
    return "\n".join(lines)


def _missed(results: Results) -> str:
    named = {run.name: run.stored for run in results.runs}
    named["query"] = results.query()
    named["scrub"] = results.scrubbed()
    found = missed(named, results.secrets)
    lines = [f"\n### Providers and styles that left a copy ({len(found)})\n"]
    lines += [f"- `{provider}`: {', '.join(channels)}" for provider, channels in found.items()]
    return "\n".join(lines)


def _changed(results: Results) -> str:
    lines = ["\n### Ordinary text that came out changed\n"]
    for run in results.runs:
        for changes in results.changes(run):
            for before, after in changes.changed:
                lines.append(f"- {run.name}: `{before}` -> `{after}`")
            if changes.missing:
                lines.append(f"- {run.name}: {changes.missing} not recorded at all")
    if results.shas:
        lines += [f"- sha `{sha}` redacted in commit {commit[:12]}"
                  for commit, sha in results.shas.lost]  # fmt: skip
        lines += [f"- own sha `{sha}` redacted" for sha in results.shas.own_lost]
    if len(lines) == 1:
        lines.append("none")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
