"""What kind of answer a question asks for, when it says so, and the lift that kind gets.

Some questions name the kind of record that answers them:

- something tried and undone ("did we ever try X?", "did we once try X?", "why was it backed
  out", "why was it taken out", "what happened to that?", "has it come back?") is answered by
  a revert and the commit it undid; in the present tense ("why is X taken out of the tree
  when ...") it asks what the code does now, and is not such a question;
- "which release / what version added X and dropped Y" is answered by a changelog's section
  for that release;
- "how do I X?", "can I X?", "where should X go?" is answered by a documentation section more
  often than by the commit that made X possible (the section says how; the commit, that);
- "which commit fixed it?", "what changed to stop that?", "where was that fixed?" is answered
  by a commit, though a section of the docs that describes the symptom holds more of its
  words;
- "why does X do Y?" is answered where the reason was written down: the body of the commit
  that made it so, or a section headed as a rationale ("Why not Docopt?", "Design
  decisions", "Caveats"), not the reference section that lists the option (axios's *Request
  Config* holds half the words of any question about a request).

Words alone rank these badly in both arms. The vector arm finds the commits that made each
change a release lists (a release section runs to thousands of characters and its vector
reads only the head), and fused by rank they outvoted the section BM25 placed first; a
revert's own words ("Revert ...") say little of what the question asks. So when a question
reads as one of these, candidates of the kind it asks for are lifted ``LIFT`` times, after
the priors: a lift, not a filter, so a better-matching answer of another kind still wins.

Measured on the real set (bench/eval/real, MRR@10; BM25 / hybrid with all-minilm):

    release questions (36)   no lift 0.705 / 0.543   1.3: 0.735 / 0.690   1.6: 0.752 / 0.719
                             2.0: 0.752 / 0.724
    revert questions (36)    no lift 0.464 (BM25)    1.3: 0.502   1.6: 0.546   2.0: 0.574,
                             where release questions that read as undone began to lose
    how-to questions (36)    no lift 0.664 (BM25)    1.3: 0.701   1.6: 0.701   2.0: 0.705
    which-commit (19 of 216, all answered by commits; BM25, all kinds): no lift 0.761,
                             1.6: 0.765 (broke 0.684 -> 0.709; three rose, none fell)
    why-questions (30 of 216 read so, no other kind; all answered by commits):
                             no lift 0.765, 1.6: 0.771 (why 0.797 -> 0.832; five rose, none
                             fell); the generated story's doc targets 0.354 -> 0.341

The other kinds' questions did not move at 1.6: 1 of 180 reads as a release question, none as
an undone one, none as a how-to one (26 of the 36 how-to questions do). A question that reads
as more than one kind is taken as release or undone, then as which-commit, then as why, and
only then as how-to: "how did the release...", "can I still... after it was reverted" ask
for those. Nor is "how do I fix this error" how-to: a pasted error wants the commit that
fixed it. "When did X arrive" is not taken for a release question: it is as often asked of
a commit ("when was that corrected?").
A prerelease is a release: "which prerelease / which v11 beta / what release candidate
first had X" asks for the bump that says "Beta.1" (shipped.py). Read so since 2026-12-07,
after three of preact's seven release questions were found missed for want of it (preact
release 0.190 -> 0.619, all 421 questions 0.721 -> 0.728; no other question reads
differently): a fix found on the questions it lifts, so it has no held-out figure of its own.

Held out (issue 48; bench/eval/real/loo.py, eleven corpora, 421 questions), without the four
lifts: -0.024 [-0.034, -0.014] on all, -0.029 [-0.047, -0.014] on the five corpora written
after them, what keeps them; one at a time each is smaller (release -0.005, how-to -0.008,
which-commit -0.002, why -0.004) and LIFT at 1.3 or 2.0 is within noise of 1.6.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..collectors.changelog import is_changelog, version_of

__all__ = [
    "LIFT",
    "RATIONALE",
    "asks_commit",
    "asks_howto",
    "asks_release",
    "asks_undone",
    "asks_why",
    "is_release_section",
    "lift_commits",
    "lift_explained",
    "lift_howto",
    "lift_reasons",
    "lift_releases",
]

LIFT = 1.6

# "What happened with X" is not an undone question: it asks for the story, a failed command
# as much as a revert.
_UNDONE = re.compile(
    r"\b(?:revert\w*|back(?:ed)?\s+(?:\w+\s+)?out|undo\w*|undid|undone|roll(?:ed)?\s+back|"
    r"put\s+(?:\w+\s+)?back|c[oa]me\s+back|brought\s+back|reintroduc\w*|tried|attempt\w*|"
    r"ever|(?:was|were|got|been)\s+(?:\w+\s+)?taken\s+out|did\s+(?:we|you|they|someone|anyone)\s+"
    r"(?:\w+\s+)?try|(?:did|does)\s+(?:that|it)\s+(?:stick|last)|what\s+happened\s+to|"
    r"what\s+became\s+of)\b",
    re.IGNORECASE,
)
_RELEASE = re.compile(
    r"\b(?:(?:which|what|whose|first|in\s+which)\s+(?:\w+\s+){0,2}"
    r"(?:(?:pre-?)?release|version|beta|release\s+candidate|(?:alpha|rc)[.-]?\d+)s?|"
    r"(?:(?:pre-?)?release|version)\s+(?:\w+\s+)?(?:did|was|were|first|introduced|added|shipped|brought|"
    r"made|started|dropped|removed))\b",
    re.IGNORECASE,
)

# "Which commit fixed it", "what changed to stop that", "where was that fixed": the answer is
# a commit, whatever section of the docs holds more of the symptom's words.
_COMMIT = re.compile(
    r"\b(?:(?:which|what|the|a)\s+(?:\w+\s+){0,2}commits?|"
    r"what\s+(?:\w+\s+)?(?:fixed|changed|broke|caused|introduced)|"
    r"where\s+(?:was|did|has)\s+(?:\w+\s+){0,3}(?:fixed|changed)|"
    r"(?:was|been|got|get)\s+(?:this|that|it)\s+fixed|fixed\s+(?:it|this|that))\b",
    re.IGNORECASE,
)
# "Why does X do Y?": the reason is where it was written down, the body of the commit that made
# it so, or a section of the docs about a design, a decision, its trade-offs or caveats. The
# headings that make a section one (they weigh a doc section's signal too: ingest.py).
RATIONALE = re.compile(
    r"\b(why|rationale|decision|design|trade-?offs?|caveats?|limitations?|"
    r"known issues|gotchas?|troubleshoot\w*)\b",
    re.IGNORECASE,
)
_WHY = re.compile(r"\bwhy\b", re.IGNORECASE)
_HOWTO = re.compile(
    r"\bhow\s+(?:do|can|should|would|could)\s+(?:i|we|you|one|users?|my|end\s+users)\b|"
    r"\bhow\s+to\b|\bwhere\s+should\b|\bwhat\s+do\s+i\s+pass\b|\bcan\s+i\b",
    re.IGNORECASE,
)
_REPAIR = re.compile(
    r"\b(?:how\s+(?:do|can|should)\s+(?:i|we|you)|how\s+to|can\s+i)\s+"
    r"(?:fix|solve|work\s+around|get\s+rid\s+of|debug)\b",
    re.IGNORECASE,
)


def asks_undone(text: str) -> bool:
    return _UNDONE.search(text) is not None


def asks_release(text: str) -> bool:
    return _RELEASE.search(text) is not None


def asks_commit(text: str) -> bool:
    return _COMMIT.search(text) is not None


def asks_why(text: str) -> bool:
    return _WHY.search(text) is not None


def asks_howto(text: str) -> bool:
    return _HOWTO.search(text) is not None and _REPAIR.search(text) is None


class _Candidate(Protocol):
    """What a lift reads of a candidate (store.fts.Candidate; named so, the store, which
    parses queries with this package, is not imported back)."""

    kind: str
    seq: int
    score: float
    relevance: float

    @property
    def meta(self) -> dict[str, Any]: ...  # read-only: a Candidate decodes it when asked


C = TypeVar("C", bound=_Candidate)


def is_release_section(c: _Candidate) -> bool:
    """A changelog's section for one release (collectors/changelog.py)."""
    if c.kind != "doc_section":
        return False
    path, heading = c.meta.get("path"), c.meta.get("heading")
    return (
        isinstance(path, str)
        and isinstance(heading, str)
        and is_changelog(path)
        and (version_of(heading) is not None)
    )


def lift_releases(candidates: list[C]) -> list[C]:
    """For a release question: its release sections lifted; best first again."""
    return _lifted(candidates, is_release_section)


def lift_commits(candidates: list[C]) -> list[C]:
    """For a question that asks which commit did something: the commits lifted (with the
    diffs they hold, grouped into them before this); best first again."""
    return _lifted(candidates, lambda c: c.kind == "git_commit")


def lift_reasons(candidates: list[C]) -> list[C]:
    """For a why-question: the commits, and the doc sections headed as a rationale ("Why not
    Docopt?", "Design decisions", "Caveats"), lifted; best first again.

    Lowering the release sections as much as the commits are lifted, so that a changelog line
    stood beside the commit whose subject it repeats (here and for which-commit questions),
    was tried for issue 48: +0.003 [+0.000, +0.009] held out when added, then, beside the
    commit's coverage as one unit and the explaining lift, +0.000 [-0.001, +0.000] (BM25 and
    hybrid alike; two or three questions a place higher). Within its noise, it was removed."""
    return _lifted(candidates, _is_reason)


EXPLAINED = 1.5  # the word arm's lift, for a why-question, of a commit whose message explains
BODY_CHARS = 80  # a message this much longer than its subject explains something


def lift_explained(candidates: list[C], explaining: set[int]) -> list[C]:
    """For a why-question, in the word arm's list: the commits whose message says more than
    its subject (their ``seq`` in ``explaining``) lifted ``EXPLAINED`` times; best first again.

    The reason for a change is written in a body, if anywhere: of several commits on one
    topic, the one that explains is the answer to "why", and the subject-only sibling holding
    the same words is not. The message's own match is lifted, before a commit's diffs join it
    (group.py): a commit found by its diff alone is not lifted for a body that did not match.
    Held out (issue 48, bench/eval/real/loo.py, eleven corpora): the lift chosen on ten
    corpora (1.2, 1.5 or 2; a body past 20, 80 or 200 characters) was 1.5 past 80 for each of
    the eleven; 0.715 -> 0.722 held out when added, why-questions +0.036, no other kind
    moved. At the code of its last review, without it: -0.007 [-0.014, -0.002] on all 421
    questions, -0.009 [-0.020, +0.000] on the five blind corpora; with both arms -0.004
    [-0.008, -0.000]. Lifting the whole commit after grouping instead gained +0.004."""
    for c in candidates:
        if c.kind == "git_commit" and c.seq in explaining:
            c.relevance *= EXPLAINED
    return sorted(candidates, key=lambda c: c.relevance, reverse=True)


def _is_reason(c: _Candidate) -> bool:
    if c.kind == "git_commit":
        return True
    heading = c.meta.get("heading")
    return (
        c.kind == "doc_section"
        and isinstance(heading, str)
        and RATIONALE.search(heading) is not None
    )


def lift_howto(candidates: list[C]) -> list[C]:
    """For a how-to question: its documentation sections (not release notes) lifted; best
    first again."""
    return _lifted(candidates, lambda c: c.kind == "doc_section" and not is_release_section(c))


def _lifted(candidates: list[C], wanted: Callable[[C], bool]) -> list[C]:
    for c in candidates:
        if wanted(c):
            c.score *= LIFT
    return sorted(candidates, key=lambda c: c.score, reverse=True)
