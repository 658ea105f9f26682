"""Which release shipped it, in a repository without a changelog (retrieval/shipped.py)."""

from __future__ import annotations

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.retrieval.shipped import is_bump

from ..conftest import Repo


@pytest.mark.parametrize(
    "subject",
    [
        "Release 1.0.182",
        "10.11.0 (#3719)",
        "v11.0.0-beta.0 (#4893)",
        "Beta.2",
        "chore(release): 2.3.0",
        "Bump version to 3.1",
        "Version 8.1.0",
    ],
)
def test_a_subject_that_is_a_version_is_a_bump(subject: str) -> None:
    assert is_bump(subject)


@pytest.mark.parametrize(
    "subject",
    ["Fix 1.0 regression in the parser", "Update CHANGELOG.md for v1.1.2", "Add 2 args", "v"],
)
def test_a_subject_that_says_more_than_a_version_is_not(subject: str) -> None:
    assert not is_bump(subject)


async def _ask(settings: Settings, r: Repo, question: str) -> list[str]:
    async with open_engine(settings, r.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        found = await handlers.search(engine, question, vector=False)
    return [res.ref for res in found.results]


def _history(r: Repo, notes: dict[str, str] | None = None) -> tuple[str, str, str]:
    """An older release, the change, the release after it, a newer one; their shas."""
    r.commit("Release 1.1.0", {"VERSION": "1.1.0\n"})
    for i in range(8):
        r.commit(f"Refactor part {i} of the renderer", {f"render{i}.py": f"x = {i}\n"})
    change = r.commit("Let the gizmo sparkle on hover", {"gizmo.py": "SPARKLE = True\n"})
    r.commit("Tidy the renderer", {"render0.py": "x = 0  # tidy\n"})
    shipped = r.commit("Release 1.2.0", {"VERSION": "1.2.0\n", **(notes or {})})
    later = r.commit("Release 1.3.0", {"VERSION": "1.3.0\n"})
    return change, shipped, later


async def test_a_release_question_without_a_changelog_gets_the_bump_after_the_change(
    settings: Settings, make_repo
) -> None:
    r: Repo = make_repo("bumps")
    change, shipped, _ = _history(r)
    refs = await _ask(settings, r, "which release let the gizmo sparkle?")
    # The release that shipped it, with the commit that says what changed right after it.
    assert refs[:2] == [shipped, change]


async def test_a_question_that_does_not_ask_for_a_release_gets_no_bump(
    settings: Settings, make_repo
) -> None:
    r: Repo = make_repo("bumps-not-asked")
    change, shipped, later = _history(r)
    refs = await _ask(settings, r, "why does the gizmo sparkle on hover?")
    assert refs[0] == change
    assert shipped not in refs[:3] and later not in refs[:3]


async def test_a_changelog_in_memory_answers_instead(settings: Settings, make_repo) -> None:
    r: Repo = make_repo("bumps-with-notes")
    notes = {"CHANGES.md": "# Changes\n\n## Version 1.2.0\n\n- The gizmo sparkles on hover.\n"}
    _history(r, notes)
    refs = await _ask(settings, r, "which release made the gizmo sparkle on hover?")
    assert refs[0] == "CHANGES.md#Version 1.2.0"
