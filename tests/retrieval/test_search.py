"""The search pipeline end to end on real git repositories: a commit is one answer, a revert
comes with what it undid, and a row holding more of the question ranks first."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, ensure_workspace, open_engine
from nexusmem_core.models import SearchResponse
from nexusmem_core.render import render_search
from nexusmem_core.retrieval.query import parse_query

from ..conftest import Repo


async def _synced(settings: Settings, repo: Repo):
    engine = open_engine(settings, repo.path, create=True)
    eng = await engine.__aenter__()
    report = await handlers.sync(eng, embed=False)
    return engine, eng, report


async def test_a_commit_and_its_diffs_are_one_result_showing_the_best_hunk(
    settings: Settings, make_repo
):
    r: Repo = make_repo("grouped")
    r.commit("feat: start", {"src/codec.py": "def decode(data):\n    return data\n"})
    sha = r.commit(
        "fix: empty bodies no longer fail",
        {
            "src/codec.py": "def decode(data):\n    if not data:  # zstandard frame missing\n"
            "        return b''\n    return data\n",
            "tests/test_codec.py": "def test_zstandard_empty():\n    assert decode(b'') == b''\n",
        },
    )
    cm, engine, _ = await _synced(settings, r)
    try:
        response = await handlers.search(engine, "zstandard frame missing", vector=False)
    finally:
        await cm.__aexit__(None, None, None)
    refs = [res.ref for res in response.results]
    assert refs[0] == sha
    assert not [ref for ref in refs if ref.startswith(f"{sha}:")]  # no diff beside its commit
    assert "zstandard frame missing" in response.results[0].summary  # the hunk is the excerpt


async def _siblings_ranked(
    settings: Settings, r: Repo, answer: tuple[str, dict[str, str]], sibling: str, question: str
) -> tuple[int, int]:
    """Twelve unrelated commits (enough rows for the words' weights to mean something), the
    ``answer`` commit, then a newer ``sibling`` on the same topic; where the question ranks
    the two."""
    for i in range(12):
        r.commit(f"Refactor part {i} of the parser", {f"parse{i}.py": f"x = {i}\n"})
    wanted = r.commit(*answer)
    other = r.commit(sibling, {"notes.txt": "notes\n"})
    cm, engine, _ = await _synced(settings, r)
    try:
        response = await handlers.search(engine, question, vector=False)
    finally:
        await cm.__aexit__(None, None, None)
    refs = [res.ref for res in response.results]
    return refs.index(wanted), refs.index(other)


async def test_a_commit_is_covered_by_its_message_and_its_diffs_together(
    settings: Settings, make_repo
):
    # The message holds two of the question's words, its diff the other two; the sibling's
    # message alone holds three of them: without the unit it wins.
    drain = "def drain(backlog):\n    # spool the backlog to disk\n    pass\n"
    answer = ("Lower the flush interval", {"queue/flush.py": drain})
    wanted, sibling = await _siblings_ranked(
        settings,
        make_repo("unit-cover"),
        answer,
        "Flush interval for the spool",
        "flush interval spool backlog",
    )
    assert wanted < sibling


async def test_a_why_question_finds_the_commit_that_explains_before_the_one_that_matches(
    settings: Settings, make_repo
):
    message = (
        "Keep the flush interval above zero\n\nA zero interval made the writer spin on an "
        "empty queue and pinned a core; the floor of one second keeps it asleep between batches."
    )
    # The newer sibling's subject alone holds more of the question's words.
    wanted, sibling = await _siblings_ranked(
        settings,
        make_repo("explains"),
        (message, {"flush.py": "FLOOR = 1\n"}),
        "Flush interval zero: tidy the interval check",
        "why can't the flush interval be zero?",
    )
    assert wanted < sibling


async def test_a_doc_files_diff_does_not_stand_in_for_the_section_it_edited(
    settings: Settings, make_repo
):
    r: Repo = make_repo("prose")
    fixed = r.commit(
        "Retry uploads when the storage token expires",
        {"src/upload.py": "def upload(blob):\n    return send(blob)\n"},
    )
    edited = r.commit(
        "Update docs",
        {
            "docs/uploads.md": "# Uploads\n\nAn upload whose storage token expires is retried "
            "once with a fresh token; a second expiry fails the upload.\n",
            "CHANGES": "Version 1.1\n-----------\n\n- Uploads retry on token expiry.\n",
        },
    )
    cm, engine, _ = await _synced(settings, r)
    try:
        response = await handlers.search(engine, "storage token expires upload", vector=False)
    finally:
        await cm.__aexit__(None, None, None)
    refs = [res.ref for res in response.results]
    assert "docs/uploads.md#Uploads" in refs and fixed in refs
    # "Update docs" holds none of the words itself: its diffs are the section's words again.
    assert not [ref for ref in refs if ref.startswith(edited)]


async def test_a_revert_and_the_commit_it_undid_come_together(settings: Settings, make_repo):
    r: Repo = make_repo("reverted")
    tried = r.commit(
        "Load plugins lazily on first use",
        {"plugins.py": "LAZY = True\n"},
    )
    for i in range(5):
        r.commit(f"docs: note {i} about plugins", {f"notes/{i}.md": f"# Note {i}\n\nplugins\n"})
    undone = r.commit(
        'Revert "Load plugins lazily on first use"\n\n'
        f"This reverts commit {tried}.\n\nEntry points were missed on Windows.",
        {"plugins.py": "LAZY = False\n"},
    )
    cm, engine, report = await _synced(settings, r)
    try:
        assert report.reverts == 1
        response = await handlers.search(engine, "lazily plugins loading attempt", vector=False)
    finally:
        await cm.__aexit__(None, None, None)
    refs = [res.ref for res in response.results]
    first = min(refs.index(tried), refs.index(undone))
    assert {refs[first], refs[first + 1]} == {tried, undone}


async def test_a_question_about_something_undone_finds_the_revert_pair_first(
    settings: Settings, make_repo
):
    r: Repo = make_repo("undone")
    tried = r.commit("Keep parsed templates on disk", {"tpl.py": "DISK = True\n"})
    undone = r.commit(
        f'Revert "Keep parsed templates on disk"\n\nThis reverts commit {tried}.',
        {"tpl.py": "DISK = False\n"},
    )
    other = r.commit("Keep parsed templates", {"render.py": "MEMO = {}\n"})
    cm, engine, _ = await _synced(settings, r)
    try:
        plain = await handlers.search(engine, "keep parsed templates", vector=False)
        asked = await handlers.search(
            engine,
            "did we ever keep parsed templates? what happened to that?",
            vector=False,
        )
    finally:
        await cm.__aexit__(None, None, None)
    assert plain.results[0].ref == other  # the words alone: the newer commit holds them too
    assert {res.ref for res in asked.results[:2]} == {tried, undone}


_GENTREE_WORDS = "callback to append content at the end of each generated file"


def _gentree_and_its_undone_postpender(r: Repo) -> tuple[str, str]:
    """A section holding the name and most words of the questions below, and a commit that
    tried the thing and its revert, which hold only the name; returns (tried, undone)."""
    words = _GENTREE_WORDS
    r.commit(
        "docs: tree generation",
        {
            "docs/gen.md": f"# Generating\n\n## Customize GenTree\n\nGenTree takes a {words}.\n"
            f"GenTree writes each generated file; a {words} or prepend one.\n"
        },
    )
    for i in range(8):  # enough rows for the words' weights to mean something
        r.commit(f"Tidy generated file {i} content", {f"gen{i}.py": f"x = {i}\n"})
    tried = r.commit("Add a postpender to GenTree", {"tree.py": "POST = True\n"})
    undone = r.commit(
        f'Revert "Add a postpender to GenTree"\n\nThis reverts commit {tried}.',
        {"tree.py": "POST = False\n"},
    )
    return tried, undone


@pytest.mark.parametrize(
    "question",
    [
        f"Did GenTree ever get a {_GENTREE_WORDS}? What happened to it?",
        # "did we once try" asks what was tried and undone as "did we ever try" does
        f"Did we once try to give GenTree a {_GENTREE_WORDS}?",
    ],
)
async def test_an_undone_pair_outranks_a_section_that_holds_more_of_the_words(
    settings: Settings, make_repo, question: str
):
    """The pair holds the one name the question turns on; the section holds that name and
    most of its other words. Asked what became of it, the pair comes first."""
    r: Repo = make_repo("undone-far")
    tried, undone = _gentree_and_its_undone_postpender(r)
    cm, engine, _ = await _synced(settings, r)
    try:
        asked = await handlers.search(engine, question, vector=False)
    finally:
        await cm.__aexit__(None, None, None)
    assert {res.ref for res in asked.results[:2]} == {tried, undone}


async def test_a_revert_told_in_words_is_what_an_undone_question_asks_for(
    settings: Settings, make_repo
):
    """A revert that names no commit ("Revert change so ...") links to nothing, yet it is
    the kind of answer a question about something undone asks for: it comes first, above
    the commit that holds more of the question's words."""
    r: Repo = make_repo("undone-words")
    r.commit("Help command must use Stdout instead of Stderr", {"help.go": "OUT = 2\n"})
    for i in range(8):  # enough rows for the words' weights to mean something
        r.commit(f"Tidy flag parsing step {i}", {f"flags{i}.go": f"x = {i}\n"})
    tried = r.commit("Cache parsed flags", {"cache.go": "ON = true\n"})
    r.commit(f'Revert "Cache parsed flags"\n\nThis reverts commit {tried}.', {"cache.go": ""})
    worded = r.commit(
        "Revert change so help is printed on stdout again\n\n"
        "For backwards compatibility the help message goes to stdout.",
        {"help.go": "OUT = 1\n"},
    )
    cm, engine, _ = await _synced(settings, r)
    try:
        asked = await handlers.search(
            engine,
            "Did help text ever get sent to stderr instead of stdout, and why was that "
            "switched back?",
            vector=False,
        )
    finally:
        await cm.__aexit__(None, None, None)
    assert asked.results[0].ref == worded


@pytest.mark.parametrize(
    "subject",
    [
        "Revert change so help is printed on stdout again",
        "Restore printing help on stdout",
        "Bring back help on stdout",
    ],
)
async def test_a_revert_told_in_words_is_lifted_as_the_linked_pairs_are(
    settings: Settings, make_repo, subject: str
):
    """A question about something undone lifts the linked revert pairs; a commit whose
    subject says it undoes something, in whatever words, is the same kind of answer and is
    lifted with them, so a pair that holds fewer of the question's words does not pass it
    for the lift alone."""
    r: Repo = make_repo("undone-words-lifted")
    worded = r.commit(subject, {"help.go": "OUT = 1\n"})
    for i in range(8):  # enough rows for the words' weights to mean something
        r.commit(f"Tidy flag parsing step {i}", {f"flags{i}.go": f"x = {i}\n"})
    tried = r.commit("Wrap help text in one writer", {"writer.go": "ONE = true\n"})
    undone = r.commit(
        f'Revert "Wrap help text in one writer"\n\nThis reverts commit {tried}.',
        {"writer.go": ""},
    )
    cm, engine, _ = await _synced(settings, r)
    try:
        asked = await handlers.search(
            engine,
            "Did help text ever get printed to stderr instead of stdout, and why was that "
            "switched back?",
            vector=False,
        )
    finally:
        await cm.__aexit__(None, None, None)
    refs = [res.ref for res in asked.results]
    assert refs[0] == worded
    assert {tried, undone} <= set(refs)


async def _asked_after_a_doc(
    settings: Settings, r: Repo, doc: dict[str, str], message: str, plain: str, asked: str
) -> tuple[str, SearchResponse, SearchResponse]:
    """The shape the lift tests share: a doc written, ten unrelated commits (enough rows for
    the words' weights to mean something), then a commit of ``message``; its sha and the
    responses to the ``plain`` question and to the one that says what it ``asked`` for."""
    r.commit("Write the docs", doc)
    for i in range(10):
        r.commit(f"Refactor part {i} of the parser", {f"parse{i}.py": f"x = {i}\n"})
    sha = r.commit(message, {"up.py": "RETRY = 1\n"})
    cm, engine, _ = await _synced(settings, r)
    try:
        return (
            sha,
            await handlers.search(engine, plain, vector=False),
            await handlers.search(engine, asked, vector=False),
        )
    finally:
        await cm.__aexit__(None, None, None)


_ITEMS = "".join(f"-   Tidy module {i} of the renderer.\n" for i in range(4))
_SECTION_OR_COMMIT = {
    "release": (
        "CHANGES.md",
        "# Changes\n\n## Version 2.0\n\nReleased 2026-03-01\n\n"
        f"-   Uploads retry once on a timeout.\n{_ITEMS}\n## Version 1.0\n\n-   First.\n",
        "Retry uploads once on a timeout",
        "uploads retry on a timeout",
        "which release made uploads retry on a timeout?",
        "CHANGES.md#Version 2.0",
    ),
    "how-to": (
        "docs/retries.md",
        "# Retries\n\n## Retrying uploads\n\nPass `retries=3` to the client and uploads "
        "that time out are sent again, up to that many times.\n",
        "Retry uploads that time out",
        "retry uploads that time out",
        "how do I make uploads retry when they time out?",
        "docs/retries.md#Retrying uploads",
    ),
}


@pytest.mark.parametrize("kind", list(_SECTION_OR_COMMIT))
async def test_a_question_naming_a_kind_of_section_finds_that_section_first(
    settings: Settings, make_repo, kind: str
):
    """A release question finds the release's section, a how-to question the doc section,
    where the same words asked plainly find the commit (it says them shortest)."""
    path, text, message, plain_words, asked_words, section = _SECTION_OR_COMMIT[kind]
    commit, plain, asked = await _asked_after_a_doc(
        settings, make_repo(kind), {path: text}, message, plain_words, asked_words
    )
    assert plain.results[0].ref == commit
    assert asked.results[0].ref == section


@pytest.mark.parametrize("deleted", ["before the first sync", "after it"])
async def test_a_deleted_changelog_still_says_which_release_shipped_a_change(
    settings: Settings, make_repo, deleted: str
):
    """The commit that wrote a release's notes answers for the release once the changelog
    is gone from the tree, though it is older than the window of commits whose diffs a
    first sync reads: its subject says only "Update CHANGELOG.md"."""
    r: Repo = make_repo("nolog")
    r.commit("Start", {"main.go": "package main\n", "CHANGELOG.md": "# Changelog\n"})
    release = r.commit(
        "Update CHANGELOG.md for v1.4.0",
        {
            "CHANGELOG.md": "# Changelog\n\n## v1.4.0\n\n* Zsh completions show descriptions\n"
            "* Bump yaml to v3.0.1\n"
        },
    )
    r.commit("Describe the zsh completion script", {"README.md": "Zsh: source the script.\n"})
    for i in range(6):  # the release commit falls out of the diff window below
        r.commit(f"Refactor part {i} of the parser", {f"parse{i}.go": f"package p{i}\n"})
    ensure_workspace(r.path, settings.home)
    config = r.path / ".nexusmem" / "config.json"
    config.write_text(json.dumps({"version": 1, "sources": {"diff": {"maxCommits": 3}}}))
    if deleted == "after it":
        cm, engine, _ = await _synced(settings, r)
        await cm.__aexit__(None, None, None)
    r.git("rm", "-q", "CHANGELOG.md")
    r.commit("Remove the changelog: releases are written on GitHub now")
    cm, engine, _ = await _synced(settings, r)
    try:
        found = await handlers.search(
            engine, "which release made zsh completions show descriptions?", vector=False
        )
    finally:
        await cm.__aexit__(None, None, None)
    assert found.results[0].ref == release
    assert "v1.4.0" in found.results[0].summary  # the notes it wrote are its excerpt


async def test_a_question_asking_which_commit_fixed_it_finds_the_commit_first(
    settings: Settings, make_repo
):
    doc = (
        "# Uploads\n\n## Reusing file objects\n\n"
        "Each request reads a file object to its end, so posting one again sends an empty "
        "part. Open the file again.\n"
    )
    symptom = "posting the same open file object twice sends an empty part the second time"
    fix, plain, asked = await _asked_after_a_doc(
        settings,
        make_repo("which-commit"),
        {"docs/uploads.md": doc},
        "Seek file objects to the start before each request\n\nThe second post sent an empty part.",
        symptom,
        f"{symptom}: which commit fixed it?",
    )
    assert plain.results[0].ref == "docs/uploads.md#Reusing file objects"  # more of the words
    assert fix in [r.ref for r in plain.results]
    assert asked.results[0].ref == fix


async def test_a_why_question_finds_the_commit_that_gave_the_reason_first(
    settings: Settings, make_repo
):
    """A reference section holding more of the question's words stands first for the words
    alone; asked why, the commit whose body gives the reason does."""
    doc = (
        "# Options\n\n## auth\n\nThe auth option sends a user and password with every "
        "request, as an Authorization header.\n"
    )
    commit, plain, asked = await _asked_after_a_doc(
        settings,
        make_repo("why"),
        {"docs/options.md": doc},
        "Send the auth user and password as a header\n\nIn the URL they end up in proxy logs.",
        "the auth option sends the user and password as a header",
        "why does the auth option send the user and password as a header?",
    )
    assert plain.results[0].ref == "docs/options.md#auth"
    assert asked.results[0].ref == commit


def test_what_reads_as_asking_for_a_commit():
    for text in (
        "the second request arrives empty. Why, and what fixed it?",
        "which commit fixed the zombie processes?",
        "find the commit that started reaping them",
        "where was that fixed?",
        "what changed to stop that",
        "was this fixed",
    ):
        assert parse_query(text).commit, text
    for text in (
        "how do I pass flags through to a wrapped program?",
        "why is the docstring kept whole?",
        "which release fixed the upload retry?",  # a release question
        "was the fix for the pager reverted?",  # something undone
    ):
        assert not parse_query(text).commit, text


def test_what_reads_as_a_why_question():
    assert parse_query("why does the node adapter call setKeepAlive on the socket?").why
    assert parse_query("Why is the docstring kept whole?").why
    for text in (
        "why was the retry backed out?",  # something undone
        "which release fixed it, and why?",  # a release
        "the second request is empty. Why, and what fixed it?",  # a commit, asked for
        "how do I retry uploads?",
    ):
        assert not parse_query(text).why, text


def test_what_reads_as_a_question_about_something_undone():
    undone = [
        "did we ever try a lazy loader?",
        "why was the retry backed out",
        "was option_name removed and put back?",
        "what happened to the fish completions?",
        "has the alias come back?",
        "was it rolled back",
        "did we once try making the types re-export the CommonJS ones?",
        "and why was it taken out?",
    ]
    for text in undone:
        assert parse_query(text).undone, text
    for text in (
        "how do I add a subcommand",
        "why does the parser reject tabs",
        "every flag",
        "what happened with albums?",
        # present tense: what the code does now, not what was tried and undone
        "why is the hidden command taken out of the tree when there are no subcommands?",
    ):
        assert not parse_query(text).undone, text


def test_what_reads_as_a_question_about_a_release():
    for text in (
        "which release dropped Python 3.8?",
        "what version first let subcommands be chained",
        "In which cobra version did fish completions ship?",
        "the release that introduced the state-machine matcher",
        # a prerelease is a release: the bump that says "Beta.1" answers
        "Which prerelease was the first to include the owner stack helper?",
        "which v11 beta first supported streamed hydration?",
        "in which pre-release did the scroll snap events land?",
        "what release candidate dropped the UMD bundle",
        "which rc2 restored the old default?",
    ):
        assert parse_query(text).release, text
    for text in (
        "why does the script read $BASH_VERSION rather than bash --version",
        "when was that corrected?",
        "was the completion script bundled into the Windows release archive?",
        # an rc file and an alpha channel are not prereleases
        "which rc file does the zsh hook get written to?",
        "what alpha value does the overlay use?",
    ):
        assert not parse_query(text).release, text


async def test_a_revert_named_only_by_its_subject_is_linked(settings: Settings, make_repo):
    r: Repo = make_repo("subject")
    r.commit("Use a faster JSON parser", {"parse.py": "fast = 1\n"})
    r.commit('Revert "Use a faster JSON parser"', {"parse.py": "fast = 0\n"})
    r.commit('Revert "A commit that was never here"', {"parse.py": "fast = 2\n"})
    cm, _, report = await _synced(settings, r)
    await cm.__aexit__(None, None, None)
    assert report.reverts == 1


async def test_the_release_holding_every_change_asked_about_ranks_first(
    settings: Settings, make_repo
):
    filler = "".join(f"- Internal change number {i} to the build scripts.\n" for i in range(300))
    r: Repo = make_repo("released")
    quokka = r.commit("Add the quokka parser\n\nA quokka reader.", {"src/quokka.py": "x = 1\n"})
    zebra = r.commit("Add the zebra option\n\nA zebra switch.", {"src/zebra.py": "x = 1\n"})
    r.commit(
        "Write the changelog",
        {
            "CHANGES.md": "## Version 2.0.0\n\nReleased 2024-03-01\n\n"
            "- Drop support for Python 3.6.\n- New zebra option.\n- A quokka parser.\n"
            f"{filler}\n## Version 1.0.0\n\nReleased 2023-01-01\n\n- First release.\n"
        },
    )
    cm, engine, _ = await _synced(settings, r)
    try:
        response = await handlers.search(
            engine, "which release dropped python 3.6 and added zebra and quokka?", vector=False
        )
    finally:
        await cm.__aexit__(None, None, None)
    refs = [res.ref for res in response.results]
    # The section names all three changes; each commit one of them.
    assert refs.index("CHANGES.md#Version 2.0.0") < min(refs.index(quokka), refs.index(zebra))
    release = response.results[refs.index("CHANGES.md#Version 2.0.0")]
    assert release.title.endswith("version 2.0.0, released 2024-03-01")
    assert release.date == "2024-03-01"


async def test_a_release_below_the_first_hundred_rows_is_still_found(settings: Settings, make_repo):
    r: Repo = make_repo("buried")
    filler = "".join(f"- Internal change number {i} to the build scripts.\n" for i in range(200))
    # 120 short sections that each hold both words are BM25's first hundred rows; 200 others
    # keep the words rare enough to count.
    notes = "".join(f"## Gizmo sparkle note {i}\n\nShort.\n\n" for i in range(120))
    other = "".join(f"## Other topic {i}\n\nUnrelated.\n\n" for i in range(200))
    r.commit(
        "Write the docs",
        {
            "CHANGES.md": "## Version 3.0.0\n\nReleased 2025-02-01\n\n"
            f"- The gizmo can sparkle now.\n{filler}\n## Version 2.0.0\n\n- Older.\n",
            "docs/notes.md": notes,
            "docs/other.md": other,
        },
    )
    cm, engine, _ = await _synced(settings, r)
    try:
        asked = await handlers.search(engine, "which release let the gizmo sparkle?", vector=False)
    finally:
        await cm.__aexit__(None, None, None)
    assert asked.results[0].ref == "CHANGES.md#Version 3.0.0"


def test_an_identifier_is_searched_whole_and_by_its_parts():
    query = parse_query("why does paramsSerializer drop nulls in HTTPServer")
    assert query.terms[:4] == ["paramsserializer", "drop", "nulls", "httpserver"]
    assert {"params", "serializer", "http", "server"} <= set(query.terms)
    assert "params" not in query.excerpt_terms  # excerpts look for what was typed


async def test_coverage_lifts_the_row_holding_every_rare_term_over_bm25s_short_rows(
    settings: Settings, make_repo
):
    from nexusmem_core.retrieval.lexical import lexical_candidates
    from nexusmem_core.retrieval.words import word_candidates

    filler = "".join(f"Internal change number {i} to the build scripts.\n" for i in range(300))
    r: Repo = make_repo("covered")
    for word in ("quokka", "zebra", "wombat"):
        r.commit(f"Add the {word} parser\n\nThe {word} reader reads {word} files.")
    r.commit("docs", {"docs/all.md": f"# Everything\n\nquokka, zebra and wombat.\n\n{filler}"})
    cm, engine, _ = await _synced(settings, r)
    try:
        query = parse_query("quokka zebra wombat")
        bm25 = await word_candidates(engine.db, query.terms, engine.project_id, 10)
        covered = await lexical_candidates(engine.db, engine.project_id, query, 10, None, 10)
    finally:
        await cm.__aexit__(None, None, None)
    assert bm25[0].kind == "git_commit"  # BM25 alone: a short row with one word, three times
    assert covered[0].ref.endswith(("docs/all.md#Everything", ":docs/all.md"))  # section or diff


async def test_identifiers_are_found_as_a_developer_types_them(settings: Settings, make_repo):
    r: Repo = make_repo("identifiers")
    messages = {
        "#1234": "Handle empty frames\n\nFixes #1234.",
        "GH-77": "Keep the socket open (GH-77)",
        "url_quote": "Deprecate url_quote in favour of the stdlib",
        "werkzeug.utils.redirect": "Make werkzeug.utils.redirect default to 303",
        "src/app/loader.py": "Move plugin loading into src/app/loader.py",
        "--no-ignore": "Respect --no-ignore for nested repositories",
        "paramsSerializer": "Allow a function as paramsSerializer",
        "ERR_INVALID_URL": "Map ERR_INVALID_URL to a clear message",
    }
    shas = {typed: r.commit(message) for typed, message in messages.items()}
    for i in range(12):
        r.commit(f"Refactor module {i} of the loader and the socket code")
    cm, engine, _ = await _synced(settings, r)
    try:
        for typed, sha in shas.items():
            response = await handlers.search(engine, typed, vector=False)
            assert response.results[0].ref == sha, typed
    finally:
        await cm.__aexit__(None, None, None)


async def test_a_section_copied_into_another_file_shows_once_naming_the_copy(
    settings: Settings, make_repo
):
    r: Repo = make_repo("copies")
    steps = (
        "Install the package with pip, then run the development proxy on port 8080 so "
        "the tests that reach an external host can be recorded."
    )
    r.commit(
        "docs: contributing guide, twice",
        {
            "docs/contributing.md": f"# Contributing\n\n## Development proxy\n\n{steps}\n",
            ".github/CONTRIBUTING.md": f"# Contributing\n\n## Development proxy\n\n{steps}\n",
            "docs/other.md": "# Other\n\n## Proxy notes\n\nThe proxy is optional.\n",
        },
    )
    cm, engine, _ = await _synced(settings, r)
    try:
        response = await handlers.search(engine, "development proxy port 8080", vector=False)
    finally:
        await cm.__aexit__(None, None, None)
    sections = [res for res in response.results if res.kind == "doc_section"]
    copies = [res for res in sections if res.ref.endswith("#Development proxy")]
    assert len(copies) == 1
    other = {"docs/contributing.md#Development proxy", ".github/CONTRIBUTING.md#Development proxy"}
    assert copies[0].copies == sorted(other - {copies[0].ref})
    assert f"(the same text is in {copies[0].copies[0]})" in render_search(response)
    assert "docs/other.md#Proxy notes" in {res.ref for res in sections}  # not a copy


def test_what_reads_as_a_how_to_question():
    howto = [
        "How do I let my command accept flags it doesn't recognise?",
        "how can I throttle upload bandwidth from node?",
        "where should my tool keep its per-user config file?",
        "need HTTPS on the dev server - what do I pass to run_simple?",
        "Can I plug chardet in to guess the encoding?",
        "results come out in a different order every run - how to make it stable?",
    ]
    for text in howto:
        assert parse_query(text).howto, text
    other = [
        "Why does the client retry twice?",
        "how do I fix `TypeError: a bytes-like object is required`?",
        "which release made uploads retry, and how can I turn it off?",
        "can I still use the lazy loader, or was it reverted?",
        "How did the parser handle empty bodies before?",
    ]
    for text in other:
        assert not parse_query(text).howto, text


async def test_a_response_as_a_dict_is_what_asdict_makes_of_it(engine: Engine):
    """to_dict is written out for speed: it must stay what dataclasses.asdict gives, every
    field included, the lists copies (a caller may edit what it got)."""
    await handlers.sync(engine, embed=False)
    response = await handlers.search(engine, "retry budget timeouts")
    assert response.results
    out = response.to_dict()
    assert out == dataclasses.asdict(response)
    out["results"][0]["arms"].append("edited")
    assert "edited" not in response.results[0].arms


async def test_words_typed_apart_find_the_identifier_that_runs_them_together(
    settings: Settings, make_repo
):
    """ "base URL" is how a developer says it; ``baseURL`` is how the code and its commit
    wrote it, one term in the index."""
    r: Repo = make_repo("joined")
    target = r.commit(
        "Keep config.url as given when baseURL is relative", {"merge.js": "keep = 1\n"}
    )
    for i in range(8):  # enough rows for the words' weights to mean something
        r.commit(f"Tidy request helper {i}", {f"helper{i}.js": f"x = {i}\n"})
    r.commit("Leave the request config alone when relative", {"cfg.js": "b = 1\n"})
    cm, engine, _ = await _synced(settings, r)
    try:
        found = await handlers.search(
            engine, "why is the request config left alone with a relative base URL?", vector=False
        )
    finally:
        await cm.__aexit__(None, None, None)
    assert found.results[0].ref == target


async def test_an_identifier_joining_two_of_the_question_s_words_counts_as_those_words(
    settings: Settings, make_repo
):
    """The question's "fish completion" is ``FishCompletion`` in code. A row naming it holds
    those two words, side by side, and no more: counted as a third, rare term beside them,
    the join tied it with the row that holds three of the question's words."""
    r: Repo = make_repo("joined-cover")
    named = r.commit("Add the FishCompletion class", {"fish.py": "f = 1\n"})
    for i in range(12):  # enough rows for the words' weights to mean something
        r.commit(f"Refactor part {i} of the parser", {f"parse{i}.py": f"x = {i}\n"})
    whole = r.commit("Fish objects gain a repr", {"repr.py": "r = 1\n"})
    cm, engine, _ = await _synced(settings, r)
    try:
        found = await handlers.search(
            engine, "when did fish completion objects get a repr?", vector=False
        )
    finally:
        await cm.__aexit__(None, None, None)
    refs = [res.ref for res in found.results]
    assert refs.index(whole) < refs.index(named)


async def test_words_inside_an_identifier_the_commit_names_find_it(settings: Settings, make_repo):
    """The commit says ``DeadlineExceededErrors``; the question says "deadline exceeded". The
    index's tokenizer keeps the identifier whole; its parts are indexed beside it
    (retrieval/names.py)."""
    r: Repo = make_repo("names")
    target = r.commit(
        "Catch only subclasses of Exception in the importer\n\n"
        "On the hosted runtime DeadlineExceededErrors can occur anywhere, and a bare except "
        "swallowed them while a module was half loaded.\n",
        {"importer.py": "ok = 1\n"},
    )
    for i in range(8):  # enough rows for the words' weights to mean something
        r.commit(f"Tidy the loader {i}", {f"loader{i}.py": f"x = {i}\n"})
    other = r.commit("Document the request deadline option", {"docs.py": "d = 1\n"})
    cm, engine, _ = await _synced(settings, r)
    try:
        found = await handlers.search(
            engine, "why does the importer care about the deadline being exceeded?", vector=False
        )
        (names,) = await engine.db.fetchone("select names from nodes where ref = ?", (target,))
        (untouched,) = await engine.db.fetchone("select names from nodes where ref = ?", (other,))
    finally:
        await cm.__aexit__(None, None, None)
    assert [res.ref for res in found.results[:2]] == [target, other]
    assert names == "deadline exceeded errors"
    assert untouched == ""  # no identifier in it: nothing to split


def _filler(words: int, seed: int) -> str:
    """Words that mean nothing, none of them a question's: length without content."""
    rng = random.Random(seed)
    vocabulary = [
        a + b
        for a in ("ka", "lo", "mi", "nu", "po", "ri", "su", "te")
        for b in ("ba", "de", "fi", "go", "hu", "ji", "ke", "la", "mo", "ne")
    ]
    return " ".join(rng.choice(vocabulary) for _ in range(words))


async def test_a_long_section_that_holds_the_words_together_ranks_above_one_that_scatters_them(
    settings: Settings, make_repo
):
    """Two sections of one length hold every word of the question: the reference twice each,
    paragraphs apart, the guide once each, in one paragraph. Counted over the whole section
    they cover the question alike and the reference has more of each word; counted over its
    best window, only the guide answers it."""
    words = ["timeout", "instance", "defaults", "value", "wins", "call"]
    scattered = "\n\n".join(
        f"{_filler(100, i)} {w} {_filler(200, 20 + i)} {w} {_filler(100, 30 + i)}"
        for i, w in enumerate(words)
    )
    together = " ".join(f"{w} {_filler(3, 40 + i)}" for i, w in enumerate(words))
    repo = make_repo("windows")
    repo.commit(
        "docs: the reference and the guide",
        {
            "docs/reference.md": f"# Reference\n\n## Settings\n\n{scattered}\n",
            "docs/guide.md": (
                f"# Guide\n\n## Precedence\n\n{_filler(1200, 60)}\n\n{together}\n\n"
                f"{_filler(1180, 61)}\n"
            ),
        },
    )
    for i in range(40):  # rows enough that the question's words are rare in the index
        repo.commit(f"feat: {_filler(6, 200 + i)}", {f"src/p{i}.py": f"x = {i}\n"})
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        found = await handlers.search(
            engine,
            "the call and the instance defaults both set a timeout: which value wins?",
            vector=False,
        )
    refs = [r.ref for r in found.results]
    assert refs.index("docs/guide.md#Precedence") < refs.index("docs/reference.md#Settings")
