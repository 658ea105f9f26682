"""GitHub threads: an issue or pull request as the GraphQL query returns it, made into one
``github_thread`` node. The shape is GitHub's, the text anyone's: titles, posts and comments
may hold secrets, markup, and any length; fields may be null (a deleted account) or missing.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.github.nodes import Unreadable, thread_node

from .bounds import PROJECT, Store, Target, mutated, within

_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "github" / "threads.json"
_SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
_WORDS = [
    "crash on upload",
    " ",
    "\n",
    "fixes #12",
    f" {_SECRET} ",  # a token glued to a word is a longer word, by the table's design
    "```",
    "<!-- -->",
    "中文",
    "a" * 3000,
]
_HOSTILE: list[Any] = [
    None,
    0,
    -1,
    2**70,
    True,
    "",
    "x",
    "9999-12-31T23:59:59-12:00",
    "0001-01-01T00:00:00+01:00",
    [],
    {},
    {"nodes": None},
    {"nodes": [None, 1, {"body": 3}]},
    {"oid": "z" * 40},
]


def _threads() -> list[dict[str, Any]]:
    data = json.loads(_FIXTURES.read_text())
    found = data if isinstance(data, list) else list(data.values())
    return [t for t in found if isinstance(t, dict)] or [{"number": 1, "title": "x"}]


_BASES = _threads()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            out += [(*prefix, key), *_paths(inner, (*prefix, key))]
    elif isinstance(value, list):
        for index, inner in enumerate(value[:3]):
            out += [(*prefix, index), *_paths(inner, (*prefix, index))]
    return out


@st.composite
def threads(draw: st.DrawFn) -> dict[str, Any]:
    """A recorded thread with some fields, at any depth, replaced by hostile values or text."""
    thread = json.loads(json.dumps(draw(st.sampled_from(_BASES))))
    for _ in range(draw(st.integers(0, 5))):
        paths = _paths(thread)
        if not paths:
            break
        *steps, last = draw(st.sampled_from(paths))
        parent = thread
        for step in steps:
            parent = parent[step]
        hostile = st.sampled_from(_HOSTILE).map(copy.deepcopy)  # never one object in two places
        parent[last] = draw(st.one_of(hostile, mutated(_WORDS)))
    return thread


def check_thread(thread: dict[str, Any], store: Store) -> None:
    """A node a real database stores, with its secrets redacted, or Unreadable."""
    with within():
        try:
            node, _ = thread_node(PROJECT, thread, 20, 4000)
        except Unreadable:
            return
    assert 0 <= node.signal <= 1
    if not any(_SECRET in name for name in _names(thread)):  # a login cannot hold one
        assert _SECRET not in node.body + node.title
    store.write([node])


def _names(value: Any) -> list[str]:
    """Logins, paths and label names: shown as GitHub gives them, not redacted."""
    if isinstance(value, list):
        return [name for inner in value for name in _names(inner)]
    if not isinstance(value, dict):
        return []
    found = [v for k, v in value.items() if k in ("login", "path", "name") and isinstance(v, str)]
    return found + _names(list(value.values()))


@settings(max_examples=80, deadline=None)
@given(thread=threads())
def test_a_thread_becomes_a_node_or_is_unreadable(thread: dict[str, Any], store: Store) -> None:
    check_thread(thread, store)


TARGETS = {"GitHub threads": Target(threads(), check_thread, store=True)}
