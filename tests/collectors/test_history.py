"""Shell history files read without a hook: four formats, stable keys, tails of large files."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.shell.history import (
    MAX_COMMAND_BYTES,
    HistoryEntry,
    LastRead,
    default_history_files,
    parse_bash,
    parse_fish,
    parse_pwsh,
    parse_zsh,
    read_tail,
    settled,
)

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z

PARSERS: dict[str, Callable[[bytes], list[HistoryEntry]]] = {
    "bash": parse_bash,
    "zsh": parse_zsh,
    "fish": parse_fish,
    "pwsh": parse_pwsh,
}


# --- writers: what each shell puts in its file, so tests state commands, not bytes -----------


def metafy(raw: bytes) -> bytes:
    """zsh's on-disk form: NUL and bytes 0x83..0xA2 become 0x83 followed by byte ^ 0x20."""
    out = bytearray()
    for byte in raw:
        if byte == 0 or 0x83 <= byte <= 0xA2:
            out += bytes((0x83, byte ^ 0x20))
        else:
            out.append(byte)
    return bytes(out)


def bash_record(command: str, ts: int | None = None) -> list[bytes]:
    stamp = [f"#{ts}".encode()] if ts is not None else []
    return stamp + command.encode().split(b"\n")


def zsh_record(command: str, ts: int | None = None, duration: int = 0) -> list[bytes]:
    head = f": {ts}:{duration};" if ts is not None else ""
    return metafy((head + command).encode()).replace(b"\n", b"\\\n").split(b"\n")


def fish_record(command: str, ts: int, paths: tuple[str, ...] = ()) -> list[bytes]:
    escaped = command.replace("\\", "\\\\").replace("\n", "\\n")
    lines = [f"- cmd: {escaped}", f"  when: {ts}"]
    if paths:
        lines += ["  paths:", *(f"    - {p}" for p in paths)]
    return [line.encode() for line in lines]


def pwsh_record(command: str) -> list[bytes]:
    return command.encode().replace(b"\n", b"`\n").split(b"\n")


def join(records: list[list[bytes]]) -> bytes:
    return b"".join(line + b"\n" for record in records for line in record)


def commands(entries: list[HistoryEntry]) -> list[str]:
    return [e.command for e in entries]


# --- bash ------------------------------------------------------------------------------------


def test_bash_without_timestamps_reads_a_command_a_line() -> None:
    data = b"git status\nmake test\n\n# not a timestamp\nfor f in *.py; do\nruff check $f\ndone\n"
    entries = parse_bash(data)
    assert commands(entries) == [
        "git status",
        "make test",
        "# not a timestamp",
        "for f in *.py; do",
        "ruff check $f",
        "done",
    ]
    assert all(e.ts is None and e.duration is None and e.shell == "bash" for e in entries)
    assert all(e.key.startswith("bash:ctx:") for e in entries)


def test_bash_timestamp_lines_date_the_lines_up_to_the_next_one_as_one_command() -> None:
    data = (
        b"#1767225600\n"
        b"git status\n"
        b"#1767225612\n"
        b"for f in *.py; do\n"
        b'  ruff check "$f"\n'
        b"done\n"
        b"#1767225630\n"
        b"# a comment is a command, not a timestamp\n"
        b"#1767225631\n"
        b"#12ab\n"
        b"#1767225640\n"
        b"#1767225641\n"  # an empty command: skipped, its timestamp dates nothing
        b"echo done\r\n"
    )
    entries = parse_bash(data)
    assert [(e.ts, e.command) for e in entries] == [
        (1767225600, "git status"),
        (1767225612, 'for f in *.py; do\n  ruff check "$f"\ndone'),
        (1767225630, "# a comment is a command, not a timestamp"),
        (1767225631, "#12ab"),
        (1767225641, "echo done"),
    ]
    assert entries[0].key.startswith("bash:1767225600:")
    assert all(e.duration is None for e in entries)


def test_bash_lines_before_the_first_timestamp_are_untimed_commands() -> None:
    entries = parse_bash(b"ls\npwd\n#1767225600\nmake\n")
    assert [(e.ts, e.command) for e in entries] == [(None, "ls"), (None, "pwd"), (T0, "make")]


def test_bash_untimed_entries_before_the_first_timestamp_are_held_back_in_a_tail() -> None:
    """They may be the rest of a multi-line command whose ``#<epoch>`` line is cut off."""
    data = b"".join(f"cmd {i}\n".encode() for i in range(8)) + b"#1767225600\nmake\n"
    entries = parse_bash(data)
    assert commands(settled(entries, whole_file=False)) == ["make"]
    assert settled(entries, whole_file=True) == entries


# --- zsh -------------------------------------------------------------------------------------


def test_zsh_extended_history_gives_start_duration_continuations_and_unmetafied_text() -> None:
    # "ß" is C3 9F and "—" is E2 80 94: 0x9F and 0x94 are metafied as 0x83, byte ^ 0x20.
    data = (
        b": 1767225600:0;cd ~/src/app\n"
        b": 1767225605:42;make test\n"
        b": 1767225700:1;echo Stra\xc3\x83\xbfe \xe2\x80\x83\xb4 fin\n"
        b": 1767225710:3;for f in *.py; do\\\n"
        b"  ruff check $f\\\n"
        b"done\n"
        b": 1767225720:0;echo trailing \\\\\n"  # a line continuation typed by the user
        b"  more\n"
    )
    entries = parse_zsh(data)
    assert [(e.ts, e.duration, e.command) for e in entries] == [
        (1767225600, 0.0, "cd ~/src/app"),
        (1767225605, 42.0, "make test"),
        (1767225700, 1.0, "echo Straße — fin"),
        (1767225710, 3.0, "for f in *.py; do\n  ruff check $f\ndone"),
        (1767225720, 0.0, "echo trailing \\\n  more"),
    ]
    assert all(e.key.startswith(f"zsh:{e.ts}:") for e in entries)


def test_zsh_metafy_helper_matches_the_bytes_zsh_writes() -> None:
    assert metafy("Straße — fin".encode()) == b"Stra\xc3\x83\xbfe \xe2\x80\x83\xb4 fin"


def test_zsh_plain_lines_and_lines_not_in_extended_form_are_untimed_commands() -> None:
    data = b"ls -la\ngit log\\\n  --oneline\n: 1767225600:0;make\n:not extended\n: 12:x;nope\n"
    entries = parse_zsh(data)
    assert [(e.ts, e.command) for e in entries] == [
        (None, "ls -la"),
        (None, "git log\n  --oneline"),
        (T0, "make"),
        (None, ":not extended"),
        (None, ": 12:x;nope"),
    ]
    assert entries[0].duration is None


# --- fish ------------------------------------------------------------------------------------


def test_fish_entries_with_when_paths_and_escapes() -> None:
    data = (
        b"- cmd: cd ~/src/app\n"
        b"  when: 1767225600\n"
        b"- cmd: cat notes.txt\n"
        b"  when: 1767225610\n"
        b"  paths:\n"
        b"    - notes.txt\n"
        b"- cmd: for f in *.py\\n    ruff check $f\\nend\n"
        b"  when: 1767225620\n"
        b"- cmd: echo C:\\\\temp \\\\n \\t literal\n"
        b"  when: 1767225630\n"
        b"- cmd: echo caf\xc3\xa9\n"
        b"- cmd: \n"
        b"  when: 1767225640\n"
    )
    entries = parse_fish(data)
    assert [(e.ts, e.command) for e in entries] == [
        (1767225600, "cd ~/src/app"),
        (1767225610, "cat notes.txt"),
        (1767225620, "for f in *.py\n    ruff check $f\nend"),
        (1767225630, "echo C:\\temp \\n \\t literal"),
        (None, "echo café"),  # no when: line, so no time
    ]
    assert entries[4].key.startswith("fish:ctx:")


def test_fish_lines_before_the_first_cmd_are_ignored() -> None:
    data = b"  when: 1767225600\n  paths:\n    - x\n- cmd: make\n  when: 1767225601\n"
    assert [(e.ts, e.command) for e in parse_fish(data)] == [(1767225601, "make")]


# --- pwsh ------------------------------------------------------------------------------------


def test_pwsh_backtick_continues_a_command_onto_the_next_line() -> None:
    data = (
        b"Get-ChildItem -Recurse\r\n"
        b"Get-Process |`\r\n"
        b"  Where-Object CPU -gt 100 |`\r\n"
        b"  Sort-Object CPU\r\n"
        b"Write-Host ``\n"  # the user's own backtick continuation, written as `` + newline
        b"  done\r\n"
    )
    entries = parse_pwsh(data)
    assert commands(entries) == [
        "Get-ChildItem -Recurse",
        "Get-Process |\n  Where-Object CPU -gt 100 |\n  Sort-Object CPU",
        "Write-Host `\n  done",
    ]
    assert all(e.ts is None and e.key.startswith("pwsh:ctx:") for e in entries)


# --- keys ------------------------------------------------------------------------------------


def test_identical_commands_in_the_same_second_both_survive() -> None:
    data = join([bash_record("make test", T0), bash_record("make test", T0)])
    keys = [e.key for e in parse_bash(data)]
    assert len(set(keys)) == 2
    assert keys[0].endswith(":0") and keys[1].endswith(":1")
    assert keys[0].rsplit(":", 1)[0] == keys[1].rsplit(":", 1)[0]


def test_a_repeated_command_sequence_does_not_collapse() -> None:
    block = ["cd ~/src/app", "git pull", "make test", "git status"]
    entries = parse_pwsh(join([pwsh_record(c) for c in block * 3]))
    assert len(entries) == 12
    assert len({e.key for e in entries}) == 12
    # from the second block on, context and command repeat: only n tells them apart
    assert entries[4].key.rsplit(":", 1)[0] == entries[8].key.rsplit(":", 1)[0]
    assert (entries[4].key[-2:], entries[8].key[-2:]) == (":0", ":1")


def test_appending_to_a_file_keeps_the_keys_of_what_was_there() -> None:
    before = join([zsh_record(f"cmd {i}") for i in range(20)])
    after = before + join([zsh_record(f"later {i}") for i in range(5)])
    keys = [e.key for e in parse_zsh(before)]
    assert [e.key for e in parse_zsh(after)][:20] == keys


def test_ts_is_never_invented() -> None:
    for parse in (parse_bash, parse_pwsh):
        assert all(e.ts is None for e in parse(b"ls\nmake\n"))
    assert all(e.ts is None for e in parse_zsh(b"ls\nmake\n"))


def test_nul_padding_left_by_a_crash_is_not_a_command() -> None:
    data = b"git status\n" + b"\x00" * 4096 + b"\nmake\x00 test\n"
    assert commands(parse_bash(data)) == ["git status", "make test"]


# --- trimming from the front: no new ids, nothing lost ----------------------------------------

_BLOCK = ["cd ~/src/app", "git pull --rebase", "make test", "git status"]


def _untimed_commands() -> list[str]:
    cmds = [f"echo step {i}" for i in range(6)]
    cmds += _BLOCK * 3  # an exact repeat of a 4-command sequence
    cmds += ["for f in a b c d e\ndo\n  echo $f\n  wc -l $f\ndone"]  # 5 lines in one command
    cmds += ["python -c 'print(1)'", "make test", "make test", "ls"]
    cmds += ["docker run \\\n  --rm \\\n  -it \\\n  alpine sh", "echo Straße — fin"]
    cmds += [f"echo tail {i}" for i in range(5)]
    return cmds


def _timed_commands() -> list[tuple[int, str]]:
    out = [(T0 + i, c) for i, c in enumerate(_untimed_commands())]
    out += [(T0 + 100, "make test"), (T0 + 100, "make test")]  # same second, same command
    out += [(T0 + 101 + i, f"echo after {i}") for i in range(4)]
    return out


def _fixture(fmt: str) -> list[tuple[list[bytes], bool]]:
    """(record lines, timed) for one format: every record parses to exactly one entry."""
    if fmt == "bash-plain":  # without timestamps a multi-line command is several commands
        lines = [line for c in _untimed_commands() for line in c.split("\n")]
        return [(bash_record(line), False) for line in lines]
    if fmt == "bash-timed":
        return [(bash_record(c, ts), True) for ts, c in _timed_commands()]
    if fmt == "zsh-plain":
        return [(zsh_record(c), False) for c in _untimed_commands()]
    if fmt == "zsh-extended":
        return [(zsh_record(c, ts, 2), True) for ts, c in _timed_commands()]
    if fmt == "fish":
        timed = enumerate(_timed_commands())
        return [(fish_record(c, ts, ("x",) if i % 3 else ()), True) for i, (ts, c) in timed]
    assert fmt == "pwsh"
    return [(pwsh_record(c), False) for c in _untimed_commands()]


# How many untimed entries at the head of a tail may be held back: the 3 without their full
# context, plus a possible fragment of a multi-line command where one can span lines.
HELD_BACK = {"bash-plain": 3, "zsh-plain": 4, "pwsh": 4}


FORMATS = ["bash-plain", "bash-timed", "zsh-plain", "zsh-extended", "fish", "pwsh"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_trimming_the_file_from_the_front_makes_no_new_ids_and_loses_nothing(fmt: str) -> None:
    parse = PARSERS[fmt.split("-")[0]]
    records = _fixture(fmt)
    lines = [line for record, _ in records for line in record]
    full = parse(join([record for record, _ in records]))
    assert len(full) == len(records)
    assert len({e.key for e in full}) == len(full)
    full_keys = {e.key for e in full}
    starts, at = [], 0
    for record, _ in records:
        starts.append(at)
        at += len(record)

    for k in range(len(lines)):
        trimmed = settled(parse(b"".join(line + b"\n" for line in lines[k:])), whole_file=False)
        keys = [e.key for e in trimmed]
        assert len(set(keys)) == len(keys)
        assert set(keys) <= full_keys, f"new ids after dropping {k} lines"

        whole = [(full[i], records[i][1]) for i, start in enumerate(starts) if start >= k]
        untimed = [e for e, timed in whole if not timed]
        held = {id(e) for e in untimed[: HELD_BACK.get(fmt, 0)]}
        expected = Counter((e.command, e.ts) for e, _ in whole if id(e) not in held)
        got = Counter((e.command, e.ts) for e in trimmed)
        assert not expected - got, f"entries lost after dropping {k} lines"


@pytest.mark.parametrize("tail", [24, 300])
@pytest.mark.parametrize("fmt", ["bash-plain", "bash-timed", "zsh-extended", "fish", "pwsh"])
def test_syncing_a_growing_truncated_file_records_each_command_once(
    fmt: str, tail: int, tmp_path: Path
) -> None:
    """A shell appends and truncates its file to its last 40 lines; sync reads 24-line tails,
    or (300) the whole file, each sync told what the one before it read."""
    parse = PARSERS[fmt.split("-")[0]]
    path = tmp_path / "history"
    lines: list[bytes] = []
    seen: dict[str, str] = {}  # key -> command
    made: list[str] = []
    last: LastRead | None = None
    for step in range(40):
        for j in range(5):
            i = step * 5 + j
            command = f"run {i} \n  -a\n  -b\n  -c\n  --more {i}" if i % 7 == 3 else f"run {i}"
            made.append(command)
            if fmt == "bash-plain":
                record = bash_record(command.replace("\n", " "))
                made[-1] = command.replace("\n", " ")
            elif fmt == "bash-timed":
                record = bash_record(command, T0 + i)
            elif fmt == "zsh-extended":
                record = zsh_record(command, T0 + i)
            elif fmt == "fish":
                record = fish_record(command, T0 + i)
            else:
                record = pwsh_record(command)
            lines += record
        lines = lines[-40:]
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        data, whole = read_tail(path, tail)
        entries = parse(data)
        now = LastRead.of(path, entries)
        for entry in settled(entries, whole, last.overlap(now) if whole and last else range(0)):
            assert seen.setdefault(entry.key, entry.command) == entry.command
        last = LastRead.decode(now.encode())
    by_command = Counter(seen.values())
    assert set(by_command.values()) == {1}, "a command was recorded under two ids"
    assert set(by_command) == set(made), "a command was never recorded"


def test_a_last_read_lines_up_with_its_own_file_and_holds_back_only_what_it_had(
    tmp_path: Path,
) -> None:
    entries = parse_bash(b"make\nmake test\n")
    here = LastRead.of(tmp_path / "a", entries)
    assert here.overlap(LastRead.of(tmp_path / "a", entries)) == range(2)
    assert not here.overlap(LastRead.of(tmp_path / "b", entries))
    assert not here.overlap(LastRead.of(tmp_path / "a", parse_bash(b"ls\nmake test\n")))
    # A tiny file: what it had and what came after it, none held back but what it had.
    grown = parse_bash(b"make\nmake test\nmake lint\nmake docs\n")
    seen = here.overlap(LastRead.of(tmp_path / "a", grown))
    assert seen == range(2)
    assert [e.command for e in settled(grown, True, seen)] == ["make lint", "make docs"]
    for garbled in (None, "", "{", "[]", '{"file": 1}', '{"file": "x", "entries": 3}'):
        assert LastRead.decode(garbled) is None


# --- read_tail -------------------------------------------------------------------------------


def test_read_tail_of_a_large_file_is_exactly_its_last_lines(tmp_path: Path) -> None:
    path = tmp_path / "big_history"
    lines = [f"echo line {i} {'x' * (i % 50)}".encode() for i in range(100_000)]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    data, whole = read_tail(path, 300)
    assert whole is False
    assert data == b"".join(line + b"\n" for line in lines[-300:])
    assert data.startswith(b"echo line 99700 ")


@pytest.mark.parametrize("block_size", [1, 7, 64, 4096, 65536])
@pytest.mark.parametrize("newline_at_end", [True, False])
def test_read_tail_does_not_depend_on_the_block_size(
    tmp_path: Path, block_size: int, newline_at_end: bool
) -> None:
    path = tmp_path / "h"
    content = b"\n".join(f"cmd {i}".encode() for i in range(500)) + (
        b"\n" if newline_at_end else b""
    )
    path.write_bytes(content)
    data, whole = read_tail(path, 10, block_size=block_size)
    assert not whole
    assert data.split(b"\n")[0] == b"cmd 490"
    assert data == b"\n".join(f"cmd {i}".encode() for i in range(490, 500)) + (
        b"\n" if newline_at_end else b""
    )


def test_read_tail_of_a_small_file_is_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / ".bash_history"
    path.write_bytes(b"ls\nmake\ngit status\n")
    assert read_tail(path, 300) == (b"ls\nmake\ngit status\n", True)
    assert read_tail(path, 3) == (b"ls\nmake\ngit status\n", True)
    assert read_tail(path, 2) == (b"make\ngit status\n", False)
    (tmp_path / "empty").write_bytes(b"")
    assert read_tail(tmp_path / "empty") == (b"", True)


def test_read_tail_never_returns_a_partial_first_line_when_lines_are_huge(tmp_path: Path) -> None:
    path = tmp_path / "h"
    path.write_bytes(b"a" * 5000 + b"\n" + b"b" * 100 + b"\n" + b"c" * 100 + b"\n")
    data, whole = read_tail(path, 3, block_size=512, max_bytes=1024)
    assert (data, whole) == (b"b" * 100 + b"\n" + b"c" * 100 + b"\n", False)
    path.write_bytes(b"x" * 5000 + b"\n")
    assert read_tail(path, 3, block_size=512, max_bytes=1024) == (b"", False)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=40),
    newline_at_end=st.booleans(),
    max_lines=st.integers(min_value=1, max_value=45),
    block_size=st.integers(min_value=1, max_value=64),
)
def test_read_tail_matches_splitting_the_whole_file(
    lines: list[bytes], newline_at_end: bool, max_lines: int, block_size: int
) -> None:
    content = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "h"
        path.write_bytes(content)
        data, whole = read_tail(path, max_lines, block_size=block_size)
    present = content.split(b"\n")
    if content.endswith(b"\n"):
        present.pop()
    assert whole == (len(present) <= max_lines)
    tail = present[-max_lines:]
    assert data == (b"\n".join(tail) + (b"\n" if content.endswith(b"\n") else b"") if tail else b"")


# --- never raise -----------------------------------------------------------------------------

_TOKENS = [
    b"#1767225600", b"#", b"#12x", b": 1767225600:5;", b": ", b"- cmd: ", b"  when: 17",
    b"  paths:", b"    - /x", b"\\", b"\\\\", b"\\n", b"`", b"\x83", b"\x83\xa0", b"\n",
    b"\r\n", b"\r", b"\x00", b"\xff\xfe", b"\xc3", b"echo hi", b" ", b"\xe2\x80\x94", b"ls",
]  # fmt: skip
_JUNK = st.one_of(
    st.binary(max_size=3000),
    st.lists(st.sampled_from(_TOKENS), max_size=200).map(b"".join),
)


def _check(entries: list[HistoryEntry], shell: str) -> None:
    keys = [e.key for e in entries]
    assert len(set(keys)) == len(keys)
    for e in entries:
        assert e.shell == shell
        assert isinstance(e.command, str) and e.command.strip()
        assert "\x00" not in e.command
        assert len(e.command) <= MAX_COMMAND_BYTES
        assert e.ts is None or (isinstance(e.ts, int) and e.ts >= 0)
        assert e.key.startswith(f"{shell}:")
    assert all(e in entries for e in settled(entries, whole_file=False))


@settings(max_examples=300, deadline=None)
@given(data=_JUNK)
def test_no_input_makes_a_parser_raise(data: bytes) -> None:
    for shell, parse in PARSERS.items():
        _check(parse(data), shell)


@pytest.mark.parametrize("shell", list(PARSERS))
def test_a_huge_command_is_capped_at_64_kib(shell: str) -> None:
    parse = PARSERS[shell]
    prefix = b"- cmd: " if shell == "fish" else b""
    long = parse(prefix + b"echo " + b"x" * 200_000 + b"\n" + prefix + b"ls\n")
    assert [len(e.command.encode()) for e in long] == [MAX_COMMAND_BYTES, 2]
    # cut at a character boundary, never leaving half of "é" (2 bytes) to decode as U+FFFD
    wide = parse(prefix + b"a" + "é".encode() * 100_000 + b"\n")
    assert len(wide) == 1 and "\ufffd" not in wide[0].command
    assert MAX_COMMAND_BYTES - 1 <= len(wide[0].command.encode()) <= MAX_COMMAND_BYTES


@pytest.mark.parametrize("shell", ["bash", "zsh", "pwsh"])
def test_a_huge_multi_line_command_is_capped(shell: str) -> None:
    part = b"y" * 1000
    if shell == "bash":
        data = b"#1767225600\n" + b"\n".join([part] * 500) + b"\n"
    else:
        mark = b"\\" if shell == "zsh" else b"`"
        data = (part + mark + b"\n") * 500 + b"end\n"
    (entry,) = PARSERS[shell](data)
    assert len(entry.command.encode()) <= MAX_COMMAND_BYTES


# --- round trips: what a shell writes reads back as the command it wrote ---------------------

_COMMAND = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("ab \\`\n#:;-ßé—€\t$'\"")),
        st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
    ),
    min_size=1,
    max_size=30,
).filter(lambda c: c.strip() != "")


@settings(max_examples=150, deadline=None)
@given(cmds=st.lists(_COMMAND, min_size=1, max_size=12))
def test_round_trip_zsh_extended(cmds: list[str]) -> None:
    cmds = [c for c in cmds if not c.endswith("\\")]  # zsh itself cannot tell those apart
    data = join([zsh_record(c, T0 + i, i) for i, c in enumerate(cmds)])
    entries = parse_zsh(data)
    assert [(e.command, e.ts, e.duration) for e in entries] == [
        (c, T0 + i, float(i)) for i, c in enumerate(cmds)
    ]


@settings(max_examples=150, deadline=None)
@given(cmds=st.lists(_COMMAND, min_size=1, max_size=12))
def test_round_trip_fish(cmds: list[str]) -> None:
    data = join([fish_record(c, T0 + i, ("/tmp",)) for i, c in enumerate(cmds)])
    assert [(e.command, e.ts) for e in parse_fish(data)] == [
        (c, T0 + i) for i, c in enumerate(cmds)
    ]


@settings(max_examples=150, deadline=None)
@given(cmds=st.lists(_COMMAND, min_size=1, max_size=12))
def test_round_trip_pwsh(cmds: list[str]) -> None:
    cmds = [c for c in cmds if not c.endswith("`")]  # PSReadLine cannot tell those apart
    assert commands(parse_pwsh(join([pwsh_record(c) for c in cmds]))) == cmds


@settings(max_examples=150, deadline=None)
@given(cmds=st.lists(_COMMAND, min_size=1, max_size=12))
def test_round_trip_bash_timed(cmds: list[str]) -> None:
    def fits(c: str) -> bool:  # a line that is itself "#<digits>" reads as a timestamp
        lines = c.split("\n")
        return (
            lines[0] != ""
            and lines[-1] != ""
            and not any(
                line[:1] == "#" and line[1:].isascii() and line[1:].isdigit() for line in lines
            )
        )

    cmds = [c for c in cmds if fits(c)]
    data = join([bash_record(c, T0 + i) for i, c in enumerate(cmds)])
    assert [(e.command, e.ts) for e in parse_bash(data)] == [
        (c, T0 + i) for i, c in enumerate(cmds)
    ]


# --- default files ---------------------------------------------------------------------------


def _touch(path: Path, content: bytes = b"ls\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def test_default_history_files_finds_each_shell_in_its_usual_place(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bash = _touch(home / ".bash_history")
    zsh = _touch(home / ".zsh_history")
    fish = _touch(home / ".local/share/fish/fish_history")
    pwsh = _touch(home / ".local/share/powershell/PSReadLine/ConsoleHost_history.txt")
    assert default_history_files(home, {}) == {"bash": bash, "zsh": zsh, "fish": fish, "pwsh": pwsh}


def test_default_history_files_lists_only_files_that_exist(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".bash_history").mkdir(parents=True)  # a directory is not a history file
    assert default_history_files(home, {"HISTFILE": str(home / "missing")}) == {}


def test_default_history_files_follows_zdotdir_xdg_data_home_and_appdata(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _touch(home / ".zsh_history")
    _touch(home / ".local/share/fish/fish_history")
    zdot = _touch(tmp_path / "zdot/.zsh_history")
    fish = _touch(tmp_path / "data/fish/fish_history")
    appdata = tmp_path / "AppData/Roaming"
    pwsh = _touch(appdata / "Microsoft/Windows/PowerShell/PSReadLine/ConsoleHost_history.txt")
    environ = {
        "ZDOTDIR": str(tmp_path / "zdot"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "APPDATA": str(appdata),
    }
    assert default_history_files(home, environ) == {"zsh": zdot, "fish": fish, "pwsh": pwsh}


def test_default_history_files_prefers_histfile_told_apart_by_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bash = _touch(home / ".bash_history")
    _touch(home / ".zsh_history")
    custom = _touch(tmp_path / "state/zsh/history.zsh")
    assert default_history_files(home, {"HISTFILE": str(custom)}) == {"bash": bash, "zsh": custom}
    histfile = _touch(home / ".histfile")  # zsh-newuser-install's name
    assert default_history_files(home, {"HISTFILE": "~/.histfile"})["zsh"] == histfile


@pytest.mark.parametrize(
    ("content", "shell_var", "expected"),
    [
        (b": 1767225600:0;ls\n", "", "zsh"),
        (b"#1767225600\nls\n", "/bin/zsh", "bash"),  # content tells before $SHELL
        (b"ls\nmake\n", "/usr/bin/bash", "bash"),
        (b"ls\nmake\n", "/usr/bin/zsh", "zsh"),
        (b"ls\nmake\n", "/usr/bin/fish", None),
        (b"ls\nmake\n", "", None),
    ],
)
def test_default_history_files_tells_an_unnamed_histfile_by_content_then_shell(
    tmp_path: Path, content: bytes, shell_var: str, expected: str | None
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    custom = _touch(tmp_path / "my_history", content)
    found = default_history_files(home, {"HISTFILE": str(custom), "SHELL": shell_var})
    assert found == ({expected: custom} if expected else {})


def test_default_history_files_ignores_a_relative_histfile(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bash = _touch(home / ".bash_history")
    assert default_history_files(home, {"HISTFILE": ".zsh_history"}) == {"bash": bash}
