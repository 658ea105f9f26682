"""The README, docs/ and bench/README.md show commands and links, and both rot silently when
the CLI or a page changes. So every ``nexusmem`` command they show is parsed by the CLI's own
parser (nothing is run), and every relative link must reach an existing file and, with an
``#anchor``, a heading of that file as GitHub names it.

A command is checked where it is shown as one: a line of a fenced code block (a ``$`` prompt
stripped, each command of a ``&&`` or ``|`` chain on its own), and an inline code span that
starts with ``nexusmem`` (or with a command's name and a flag: ``sync --rebuild``) and uses no
usage syntax (``|`` alternatives, ``...``). Placeholders are filled in: ``<repo>`` and
upper-case metavariables (``N``, ``PATH``, ``DATE``) get a value of their kind, and
``[--flag N]`` is read as the flag.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from cli import build_parser
from nexusmem_core import config as config_module
from nexusmem_core.config import ProjectConfig

from .conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
PROGRAMS = ("nexusmem", ".venv/bin/nexusmem")
OPERATORS = ("&&", "||", "|", ";", "&")
METAVARS = {"N": "3", "TOKENS": "400", "DAYS": "45", "DATE": "2026-08-10"}  # anything else: "x"
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")


def code_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line inside a fenced code block, indented fences included."""
    fence = ""
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if not fence:
            if opened:
                fence = opened.group(1)
            continue
        closing = opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence)
        if closing and not line.strip().strip(fence[0]):
            fence = ""
            continue
        yield number, line


def without_blocks(text: str) -> str:
    """The text with every fenced code block emptied, its lines kept, so line numbers match."""
    lines = text.splitlines(keepends=True)
    inside = {number for number, _ in code_lines(text)}
    for number, line in enumerate(lines, 1):
        if number in inside or FENCE.match(line):
            lines[number - 1] = "\n"
    return "".join(lines)


def prose(text: str) -> str:
    """The text without code: blocks emptied, inline code blanked out (offsets kept)."""
    blank = without_blocks(text)
    return INLINE_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), blank)


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """The CLI's commands by name, each with its own parser."""
    found = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(next(found).choices)


def shown_commands(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, shell line, whether it is whole) of everything the page shows as a
    command. A code block's line is a whole command; prose names one by its start (`nexusmem
    review` records...), so an inline span may leave out required arguments."""
    for number, line in code_lines(text):
        line = line.strip()
        yield number, line[2:] if line.startswith("$ ") else line, True
    blank, names = without_blocks(text), subcommands()
    for match in INLINE_CODE.finditer(blank):
        span = " ".join(match.group(2).split())
        if span.split(" ", 1)[0] in names and " --" in span:  # `sync --rebuild`
            span = "nexusmem " + span
        if span.startswith("nexusmem ") and not re.search(r"\||\.\.\.|…", span):
            yield blank.count("\n", 0, match.start()) + 1, span, False


def argv_of(segment: list[str]) -> list[str] | None:
    """The arguments after ``nexusmem`` in one command of a shell line, placeholders filled in;
    None when the command is not ``nexusmem``."""
    while segment and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", segment[0]):
        segment = segment[1:]  # NEXUSMEM_HOME=/tmp/x nexusmem ...
    if not segment or segment[0] not in PROGRAMS:
        return None
    argv = []
    for token in segment[1:]:
        if re.fullmatch(r"[<>&]+", token):  # a redirection: what follows is a file
            if argv and argv[-1] in ("0", "1", "2"):
                argv.pop()  # the 2 of 2>&1
            break
        token = token.removeprefix("[").removesuffix("]")  # [--limit N]
        if re.fullmatch(r"[A-Z][A-Z_]*", token):
            token = METAVARS.get(token, "x")
        argv.append(token)
    return argv


def parse_error(argv: list[str]) -> str | None:
    """argparse's own complaint about ``argv``, or None when the real parser accepts it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(argv)
        except SystemExit as exit_:
            if exit_.code:
                return err.getvalue().strip().splitlines()[-1]
    return None


def command_errors(page: Path) -> tuple[int, list[str]]:
    """How many commands ``page`` shows, and one line per command the CLI would refuse."""
    checked, errors = 0, []
    text = page.read_text(encoding="utf-8")
    for number, line, whole in shown_commands(text):
        line = re.sub(r"<[^<>\s][^<>]*>", "x", line)  # <repo>, <path>: a value
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError as err:  # an unclosed quote
            if line.split(maxsplit=1)[0] in PROGRAMS:
                errors.append(f"{page.relative_to(ROOT)}:{number}: `{line}`: {err}")
            continue
        segments: list[list[str]] = [[]]
        for token in tokens:
            if token in OPERATORS:
                segments.append([])
            else:
                segments[-1].append(token)
        for segment in segments:
            argv = argv_of(segment)
            if argv is None or "..." in argv:
                continue
            checked += 1
            problem = parse_error(argv)
            if problem and (whole or not re.search(r"arguments? .*(are|is) required", problem)):
                errors.append(f"{page.relative_to(ROOT)}:{number}: `{line}`: {problem}")
    return checked, errors


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped except ``-`` and ``_``,
    each space a ``-`` (``Failure → fix chains`` is ``failure--fix-chains``)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of ``page``; a repeated heading gets ``-1``, ``-2``, as on GitHub."""
    text = page.read_text(encoding="utf-8")
    in_code = {number for number, _ in code_lines(text)}
    found: dict[str, int] = {}
    out = set()
    for number, line in enumerate(text.splitlines(), 1):
        heading = HEADING.match(line)
        if heading is None or number in in_code or FENCE.match(line):
            continue
        base = slug(heading.group(2))
        out.add(f"{base}-{found[base]}" if base in found else base)
        found[base] = found.get(base, 0) + 1
    return out


def link_errors(page: Path) -> tuple[int, list[str]]:
    """How many relative links ``page`` has, and one line per link that leads nowhere."""
    text = prose(page.read_text(encoding="utf-8"))
    targets = [(m.start(), m.group(1)) for m in LINK.finditer(text)]
    targets += [(m.start(), m.group(1)) for m in REFERENCE.finditer(text)]
    checked, errors = 0, []
    for offset, target in targets:
        if SCHEME.match(target):
            continue
        checked += 1
        where = f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}: ({target})"
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            errors.append(f"{where}: {path} does not exist")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            errors.append(f"{where}: {file.name} has no heading #{anchor}")
    return checked, errors


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_a_page_shows_parses(page: Path):
    _, errors = command_errors(page)
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_of_a_page_resolves(page: Path):
    _, errors = link_errors(page)
    assert not errors, "\n".join(errors)


def test_the_pages_have_commands_and_links_to_check():
    """The checks above pass vacuously if the extraction stops finding anything."""
    assert sum(command_errors(page)[0] for page in PAGES) >= 60
    assert sum(link_errors(page)[0] for page in PAGES) >= 60
    readme = set(LINK.findall(prose((ROOT / "README.md").read_text("utf-8"))))
    docs = {f"docs/{page.name}" for page in PAGES if page.parent.name == "docs"}
    assert docs <= {target.partition("#")[0] for target in readme}, "the README links every page"


def test_the_command_reference_lists_every_flag():
    """docs/commands.md is the reference: a flag added to the CLI must appear in its row."""
    page = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    assert "takes `-C <path>`" in page  # -C is documented once, for every command
    missing = []
    for name, parser in subcommands().items():
        named = re.compile(rf"`(nexusmem )?{re.escape(name)}(?=[`\s\\])")
        rows = "\n".join(row for row in page.splitlines() if named.search(row.split(" | ", 1)[0]))
        assert rows, f"docs/commands.md has no row for `nexusmem {name}`"
        for action in parser._actions:
            options = [o for o in action.option_strings if o not in ("-h", "--help", "-C")]
            if options and not any(re.search(rf"{o}\b", rows) for o in options):
                missing.append(f"{name} {options[-1]}")
    assert not missing, f"docs/commands.md does not list: {', '.join(missing)}"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_misspelled_flag_or_command_is_named_with_file_and_line(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    page = write(
        tmp_path,
        "x.md",
        "Try:\n\n```sh\n$ nexusmem sync --rebuidl\nnexusmem init && nexusmem snyc\n```\n\n"
        "Or `nexusmem query why --budgte 4`.\n",
    )
    checked, errors = command_errors(page)
    assert checked == 4
    assert len(errors) == 3
    assert errors[0].startswith("x.md:4: `nexusmem sync --rebuidl`:")
    assert "unrecognized arguments: --rebuidl" in errors[0]
    assert errors[1].startswith("x.md:5:") and "invalid choice: 'snyc'" in errors[1]
    assert errors[2].startswith("x.md:8:") and "--budgte" in errors[2]


def test_placeholders_and_optional_flags_are_filled_in(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    good = (
        "```console\n"
        "$ nexusmem scan-structure [--limit N] [--json]   # the edges; writes nothing\n"
        '$ nexusmem query -C <repo> "why" --as-of DATE 2>&1 | head\n'
        "$ NEXUSMEM_HOME=/tmp/h nexusmem review ID --verify\n"
        "$ nexusmem sync ...\n"
        "nexusmem: cannot write the log\n"
        "```\n"
    )
    assert command_errors(write(tmp_path, "good.md", good)) == (3, [])
    bad = "```sh\nnexusmem scan-structure [--limt N]\nnexusmem review ID\n```\n"
    checked, errors = command_errors(write(tmp_path, "bad.md", bad))
    assert checked == 2
    assert "--limt" in errors[0]
    assert "one of the arguments --verify --reject --clear is required" in errors[1]


def test_a_broken_link_or_anchor_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    heading_in_code = "```\n# Not one\n```\n"
    write(tmp_path, "b.md", "# Failure → fix chains\n\n## Usage\n\n## Usage\n\n" + heading_in_code)
    page = write(
        tmp_path,
        "a.md",
        "# Top\n\nSee [b](b.md#failure--fix-chains), [again](b.md#usage-1), [top](#top),\n"
        "[site](https://example.com/x#y) and `[code](gone.md)`.\n\n"
        "[gone](missing.md), [no anchor](b.md#nope), [code heading](b.md#not-one),\n"
        "[wrapped\ntext](#bottom)\n\n[ref]: b.md#usage-2\n",
    )
    checked, errors = link_errors(page)
    assert checked == 8
    assert errors == [
        "a.md:6: (missing.md): missing.md does not exist",
        "a.md:6: (b.md#nope): b.md has no heading #nope",
        "a.md:6: (b.md#not-one): b.md has no heading #not-one",
        "a.md:7: (#bottom): a.md has no heading #bottom",
        "a.md:10: (b.md#usage-2): b.md has no heading #usage-2",
    ]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Failure → fix chains", "failure--fix-chains"),
        ("Reading memory as it was (`--as-of`)", "reading-memory-as-it-was---as-of"),
        ("Session summaries (opt-in, a local model)", "session-summaries-opt-in-a-local-model"),
        ("config.json", "configjson"),
        ("Review, stale and contradictions", "review-stale-and-contradictions"),
        ("[Linked](x.md) heading_with_underscore", "linked-heading_with_underscore"),
    ],
)
def test_anchors_follow_githubs_rules(heading: str, anchor: str):
    assert slug(heading) == anchor


def config_fields(cls: type = ProjectConfig, prefix: str = "") -> Iterator[str]:
    """Every leaf setting of ``config.json``, dotted and camelCase as the file spells it."""
    for key, field in cls.model_fields.items():  # type: ignore[attr-defined]
        head, *rest = key.split("_")
        name = prefix + head + "".join(part.title() for part in rest)
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield from config_fields(kind, name + ".")
        else:
            yield name


def test_every_setting_is_in_the_configuration_reference():
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    fields = list(config_fields())
    assert "sources.session.budgetSeconds" in fields and len(fields) > 40
    missing = [name for name in fields if f"| `{name}` |" not in page]
    assert not missing, f"docs/configuration.md does not list: {', '.join(missing)}"
    variables = list(config_module._ENV_NAMES.values())
    assert "NEXUSMEM_HOME" in variables
    missing = [name for name in variables if f"| `{name}` |" not in page and name != "HOME"]
    assert not missing, f"docs/configuration.md does not list: {', '.join(missing)}"
