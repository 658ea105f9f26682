"""Source files read for the import graph (JS/TS, Go, Java, Rust; up to 512 KB each): the
lexer that masks their comments and literals, and a sync over files made to be slow.

A repository holds generated and minified files, files that do not parse, and files made of
anything; a pattern that backtracks over a long line is a hang of the sync.
"""

from __future__ import annotations

import importlib
import json
import re
import warnings

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.structure.lexer import STRING, mask

from ..conftest import Repo, run_cli
from .bounds import Target, mutated, repeated, within

_PIECES = {
    "js": ["(", ",", "=", "/", "[", "]", "\\", "{", "}", "x", " ", "\n", "'", '"', "`", "${"],
    "go": ['"', "`", "'", "\\", "/*", "*/", "//", "\n", "x", "*", "/", "import ", "func "],
    "java": ['"""', '"', "'", "\\", "/*", "*/", "//", "\n", "x", "import ", "@A", "package "],
    "rust": ['r#"', '"#', 'r"', '"', "'", "\\", "/*", "*/", "//", "\n", "x", "b", "#", "use "],
}
_MARKERS = ["\x02", "\x02" + "9" * 3 + "\x03", "\x03"]
sources = st.one_of(
    *(
        st.tuples(st.just(dialect), st.one_of(mutated(p + _MARKERS), repeated(p, 6000)))
        for dialect, p in _PIECES.items()
    )
)


def check_source(source: tuple[str, str]) -> None:
    """Masking ends in linear time, and every placeholder names a string it found; masked up
    to a stop (Go's first declaration), it is the whole text's masking, cut there."""
    dialect, text = source
    with within():
        masked = mask(text, dialect)
    for placeholder in re.finditer(STRING, masked.code):
        masked.string(placeholder.group(1))
    assert masked.code.count("\n") <= text.count("\n")
    stop = re.compile(r"^(?:func|var)\b", re.MULTILINE)
    with within():
        cut = mask(text, dialect, stop)
    assert masked.code.startswith(cut.code)
    assert masked.strings[: len(cut.strings)] == cut.strings
    assert cut.code == masked.code or stop.match(masked.code, len(cut.code))


@settings(max_examples=100, deadline=None)
@given(sources)
@example(("js", "${/[}" * 6000))
@example(("js", "[,/]{" * 6000))
@example(("js", "\\`" * 15_000))
@example(("go", "'*/\\\"" * 6000))
@example(("rust", 'r#"' * 10_000))
@example(("go", "/*\n*/func x\n`\nfunc`\nvar y"))
@example(("js", "import x from \x0299\x03"))
def test_masking_a_source_is_linear_and_its_placeholders_are_real(source: tuple[str, str]) -> None:
    check_source(source)


_EXTRACTORS = {"js": "javascript", "go": "golang", "java": "java", "rust": "rust"}
_PYTHON = ["import ", "from ", " import ", "(", ")", "\\\n", "\n", ";", ":", "'", '"""', "#", "x"]
files = st.one_of(
    sources.map(lambda source: (_EXTRACTORS[source[0]], source[1])),
    st.tuples(st.just("python"), st.one_of(mutated(_PYTHON), repeated(_PYTHON, 6000))),
)


def check_file(source: tuple[str, str]) -> None:
    """A language's extractor gives a file's imports in linear time, whatever it holds."""
    language, text = source
    module = importlib.import_module(f"nexusmem_core.collectors.structure.{language}")
    with within(), warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # ast.parse on what a file holds
        items, failed = module.extract(text)
    assert failed >= 0 and isinstance(items, list)


@settings(max_examples=80, deadline=None)
@given(files)
@example(("python", ")import " * 6000))
@example(("python", "import (\n" * 6000))
@example(("rust", "use \nmod " * 6000))
@example(("rust", "mod a;\n" * 20_000))
@example(("rust", "use a::" + "{b::" * 3000 + "c" + "}" * 3000 + ";"))
def test_extracting_a_file_returns(source: tuple[str, str]) -> None:
    check_file(source)


_SLOW_FILES = {
    "src/a/Main.java": "\n" * 20_000 + "package a;\nimport a.B;\n",
    "src/a/B.java": "package a;\n",
    "web/app.js": "import b from './b.js'\n" + "${/[}" * 6000 + "\n" + "[,/]{" * 6000 + "\n",
    "web/b.js": "export default 1\n",
    "web/forged.js": "import x from \x0299\x03\n",
    "go/main.go": 'package main\nimport "fmt"\n' + "'*/\\\"" * 6000 + "\n",
}


def test_a_sync_over_files_made_to_be_slow_finishes(repo: Repo) -> None:
    # Before the lexer and the Java patterns were made linear, these files took minutes (run_cli
    # gives up after two); the forged placeholder made the import graph fail with an
    # IndexError.
    repo.commit("chore: vendored oddities", _SLOW_FILES)
    assert run_cli("init", cwd=repo.path).returncode == 0
    config = repo.path / ".nexusmem" / "config.json"
    settings_ = json.loads(config.read_text())
    settings_["sources"]["structure"] = {"enabled": True}
    config.write_text(json.dumps(settings_))
    synced = run_cli("sync", "--no-embed", "--json", cwd=repo.path)
    assert synced.returncode == 0, synced.stderr
    assert json.loads(synced.stdout)["import_edges"] >= 2  # app.js -> b.js, Main -> B


TARGETS = {
    "source lexer (import graph)": Target(sources, check_source),
    "import extractors": Target(files, check_file),
}
