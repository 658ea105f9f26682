"""Configuration files a person edits by hand: ``.nexusmem/config.json``, the project registry,
Claude Code's ``settings.json`` (the agent hooks' home), and a deny list exported for import.

Any text may be in them. Reading one gives its settings, or one line naming the file and
what to do (``ConfigError``, ``UsageError``); never a traceback.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.agent.settings import file_status
from nexusmem_core.config import ProjectConfig, dump_config, load_config, schema
from nexusmem_core.errors import ConfigError, UsageError
from nexusmem_core.hygiene.deny import regex_entry
from nexusmem_core.hygiene.forget import _parse as parse_deny_list
from nexusmem_core.registry import load_registry

from .bounds import Store, Target, junk_bytes, within

_HOSTILE: list[Any] = [
    None,
    True,
    0,
    -1,
    10**30,
    1.5,
    float("nan"),
    "",
    " ",
    "x",
    "\ud800",
    [],
    ["*.md", 3],
    {},
    {"unknown": 1},
]
_RAW = [
    b"",
    b"\xef\xbb\xbf{}",
    b"{",
    b"[" * 100_000,
    b'{"a":' * 50_000,
    b"1" * 5000,
    b'{"limits": {"maxBodyChars": ' + b"9" * 5000 + b"}}",
    b"\xff\xfe{\x00}\x00",
    b"NaN",
    b'{"sources": {"git": {"enabled": true}}, "sources": 1}',
]
_DEFAULTS = ProjectConfig().model_dump(mode="json", by_alias=True)  # every setting a file takes


def _paths(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for key, value in tree.items():
        out.append((*prefix, key))
        if isinstance(value, dict):
            out += _paths(value, (*prefix, key))
    return out


_PATHS = _paths(_DEFAULTS)


@st.composite
def config_texts(draw: st.DrawFn) -> bytes:
    """The file ``init`` writes, with settings replaced, misspelt or added; or raw junk."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.one_of(st.sampled_from(_RAW), junk_bytes(st.text(max_size=40))))
    tree = json.loads(json.dumps(_DEFAULTS))
    for path in draw(st.lists(st.sampled_from(_PATHS), max_size=4)):
        parent = tree
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent.get(key), dict) else {}
        key = path[-1]
        change = draw(st.sampled_from(["value", "rename", "drop"]))
        if change == "value":
            parent[key] = draw(st.sampled_from(_HOSTILE).map(copy.deepcopy))
        elif change == "rename" and key in parent:
            parent[draw(st.sampled_from([key.upper(), key + "s", key.replace("max", "max_")]))] = (
                parent.pop(key)
            )
        else:
            parent.pop(key, None)
    text = json.dumps(tree, indent=draw(st.sampled_from([None, 2])), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


def _one_line(message: str, path: Path) -> None:
    assert "\n" not in message and str(path) in message, message


def check_config(data: bytes, store: Store) -> None:
    """config.json: a ProjectConfig, or a one-line ConfigError naming the file."""
    path = store.root.parent / "config.json"
    path.write_bytes(data)
    with within():
        try:
            config = load_config(path)
        except ConfigError as err:
            _one_line(str(err), path)
            return
    validated = schema.load_config(path)  # without the snapshot
    assert isinstance(validated, ProjectConfig)
    assert config == validated  # the snapshot's view holds what the schema made of the file
    assert load_config(path) == validated  # and so does its second read, from the snapshot
    path.write_text(dump_config(validated))
    assert load_config(path) == validated  # what init writes reads back the same


def check_registry(data: bytes, store: Store) -> None:
    """projects.json: a corrupt registry reads as empty (it is rebuilt by the next syncs)."""
    (store.root.parent / "projects.json").write_bytes(data)
    with within():
        entries = load_registry(store.root.parent)
    assert isinstance(entries, list)


def check_agent_settings(data: bytes, store: Store) -> None:
    """Claude Code's settings.json: `agent status` says it is unreadable, it does not fail."""
    path = store.root.parent / "settings.json"
    path.write_bytes(data)
    with within():
        status = file_status("user", path)
    if status.state == "unreadable":
        for warning in status.warnings:
            _one_line(warning, path)


def check_deny_list(data: bytes, store: Store) -> None:
    """An exported deny list: its entries, or a one-line UsageError naming the file."""
    path = store.root.parent / "deny.json"
    path.write_bytes(data)
    with within(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # re: "possible nested set" in a pattern
        try:
            parse_deny_list(path)
        except UsageError as err:
            _one_line(str(err), path)


@st.composite
def deny_lists(draw: st.DrawFn) -> bytes:
    entry = {
        "kind": draw(st.sampled_from(["literal", "regex", "x", None])),
        "value": draw(
            st.sampled_from(["a" * 64, "secret", "(" * 1000 + ")" * 1000, "a{99999999999}", "["])
        ),
        "salt": draw(st.sampled_from(["s", "", "\ud800", None])),
        "length": draw(st.sampled_from([6, 0, -1, 10**9, True])),
        "ignore_case": draw(st.sampled_from([False, True, None])),
        "reason": draw(st.sampled_from([None, "why", "\ud800", 3])),
    }
    document = {"format": "nexusmem-deny-list/1", "entries": [entry]}
    if draw(st.booleans()):
        return draw(st.sampled_from(_RAW))
    return json.dumps(document).encode()


@settings(max_examples=100, deadline=None)
@given(data=config_texts())
@example(data=b"[" * 100_000)
@example(data=b"1" * 5000)
def test_a_config_file_loads_or_is_one_line(store: Store, data: bytes) -> None:
    check_config(data, store)


@settings(max_examples=40, deadline=None)
@given(data=st.one_of(st.sampled_from(_RAW), junk_bytes(st.text(max_size=30))))
@example(data=b"[" * 100_000)
def test_a_corrupt_registry_reads_as_empty(store: Store, data: bytes) -> None:
    check_registry(data, store)


@settings(max_examples=40, deadline=None)
@given(data=st.one_of(config_texts(), st.sampled_from([b'{"hooks": []}', b'{"hooks": {"x": 1}}'])))
@example(data=b"1" * 5000)
def test_a_broken_agent_settings_file_is_unreadable(store: Store, data: bytes) -> None:
    check_agent_settings(data, store)


@settings(max_examples=60, deadline=None)
@given(data=deny_lists())
@example(
    data=json.dumps(
        {
            "format": "nexusmem-deny-list/1",
            "entries": [
                {
                    "kind": "regex",
                    "value": "(" * 1000 + ")" * 1000,
                    "ignore_case": False,
                    "reason": None,
                }
            ],
        }
    ).encode()
)
def test_a_deny_list_imports_or_is_one_line(store: Store, data: bytes) -> None:
    check_deny_list(data, store)


def test_a_pattern_python_cannot_compile_is_a_usage_error() -> None:
    for pattern in ("(" * 1000 + ")" * 1000, "a{99999999999}"):
        try:
            regex_entry(pattern, False, None)
        except UsageError as err:
            assert "not a valid regular expression" in str(err)
        else:  # pragma: no cover
            raise AssertionError(pattern)


def test_every_setting_is_reachable_by_the_generator() -> None:
    def leaves(cls: Any) -> int:
        return sum(
            leaves(f.annotation) if _is_section(f.annotation) else 1
            for f in cls.model_fields.values()
        )

    assert len([p for p in _PATHS if not isinstance(_get(_DEFAULTS, p), dict)]) == leaves(
        ProjectConfig
    )


def _is_section(kind: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _get(tree: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        tree = tree[key]
    return tree


TARGETS = {
    "config.json": Target(config_texts(), check_config, store=True),
    "projects.json": Target(st.sampled_from(_RAW), check_registry, store=True),
    "agent settings.json": Target(config_texts(), check_agent_settings, store=True),
    "deny list import": Target(deny_lists(), check_deny_list, store=True),
}
