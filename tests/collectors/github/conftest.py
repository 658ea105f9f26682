"""A fake ``gh`` on PATH answering from recorded threads, and a repository on github.com."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ...conftest import Repo

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "github" / "threads.json"
SCRIPT = Path(__file__).with_name("fake_gh.py")


class FakeGh:
    """The fake's threads (edit them, then ``save``), its call log and its failure mode."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch, subs: dict[str, str]):
        self.data, self.log = root / "threads.json", root / "gh-calls.jsonl"
        self.monkeypatch = monkeypatch
        text = FIXTURE.read_text(encoding="utf-8")
        for key, value in subs.items():
            text = text.replace(f"@@{key}@@", value)
        self.threads: list[dict] = json.loads(text)
        self.save()
        monkeypatch.setenv("FAKE_GH_DATA", str(self.data))
        monkeypatch.setenv("FAKE_GH_LOG", str(self.log))
        monkeypatch.delenv("FAKE_GH_MODE", raising=False)

    def save(self) -> None:
        self.data.write_text(json.dumps(self.threads), encoding="utf-8")

    def thread(self, number: int) -> dict:
        return next(t for t in self.threads if t["number"] == number)

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def forget_calls(self) -> None:
        self.log.unlink(missing_ok=True)

    def answer(self) -> None:
        """Answer every call again."""
        self.monkeypatch.setenv("FAKE_GH_MODE", "ok")

    def fail(self, mode: str, after: int = 0) -> None:
        """Answer ``after`` more calls, then fail every one as ``mode`` says."""
        self.monkeypatch.setenv("FAKE_GH_MODE", mode)
        self.monkeypatch.setenv("FAKE_GH_FAIL_AFTER", str(len(self.calls()) + after))


@pytest.fixture
def gh_repo(repo: Repo) -> Repo:
    """The shared small project, with its origin on github.com."""
    repo.git("remote", "add", "origin", "https://github.com/acme/widget.git")
    return repo


@pytest.fixture
def fake_gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gh_repo: Repo) -> FakeGh:
    """``gh`` on PATH is the fake; the threads name the project's real commits."""
    bin_dir = tmp_path / "gh-bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    # -S: no site import; the fake is started once per call and needs the stdlib only.
    gh.write_text(f"#!{sys.executable} -S\n" + SCRIPT.read_text(encoding="utf-8"))
    gh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    feat, fix = gh_repo.git("rev-list", "--reverse", "HEAD").split()[:2]
    return FakeGh(tmp_path, monkeypatch, {"FIX_SHA": fix, "FEAT_SHORT": feat[:7]})
