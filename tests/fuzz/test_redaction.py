"""Redaction over arbitrary text: it runs on every command, commit, patch, doc section and
transcript before anything is written, so it must end quickly on any input (a backtracking
pattern is a hang of the hook or the sync) and must catch every secret of a known shape.
"""

from __future__ import annotations

import string

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.redact import PLACEHOLDER, RULES, redact, redact_count

from .bounds import Target, mutated, repeated, within

# The pieces secrets and their contexts are made of: each rule's triggers and slices of its
# worked example, so repetition reaches the patterns' loops rather than their first test.
_FRAGMENTS = sorted(
    {t for rule in RULES for t in rule.triggers}
    | {rule.example[i : i + n] for rule in RULES for i in range(0, 40, 3) for n in (2, 5, 9)}
    | {" ", "\n", "'", '"', "=", ":", "-p", "--", "\\", "$", "[REDACTED]"}
)
texts = st.one_of(mutated(_FRAGMENTS), repeated(_FRAGMENTS, max_repeat=6000))


def check_redaction(text: str) -> None:
    """Redaction ends within the bound on anything, and is a fixed point."""
    with within():
        once, _ = redact_count(text)
        assert redact(once) == once
    assert once.count(PLACEHOLDER) >= text.count(PLACEHOLDER)


@settings(max_examples=80, deadline=None)
@given(texts)
@example("xapp-" * 300)
def test_redaction_of_any_text_ends_quickly(text: str) -> None:
    check_redaction(text)


_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_URLSAFE = _ALNUM + "_-"


def _run(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=low, max_size=high)


def _key(parts: list[str]) -> str:
    return "".join(parts)


# Secrets of each token format the table knows, built from its definition, not its example.
secrets = st.one_of(
    st.builds(_key, st.tuples(st.sampled_from(["AKIA", "ASIA"]), _run(_UPPER, 16, 16)).map(list)),
    st.builds(_key, st.tuples(st.sampled_from(["ghp_", "ghs_"]), _run(_ALNUM, 30, 60)).map(list)),
    st.builds(_key, st.tuples(st.just("glpat-"), _run(_URLSAFE, 20, 40)).map(list)),
    st.builds(_key, st.tuples(st.just("xoxb-"), _run(_ALNUM + "-", 10, 40)).map(list)),
    st.builds(
        # Header and payload are base64 of a JSON object, so both start with `eyJ`.
        lambda a, b, c: f"eyJ{a}.eyJ{b}.{c}",
        _run(_URLSAFE, 10, 30),
        _run(_URLSAFE, 7, 30),
        _run(_URLSAFE, 0, 30),
    ),
    st.builds(lambda body: f"sk-A1{body}", _run(_URLSAFE, 30, 50)),
    st.builds(lambda body: f"AIza{body}", _run(_URLSAFE, 35, 35)),
    st.builds(lambda body: f"sk_live_{body}", _run(_ALNUM, 10, 40)),
    st.builds(lambda body: f"npm_{body}", _run(_ALNUM, 36, 36)),
    st.builds(lambda body: f"hf_{body}", _run(string.ascii_letters, 34, 34)),
    st.builds(lambda body: f"hvs.{body}", _run(_URLSAFE, 24, 40)),
)
_BEFORE = ["", "echo ", "curl -H 'X: ", "# ", "(", '"', "git push https://", "key="]
_AFTER = ["", " ", "\n", "'", '"', ";", ")", ",", "@github.com/a/b.git"]


@settings(max_examples=150, deadline=None)
@given(secret=secrets, before=st.sampled_from(_BEFORE), after=st.sampled_from(_AFTER))
def test_a_secret_of_a_known_shape_never_survives(secret: str, before: str, after: str) -> None:
    text = f"{before}{secret}{after}"
    assert secret not in redact(text), text


TARGETS = {"redaction": Target(texts, check_redaction)}
