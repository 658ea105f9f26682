"""Shell history files, read when no hook is installed: bash (with ``#<epoch>`` lines), zsh
(extended, metafied), fish (YAML-like) and PSReadLine. Any bytes may be in them: a crash
leaves NUL blocks, a tail may start inside a record, and a person may type anything.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.shell.history import (
    MAX_COMMAND_BYTES,
    PARSERS,
    read_tail,
    settled,
)
from nexusmem_core.collectors.shell.nodes import scraped_node

from .bounds import PROJECT, Store, Target, within

_PIECES = {
    "bash": [b"#1767225600\n", b"#17672256001767225600\n", b"# comment\n", b"#\n", b"#12a\n"],
    "zsh": [b": 1767225600:0;", b": 1767225600:12;", b": :;", b"\\\n", b"\x83", b"\x83\xa3"],
    "fish": [b"- cmd: ", b"  when: 1767225600\n", b"  when: x\n", b"  paths:\n", b"    - a\n"],
    "pwsh": [b"`\n", b"``\n", b"`"],
}
_COMMON = [
    b"make test\n",
    b"git push --force\n",
    b"export DB_PASSWORD=hunter2\n",
    b"\\n",
    b"\\\\",
    b"\x00\x00\x00\x00",
    b"\r\n",
    b"\n",
    b" ",
    b"\xff\xfe",
    b"\xe4\xb8\xad",
    b"\xed\xa0\x80",
    b"x" * 70_000,
]


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, bytes, int]:
    """A shell, its history file's bytes (its own records, mutated), and a tail length."""
    shell = draw(st.sampled_from(sorted(PARSERS)))
    pieces = st.sampled_from(_PIECES[shell] + _COMMON)
    data = b"".join(draw(st.lists(pieces, max_size=30)))
    if draw(st.booleans()):  # a long run of one piece (up to ~1 MB): what makes loops slow
        piece = draw(pieces)
        data += piece * draw(st.integers(1, max(1, min(5000, 1_000_000 // len(piece)))))
    return shell, data, draw(st.integers(1, 400))


def check_history(case: tuple[str, bytes, int], store: Store) -> None:
    """Entries parse in linear time with unique keys and capped commands; the tail read by
    sync parses the same way; every settled entry is a node a real database stores."""
    shell, data, tail_lines = case
    path = store.root.parent / f"history-{shell}"
    path.write_bytes(data)
    with within():
        entries = PARSERS[shell](data)
        tail, whole = read_tail(path, tail_lines, block_size=4096)
        kept = settled(PARSERS[shell](tail), whole)
    assert len({e.key for e in entries}) == len(entries)
    for entry in entries:
        assert "\x00" not in entry.command and entry.command.strip()
        assert len(entry.command) <= MAX_COMMAND_BYTES  # cut as bytes, before decoding
        assert entry.ts is None or 0 <= entry.ts < 10**15
    assert data.endswith(tail)
    if whole:
        assert tail == data
    nodes = [scraped_node(PROJECT, shell, e.key, e.command, e.ts, e.duration, 4000) for e in kept]
    assert all("hunter2" not in n.body and 0 <= n.signal <= 1 for n in nodes)
    store.write(nodes)


@settings(max_examples=80, deadline=None)
@given(case=histories())
@example(case=("zsh", b"\x83" * 100_000, 300))
@example(case=("fish", b"- cmd: " + b"\\" * 100_000 + b"\n", 300))
@example(case=("bash", b"#1767225600\n" + b"x\n" * 50_000, 300))
def test_a_history_file_parses_into_entries(case: tuple[str, bytes, int], store: Store) -> None:
    check_history(case, store)


TARGETS = {"shell history files": Target(histories(), check_history, store=True)}
