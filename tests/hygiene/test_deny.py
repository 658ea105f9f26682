"""The deny-list matcher: what "holds the value" means, the same with and without the value."""

from __future__ import annotations

import random

import pytest

from nexusmem_core.errors import UsageError
from nexusmem_core.hygiene.deny import (
    DenyFilter,
    literal_entry,
    normalize,
    regex_entry,
    row_pieces,
)
from nexusmem_core.models import Node


def denies(text: str, value: str, ignore_case: bool = False) -> bool:
    return DenyFilter([literal_entry(value, ignore_case, None)]).matches([text])


def reference(text: str, value: str) -> bool:
    """The rule, written out: the value occurs, and neither end cuts a run of ASCII letters
    and digits in two (anything outside ASCII counts as punctuation)."""

    def word(ch: str) -> bool:
        return ch.isascii() and ch.isalnum()

    start = text.find(value)
    while start != -1:
        end = start + len(value)
        cuts_left = start > 0 and word(text[start - 1]) and word(text[start])
        cuts_right = end < len(text) and word(text[end - 1]) and word(text[end])
        if not cuts_left and not cuts_right:
            return True
        start = text.find(value, start + 1)
    return False


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("hunter2", True),
        ("export PW=hunter2; ./run", True),
        ('{"password": "hunter2"}', True),
        ("https://bob:hunter2@example.com", True),
        ("PASSWORD_hunter2", True),  # an underscore separates, as any punctuation does
        ("密码hunter2", True),  # so does any character outside ASCII
        ("hunter22", False),
        ("xhunter2", False),
        ("hunter 2", False),
    ],
)
def test_a_value_matches_where_it_does_not_cut_a_word(text: str, found: bool):
    assert denies(text, "hunter2") is found


def test_punctuation_at_the_ends_of_a_value_is_a_boundary_of_its_own():
    assert denies("token=abc-secret!", "-secret!")
    assert denies("/home/alice/clients", "/home/alice")
    assert not denies("/home/alicea", "/home/alice")


def test_a_match_never_spans_two_pieces_of_a_node():
    deny = DenyFilter([literal_entry("hunter2", False, None)])
    assert not deny.matches(["hunter", "2"])
    assert deny.matches(["title", "pw: hunter2"])
    for split in ("hunter\x002", "hunter\n2"):
        with pytest.raises(UsageError, match="within one line"):
            normalize(split, ignore_case=False)


def test_ignore_case_and_surrounding_whitespace():
    assert denies("Token: HUNTER2", "hunter2", ignore_case=True)
    assert not denies("Token: HUNTER2", "hunter2")
    assert normalize("  Hunter2 \n", ignore_case=True) == "hunter2"
    with pytest.raises(UsageError, match="only whitespace"):
        normalize(" \t", ignore_case=False)


def test_without_the_value_the_matcher_agrees_with_the_rule():
    rng = random.Random(7)
    alphabet = "ab1 -_.\n\u00e9\u4e2d"
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        if text.strip() and rng.random() < 0.6:
            i = rng.randrange(len(text))
            value = text[i : i + rng.randint(1, 6)].strip()
        else:
            value = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))).strip()
        if not value or "\n" in value:
            continue
        assert denies(text, value) is reference(text, value), (text, value)


def test_an_entry_keeps_only_a_salted_hash_and_each_entry_its_own_salt():
    first, second = literal_entry("hunter2", False, None), literal_entry("hunter2", False, None)
    assert "hunter2" not in first.value and first.length == 7
    assert first.salt != second.salt and first.value != second.value


def test_a_node_is_matched_on_its_meta_values_not_their_json():
    node = Node(
        project_id="p",
        kind="shell_command",
        source="shell:hook",
        ref="r",
        title="shell: deploy",
        body="deploy",
        ts=None,
        signal=0.5,
        provenance="observed",
        meta={"cmd": 'login --password "hun\\ter2"'},
    )
    deny = DenyFilter([literal_entry('"hun\\ter2"', False, None)])
    assert deny.denies(node) and deny.dropped == 1
    # Read back from the database, the meta is JSON (the quote and backslash escaped there).
    assert deny.matches(row_pieces(node.title, node.body, "", node.meta_json))


def test_regex_entries_are_checked_before_they_are_kept():
    deny = DenyFilter([regex_entry(r"AKIA[0-9A-Z]{16}", False, None)])
    assert deny.matches(["key AKIAIOSFODNN7EXAMPLE here"])
    with pytest.raises(UsageError, match="not a valid regular expression"):
        regex_entry("(unclosed", False, None)
    with pytest.raises(UsageError, match="matches empty text"):
        regex_entry("x*", False, None)
