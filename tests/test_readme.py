"""The README's sample output is what a fresh clone prints: this test clones the repository at
the commit the README pins, runs ``init`` and ``sync`` as typed, asks the sample's question as
``nexusmem query`` does (its handler, then ``render_search``) and compares the block line for
line.

Pinned to a commit, the sample does not change as commits land. Recency is measured from the
moment a question is asked, so the block is asked at the pinned commit's moment: it does not
drift with the calendar either. To move the pin, ``NEXUSMEM_README_PIN=<commit>`` rewrites the
block (and the pin) from that commit's clone; the test then checks the new block.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from cli import build_parser
from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.render import render_search

from .conftest import ROOT, run_cli

README = ROOT / "README.md"
# The origin the clone is given: node ids are made from it (a commit's sha is not).
ORIGIN = "/src/nexusmem"
COMMAND = 'nexusmem query "why was recency\'s span cut to 1.1x" --budget 400 --no-vector'
_SAMPLE = re.compile(
    r"(?P<lead>at commit `(?P<pin>[0-9a-f]{7,40})`.*?```text\n)"
    r"\$ (?P<command>nexusmem [^\n]*)\n(?P<output>.*?)```",
    re.DOTALL,
)


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _clone_at(pin: str, where: Path) -> Path:
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{pin}^{{commit}}"]).returncode:
        pytest.skip(f"commit {pin} is not in this clone (a shallow one?)")
    _git("clone", "-q", "--no-checkout", str(ROOT), str(where))
    _git("checkout", "-q", pin, cwd=where)
    _git("remote", "set-url", "origin", ORIGIN, cwd=where)
    for args in (("init",), ("sync", "-q")):
        done = run_cli(*args, cwd=where)
        assert done.returncode == 0, done.stderr
    return where


async def _printed(settings: Settings, clone: Path, command: str) -> str:
    """What ``command`` prints in ``clone``, asked at the moment of the commit checked out."""
    args = build_parser().parse_args(shlex.split(command)[1:])
    moment = float(_git("log", "-1", "--format=%ct", cwd=clone))
    async with open_engine(settings, clone, read_only=True) as engine:
        response = await handlers.search(
            engine, " ".join(args.text), args.budget, not args.no_vector, now=moment
        )
    return render_search(response)


async def _regenerate(settings: Settings, pin: str, where: Path) -> None:
    """The block as the clone at ``pin`` prints it, and the pin, written into the README."""
    clone = _clone_at(pin, where)
    text = README.read_text(encoding="utf-8")
    found = _SAMPLE.search(text)
    assert found, "README.md has no sample block after a pinned commit"
    lead = found.group("lead").replace(found.group("pin"), _git("rev-parse", "--short=7", pin))
    block = f"{lead}$ {COMMAND}\n{await _printed(settings, clone, COMMAND)}```"
    README.write_text(text[: found.start()] + block + text[found.end() :], encoding="utf-8")


async def test_the_readme_sample_is_what_a_fresh_clone_prints(settings: Settings, tmp_path: Path):
    if os.environ.get("NEXUSMEM_README_PIN"):
        await _regenerate(settings, os.environ["NEXUSMEM_README_PIN"], tmp_path / "regenerated")
    found = _SAMPLE.search(README.read_text(encoding="utf-8"))
    assert found, "README.md has no sample block after a pinned commit"
    clone = _clone_at(found.group("pin"), tmp_path / "nexusmem")
    assert await _printed(settings, clone, found.group("command")) == found.group("output")
