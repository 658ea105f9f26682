"""A labelled secrets corpus, generated from a seed: the measuring stick for redaction.

* :func:`prefixed`: tokens in the formats providers issue (``formats.FORMATS``: 90-odd
  providers, private-key blocks, connection strings with a password), class ``prefixed``: a
  detector should know them on sight.
* :func:`keyworded`: random values that only a nearby keyword makes secret
  (``keywords.STYLES``), class ``keyword``.
* :func:`ordinary_commands`: commands that hold no secret and must come back unchanged.
* :func:`corpus_commits`: the commit messages of a real repository from ``shared/corpora``,
  whose commit shas must survive redaction.

Nothing here is a real credential: every value is drawn from ``random.Random(seed)``, so a run
is repeatable and the corpus never has to be stored.
"""

from __future__ import annotations

import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .formats import FORMATS
from .keywords import STYLES, value
from .ordinary import ordinary_commands

__all__ = [
    "CORPORA",
    "Secret",
    "corpus_commits",
    "keyworded",
    "ordinary_commands",
    "prefixed",
]


def _corpora() -> Path:
    """Where the pinned corpus bundles are: ``$NEXUSMEM_CORPORA``, else ``shared/corpora`` beside
    the checkout (as this workplace lays them out), else the workplace's own copy."""
    for place in (
        os.environ.get("NEXUSMEM_CORPORA"),
        Path(__file__).resolve().parents[3] / "shared" / "corpora",
        "/work/shared/corpora",
    ):
        if place and Path(place, "click.bundle").exists():
            return Path(place)
    return Path(__file__).resolve().parents[3] / "shared" / "corpora"


CORPORA = _corpora()
PROBE = "probe{:04d}"


@dataclass(frozen=True)
class Secret:
    """One labelled secret. ``value`` is the token as issued (for a keyword secret, the value);
    ``secret`` is the part of it that must leave no copy anywhere (the password of a connection
    string, the body of a key, else the whole value). ``line`` is the text that carries a keyword
    secret (empty for a prefixed one); ``kind`` says where it lives (``token``, ``url``, ``pem``;
    ``shell``, ``config``, ``code``, ``prose``) and ``fmt`` in what (a config file's format)."""

    id: int
    provider: str
    klass: str
    value: str
    secret: str
    family: str = ""
    kind: str = "token"
    fmt: str = ""
    line: str = ""

    @property
    def probe(self) -> str:
        """A word unique to this secret, written next to it wherever it goes: finding it in a
        store proves the text reached it, so a missing secret means redacted, not dropped."""
        return PROBE.format(self.id)


def prefixed(seed: int = 0, per_format: int = 1) -> list[Secret]:
    """``per_format`` tokens of every provider format, ids from 0."""
    r = random.Random(f"prefixed-{seed}")
    found: list[Secret] = []
    for _ in range(per_format):
        for fmt in FORMATS:
            token = fmt.make(r)
            found.append(
                Secret(len(found), fmt.provider, "prefixed", token, fmt.part(token),
                       fmt.family, fmt.kind)
            )  # fmt: skip
    return found


def keyworded(seed: int = 0, per_style: int = 3, first_id: int = 5000) -> list[Secret]:
    """``per_style`` secrets in every keyword style, each with a fresh value of one of the
    style's shapes; ids from ``first_id``."""
    r = random.Random(f"keyword-{seed}")
    found: list[Secret] = []
    for n in range(per_style):
        for style in STYLES:
            shape = style.shapes[n % len(style.shapes)]
            secret, line = value(r, shape), style.template.replace("{v}", "")
            if style.split:  # two values, one a piece: each piece must leave no copy
                first, second = value(r, shape), value(r, shape)
                secret = f"{first}\n{second}"
                line = style.template.replace("{v1}", first).replace("{v2}", second)
            else:
                line = style.template.replace("{v}", secret)
            found.append(
                Secret(first_id + len(found), style.name, "keyword", secret, secret,
                       kind=style.kind, fmt=style.fmt, line=line)
            )  # fmt: skip
    return found


def corpus_commits(name: str, workdir: Path) -> list[tuple[str, str]]:
    """``(sha, message)`` of every commit of the ``name`` bundle, cloned once into
    ``workdir``."""
    clone = workdir / name
    if not (clone / ".git").exists():
        subprocess.run(
            ["git", "clone", "-q", str(CORPORA / f"{name}.bundle"), str(clone)],
            check=True,
            capture_output=True,
        )
    out = subprocess.run(
        ["git", "-C", str(clone), "log", "--format=%H%x00%B%x1e"],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8", "replace")
    commits = []
    for record in out.split("\x1e"):
        sha, _, message = record.strip("\n").partition("\x00")
        if sha:
            commits.append((sha, message))
    return commits
