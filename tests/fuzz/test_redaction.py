"""Redaction over arbitrary text: it runs on every command, commit, patch, doc section and
transcript before anything is written, so it must end quickly on any input (a backtracking
pattern is a hang of the hook or the sync) and must catch every secret of a known shape.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.redact import PLACEHOLDER, RULES, redact, redact_count

from ..growth import costs
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
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_BECH32 = "023456789ACDEFGHJKLMNPQRSTUVWXYZ"


def _run(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=low, max_size=high)


def _key(parts: list[str]) -> str:
    return "".join(parts)


def _mixed(alphabet: str, size: int) -> st.SearchStrategy[str]:
    """A body of ``size`` characters holding a digit and both cases, as the formats whose
    prefix is also an ordinary word's start require (and random bodies have)."""
    return _run(alphabet, size - 3, size - 3).map(lambda body: "a1B" + body)


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
    # A sampling of the other providers. A base64 body's first characters are drawn without `+`
    # and `/`: the table looks for tokens where a run of 12 token characters starts, and real
    # tokens begin with fixed base64 (`ops_eyJ...`, `fm2_lJPE...`).
    st.builds(lambda body: f"AGE-SECRET-KEY-1{body}", _run(_BECH32, 58, 58)),
    st.builds(lambda body: f"sk-ant-api03-{body}AA", _run(_URLSAFE, 93, 93)),
    st.builds(
        lambda a, b: f"sk-proj-{a}T3BlbkFJ{b}", _run(_URLSAFE, 74, 74), _run(_URLSAFE, 74, 74)
    ),
    st.builds(lambda body: f"AKCp{body}", _run(_ALNUM, 69, 69)),
    st.builds(lambda a, b: f"v1.0-{a}-{b}", _run(_HEX, 24, 24), _run(_HEX, 146, 146)),
    st.builds(lambda body: f"dop_v1_{body}", _run(_HEX, 64, 64)),
    st.builds(lambda body: f"dp.pt.{body}", _run(_ALNUM, 40, 44)),
    st.builds(lambda a, b: f"dt0c01.{a}.{b}", _run(_UPPER, 24, 24), _run(_UPPER, 64, 64)),
    st.builds(lambda a, b: f"fm2_lJPE{a}{b}", _run(_ALNUM, 8, 8), _run(_B64, 92, 300)),
    st.builds(lambda a, b: f"glsa_{a}_{b}", _run(_ALNUM, 32, 32), _run(_HEX, 8, 8)),
    st.builds(lambda body: f"live_{body}", _mixed(_URLSAFE, 40)),
    st.builds(lambda body: f"EAAA{body}", _mixed(_URLSAFE, 60)),
    st.builds(
        lambda a, b, c: f"pat.{a}.{b}.{c}",
        _run(_URLSAFE, 22, 22),
        _run(_ALNUM, 24, 24),
        _run(_ALNUM, 20, 20),
    ),
    st.builds(lambda body: f"HRKU-AA{body}", _run(_URLSAFE, 58, 58)),
    st.builds(lambda body: f"lin_api_{body}", _run(_ALNUM, 40, 40)),
    st.builds(lambda body: f"NRAK-{body}", _run(_UPPER, 27, 27)),
    st.builds(lambda body: f"API-1{body}", _run(_UPPER, 25, 25)),
    st.builds(lambda body: f"pplx-{body}", _run(_ALNUM, 48, 48)),
    st.builds(lambda a, b: f"PMAK-{a}-{b}", _run(_HEX, 24, 24), _run(_HEX, 34, 34)),
    st.builds(lambda a, b: f"SG.{a}.{b}", _run(_URLSAFE, 22, 22), _run(_URLSAFE, 43, 43)),
    st.builds(lambda a, b: f"xkeysib-{a}-{b}", _run(_HEX, 64, 64), _run(_ALNUM, 16, 16)),
    st.builds(lambda body: f"shpat_{body}", _run(_HEX, 32, 32)),
    st.builds(lambda body: f"xoxe.xoxp-1-{body}", _run(_ALNUM, 163, 166)),
    st.builds(lambda body: f"SK{body}", _run(_HEX, 32, 32)),
    st.builds(lambda body: f"secret_{body}", _mixed(_ALNUM, 43)),
    st.builds(lambda body: f"YC{body}", _mixed(_URLSAFE, 38)),
)
_BEFORE = ["", "echo ", "curl -H 'X: ", "# ", "(", '"', "git push https://", "key="]
_AFTER = ["", " ", "\n", "'", '"', ";", ")", ",", "@github.com/a/b.git"]


@settings(max_examples=400, deadline=None)
@given(secret=secrets, before=st.sampled_from(_BEFORE), after=st.sampled_from(_AFTER))
def test_a_secret_of_a_known_shape_never_survives(secret: str, before: str, after: str) -> None:
    text = f"{before}{secret}{after}"
    assert secret not in redact(text), text


# --- Cost linear in the text, on any shape ------------------------------------------------------

# One unit of each shape, repeated to the size measured: a run of each printable character
# (base64 of zero bytes is a run of `A`), long base64 and hex, nested quotes, `=` runs and
# keywords repeated; and for every rule, each of its literals glued to more of a token's
# characters by one that is not (`+`: a token start every 14 characters, the body of a base64
# format running across them), and its example.
LINEAR_SHAPES: dict[str, str] = {f"run of {char!r}": char for char in string.printable} | {
    "base64": "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0MTIz+/",
    "hex": "0123456789abcdef",
    "nested quotes": "'\"`'\"",
    "quoted words": "\"'a'\" ",
    "key= repeated": "key=",
    "token: repeated": "token: ",
    "header repeated": "Authorization: Bearer ",
}
for _rule in RULES:
    for _literal in dict.fromkeys((*_rule.prefixes, *_rule.triggers)):
        LINEAR_SHAPES[f"{_rule.name} {_literal!r}"] = _literal + "Aa0Aa0Aa0Aa0+"
    LINEAR_SHAPES[f"{_rule.name} example"] = _rule.example

# Four times the text may cost up to this many times as much (linear: 4; quadratic: 16); the rest is
# slack for a loaded machine.
_GROWTH = 8
_SIZE = 32_768


def _sized(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


@pytest.mark.parametrize("unit", LINEAR_SHAPES.values(), ids=list(LINEAR_SHAPES))
def test_redaction_cost_grows_linearly_with_the_text(unit: str) -> None:
    # Four times the text, in one process, against the same shape: a pattern backtracking over
    # a long token, or a scan per occurrence of a literal, costs sixteen times as much.
    small, large = costs(redact, _sized(unit, _SIZE), _sized(unit, 4 * _SIZE), limit=_GROWTH)
    assert large <= _GROWTH * small, f"{large / small:.1f} times the cost for 4 times the text"


TARGETS = {"redaction": Target(texts, check_redaction)}
