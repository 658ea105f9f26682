"""Reverts: what a commit message says it undoes, and the links sync keeps of it."""

from __future__ import annotations

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.reverts import reverted, says_undoing

from .conftest import Repo


def test_what_a_subject_says_it_undoes_in_words():
    for subject in (
        'Revert "Add X"',
        "revert adding space between option help",
        "Restore option_name parameter to BadOptionUsage",
        "Restores the ability to fetch local only flags",
        "Reintroduce `URLTypes`. (#3288)",
        "Re-add zsh types",
        "Bring back skip for Windows due to invalid syntax",
        "undo dist files changes",
        "Back out the pager change",
        "Roll back the cache format",
    ):
        assert says_undoing(subject), subject
    for subject in ("Add a retry budget", "Store raw help string", "Fix the background pager"):
        assert not says_undoing(subject), subject


def test_what_a_message_says_it_reverts():
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert reverted('Revert "Add X"', f'Revert "Add X"\n\nThis reverts commit {sha}.') == (
        sha,
        "Add X",
    )
    assert reverted("Undo the cache", "This partially reverts commit 0123abc.") == ("0123abc", None)
    assert reverted('Revert "Add X"', "") == (None, "Add X")
    assert reverted("Fix the revert button", "Reverting is now undoable.") == (None, None)
    # A sha in the subject, or in a line saying what of it is reverted.
    assert reverted("Revert 60ef759", "plus reformat the code") == ("60ef759", None)
    assert reverted(
        "Restore option_name to BadOptionUsage",
        f"Revert changes made to ``BadOptionUsage.__init__`` in {sha}. Also store it.",
    ) == (sha, None)
    # A hex word is not a sha, and a sha far from any revert is not what was reverted.
    assert reverted("Revert defaced", "") == (None, None)
    assert reverted("Fix the parser", f"Regressed in {sha}.\n\nWe revert nothing.") == (None, None)


async def test_links_are_made_once_and_only_to_commits_in_memory(settings: Settings, make_repo):
    r: Repo = make_repo("links")
    tried = r.commit("Cache the parsed config", {"c.py": "CACHE = True\n"})
    r.commit(f'Revert "Cache the parsed config"\n\nThis reverts commit {tried}.', {"c.py": ""})
    r.commit("Revert the thing\n\nThis reverts commit 0000000000000000000000000000000000000000.")
    async with open_engine(settings, r.path, create=True) as engine:
        first = await handlers.sync(engine, embed=False)
        unrelated = r.commit("Unrelated change", {"d.py": "x = 1\n"})
        second = await handlers.sync(engine, embed=False)
        # Each way a message names what it undoes, in a later sync: by subject alone, by a
        # sha in the subject, and by a sha in a line that says it reverted what it did.
        parsed = r.commit("Parse the config lazily", {"p.py": "LAZY = True\n"})
        r.commit('Revert "Unrelated change"', {"d.py": ""})
        r.commit(f"Revert {parsed[:10]}: it broke the CLI", {"p.py": ""})
        r.commit(f"Fix the build\n\nReverted the cache change from {tried[:8]} again.")
        third = await handlers.sync(engine, embed=False)
        links = await engine.db.fetchall(
            "select s.title, d.ref from links l join nodes s on s.id = l.src "
            "join nodes d on d.id = l.dst where l.kind = 'reverts' order by s.ts"
        )
    assert (first.reverts, second.reverts, third.reverts) == (1, 0, 3)
    assert links == [
        ('Revert "Cache the parsed config"', tried),
        ('Revert "Unrelated change"', unrelated),
        (f"Revert {parsed[:10]}: it broke the CLI", parsed),
        ("Fix the build", tried),
    ]
