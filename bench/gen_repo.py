"""Generate a synthetic but realistically shaped git repository with ``git fast-import``.

    python bench/gen_repo.py OUT_DIR --commits N [--seed S]

The repository is a made-up Python project ("orbit"): a few hundred files under ``src/``,
``tests/`` and ``docs/``; conventional-commit subjects mixed with plain ones; message bodies that
are mostly empty, sometimes a short paragraph, now and then a long explanation with trailers;
1-5 files changed per commit, mostly edits of existing modules; pull-request merges; a lockfile
that dependency bumps touch; a CHANGELOG that grows with each release; ~40 Markdown and reST
documents with several headings each. Author dates are spread over about three years and
increase strictly. The same seed gives the same repository (same commit ids).

Only the standard library is used. The whole history is streamed into one ``git fast-import``
process, so a 10,000-commit repository takes seconds, then the work tree is checked out.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = ["GEN_VERSION", "generate"]

GEN_VERSION = 2  # bump when the output for a given (commits, seed) changes
PROJECT = "orbit"
START_TS = 1_609_754_400  # 2021-01-04 10:00 UTC
SPAN = 3 * 365 * 86_400

# ------------------------------------------------------------------------------ vocabulary


def _words(text: str) -> list[str]:
    return text.split()


NOUNS = _words(
    """
cache session token config request response buffer index schema record batch queue worker
handler client cursor lock snapshot manifest plugin registry pipeline event message retry
timeout chunk stream payload header route user account permission job task metric span checksum
segment partition shard replica lease watcher scheduler connection pool socket frame packet
codec parser lexer template renderer theme asset bundle artifact upload download mirror webhook
callback listener signal hook migration table column query transaction journal checkpoint offset
watermark backoff quota limit budget profile credential secret key cert policy rule filter
selector label tag annotation namespace tenant project workspace branch commit diff patch hunk
revision tree blob object entry node edge graph path file directory mount volume device driver
kernel thread process future promise channel mailbox inbox outbox digest hash signature nonce
cipher vault store backend frontend gateway proxy balancer router endpoint resource handle
context scope frame tracer logger formatter sink exporter collector sampler histogram counter
gauge alert report summary dashboard widget panel layout
"""
)

VERBS = _words(
    """
load parse build validate resolve fetch flush encode decode merge compute normalize serialize
register dispatch emit render apply refresh close open read write reset prune retry schedule
cancel drain collect compact rotate sync upload download verify sign seal unseal split join
filter sort group index lookup evict expire renew acquire release start stop restart attach
detach mount unmount publish subscribe notify enqueue dequeue batch stream convert format
sanitize escape quote truncate pad wrap unwrap migrate rollback commit checkpoint replay restore
backup export import scan probe ping trace sample aggregate
"""
)

ADJS = _words(
    """
stale pending empty invalid missing duplicate partial expired concurrent nested unicode large
legacy remote local cached dirty orphaned unknown optional default internal external async
blocking slow hot cold primary secondary transient persistent readonly deprecated experimental
signed unsigned compressed encrypted truncated malformed
"""
)

PROBLEMS = [
    "race condition",
    "deadlock",
    "memory leak",
    "crash",
    "infinite loop",
    "KeyError",
    "timeout",
    "unbounded growth",
    "stale read",
    "data loss",
    "wrong ordering",
    "flaky failure",
    "off-by-one error",
    "double close",
    "busy loop",
    "file descriptor leak",
    "UnicodeDecodeError",
    "TypeError",
    "spurious retry",
    "lost update",
    "silent failure",
    "excessive logging",
    "O(n^2) behaviour",
    "resource exhaustion",
    "hang on shutdown",
]
TYPES = [
    "str",
    "int",
    "bytes",
    "float",
    "bool",
    "Path",
    "dict[str, Any]",
    "list[str]",
    "Sequence[str]",
    "Mapping[str, int]",
    "Iterator[bytes]",
    "Optional[str]",
]
STDLIB = [
    "os",
    "re",
    "sys",
    "json",
    "time",
    "logging",
    "hashlib",
    "threading",
    "asyncio",
    "itertools",
    "functools",
    "contextlib",
    "dataclasses",
    "pathlib",
    "typing",
    "collections",
    "tempfile",
    "shutil",
    "socket",
    "struct",
    "zlib",
    "base64",
]
DEFAULTS = ["None", "0", "[]", "{}", "()", 'b""', "''"]
ERRORS = [
    "ValueError",
    "KeyError",
    "TimeoutError",
    "OSError",
    "RuntimeError",
    "LookupError",
    "ConnectionError",
    "PermissionError",
]

FIRST = [
    "Alice",
    "Bob",
    "Chen",
    "Dmitri",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "José",
    "Kofi",
    "Lena",
    "Mateo",
    "Noor",
    "Olga",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Zoë",
]
LAST = [
    "Nguyen",
    "Schmidt",
    "Okafor",
    "Ivanova",
    "Tanaka",
    "García",
    "Müller",
    "Haddad",
    "Kowalski",
    "Rossi",
    "Patel",
    "Johansson",
    "Dubois",
    "Silva",
    "O'Brien",
    "Kim",
]
TZS = ["+0000", "+0100", "+0200", "-0500", "-0800", "+0530", "+0900", "-0300", "+0100"]
DEPS = [
    "requests",
    "pydantic",
    "click",
    "httpx",
    "rich",
    "pytest",
    "mypy",
    "ruff",
    "attrs",
    "sqlalchemy",
    "uvicorn",
    "orjson",
    "structlog",
    "tenacity",
    "cryptography",
    "anyio",
]

PACKAGES = [
    "core",
    "api",
    "cli",
    "storage",
    "net",
    "auth",
    "utils",
    "plugins",
    "sync",
    "search",
    "telemetry",
    "scheduler",
]

SECTION_TOPICS = [
    "Overview",
    "Installation",
    "Configuration",
    "Usage",
    "Examples",
    "Design",
    "Trade-offs",
    "Known issues",
    "Troubleshooting",
    "Limitations",
    "FAQ",
    "Architecture",
    "Rationale",
    "Performance",
    "Security considerations",
    "Upgrading",
    "Testing",
    "Deployment",
    "Environment variables",
    "Error handling",
    "Logging",
    "Caveats",
    "Alternatives considered",
    "Decision",
    "Consequences",
    "Status",
    "Context",
    "Glossary",
    "Debugging",
    "Internals",
]


def cap(word: str) -> str:
    return word[:1].upper() + word[1:]


_DOUBLE = {"stop", "pad", "wrap", "unwrap", "commit", "ping", "drop"}


def ing(verb: str) -> str:
    if verb in _DOUBLE:
        return verb + verb[-1] + "ing"
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    return verb + "ing"


def ed(verb: str) -> str:
    if verb in _DOUBLE:
        return verb + verb[-1] + "ed"
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


# ------------------------------------------------------------------------------ file models


@dataclass
class Section:
    level: int
    heading: str
    paras: list[str]


@dataclass
class FileState:
    kind: str  # py, test, md, rst, text
    lines: list[str] = field(default_factory=list)  # py/test/text
    sections: list[Section] = field(default_factory=list)  # md/rst
    theme: list[str] = field(default_factory=list)

    def render(self) -> str:
        if self.kind == "md":
            out: list[str] = []
            for s in self.sections:
                out.append("#" * s.level + " " + s.heading)
                out.append("")
                for p in s.paras:
                    out.append(p)
                    out.append("")
            return "\n".join(out).rstrip("\n") + "\n"
        if self.kind == "rst":
            out = []
            for s in self.sections:
                bar = {1: "=", 2: "-", 3: "~"}[min(s.level, 3)] * max(len(s.heading), 3)
                if s.level == 1:
                    out.append(bar)
                out += [s.heading, bar, ""]
                for p in s.paras:
                    out.append(p)
                    out.append("")
            return "\n".join(out).rstrip("\n") + "\n"
        return "\n".join(self.lines) + "\n"


# ------------------------------------------------------------------------------ generator


class Gen:
    def __init__(self, seed: int) -> None:
        self.R = random.Random(seed)
        self.files: dict[str, FileState] = {}
        self.authors = self._authors()
        self.version = [0, 1, 0]
        self.dep_versions = {
            d: [self.R.randint(0, 5), self.R.randint(0, 30), self.R.randint(0, 9)] for d in DEPS
        }
        self.issue = 10
        self.changelog_pending: list[str] = []
        self.adr_count = 0
        self.module_count = 0

    # ---- small random helpers

    def _authors(self) -> list[tuple[str, str, str]]:
        R = self.R
        people = []
        for _ in range(18):
            first, last = R.choice(FIRST), R.choice(LAST)
            email = f"{first.lower()}.{re.sub(r'[^a-z]', '', last.lower())}@example.com"
            email = email.encode("ascii", "ignore").decode()
            people.append((f"{first} {last}", email, R.choice(TZS)))
        return people

    def author(self) -> tuple[str, str, str]:
        # A few core maintainers write most of the commits.
        return self.authors[min(int(self.R.paretovariate(1.2)) - 1, len(self.authors) - 1)]

    def noun(self, theme: list[str] | None = None) -> str:
        if theme and self.R.random() < 0.55:
            return self.R.choice(theme)
        return self.R.choice(NOUNS)

    def verb(self) -> str:
        return self.R.choice(VERBS)

    def adj(self) -> str:
        return self.R.choice(ADJS)

    def func_name(self, theme: list[str] | None = None) -> str:
        return f"{self.verb()}_{self.noun(theme)}"

    def class_name(self, theme: list[str] | None = None) -> str:
        return cap(self.noun(theme)) + self.R.choice(
            [
                "Manager",
                "Store",
                "Client",
                "Handler",
                "Config",
                "Pool",
                "Error",
                "Index",
                "Cache",
                "Builder",
                "Reader",
                "Writer",
                "State",
                "Spec",
                "",
            ]
        )

    def next_issue(self) -> int:
        self.issue += self.R.randint(1, 4)
        return self.issue

    # ---- prose

    def sentence(self, theme: list[str] | None = None, func: str | None = None) -> str:
        R = self.R
        f = func or self.func_name(theme)
        n, n2, a = self.noun(theme), self.noun(theme), self.adj()
        templates = [
            f"Previously {f}() would {self.verb()} the {n} even when it was {a}, which caused a "
            f"{R.choice(PROBLEMS)} under load.",
            f"This change makes {f}() {self.verb()} the {n} only once per {n2}.",
            f"We now keep a reference to the {n} so that {self.func_name(theme)}() can "
            f"{self.verb()} it later.",
            f"The old behaviour was introduced in {R.randbytes(4).hex()[:7]} and was never "
            "covered by tests.",
            f"See the discussion in #{R.randint(1, max(self.issue, 2))} for why we did not "
            f"{self.verb()} the {n} eagerly.",
            f"Trade-off: this uses a little more memory per {n} but avoids a {n2} round-trip.",
            "No functional change intended.",
            f"Reported by {R.choice(FIRST)} while testing the {a} {n} path.",
            f"The {n} {n2} is {a} after a restart, so we must {self.verb()} it before use.",
            f"When the {n} is {a} we fall back to the {self.adj()} {n2} instead of failing.",
            f"This removes the last caller of {self.func_name(theme)}(), which can go in a "
            "follow-up.",
            f"Measured on a large {n} set: {R.randint(2, 40)}x faster, "
            f"{R.randint(10, 90)}% less memory.",
            f"The {n} lock is held for the whole {n2} {self.verb()}, which is why the "
            f"{R.choice(PROBLEMS)} only showed up with several workers.",
            f"Callers that relied on {f}() returning None for a {a} {n} now get an empty "
            f"{n2} instead.",
            f"I considered {ing(self.verb())} the {n} in the {n2} instead, but that would "
            f"couple the {self.noun()} layer to the {self.noun()} layer.",
        ]
        return R.choice(templates)

    def paragraph(
        self,
        theme: list[str] | None = None,
        n: tuple[int, int] = (1, 4),
        func: str | None = None,
        width: int = 72,
    ) -> str:
        text = " ".join(self.sentence(theme, func) for _ in range(self.R.randint(*n)))
        return textwrap.fill(text, width, break_on_hyphens=False)

    # ---- python source

    def expr(self, theme: list[str]) -> str:
        R = self.R
        n, v = self.noun(theme), self.verb()
        choices = [
            f"self._{n}.{v}({self.noun(theme)})",
            f"{v}_{n}({self.noun(theme)}, timeout=self.timeout)",
            f"{R.choice(STDLIB)}.{v}({n})",
            f"[{n[0]}.{self.noun(theme)} for {n[0]} in {n}s if {n[0]}.{self.adj()}]",
            f"{n}s.get({self.noun(theme)!r}, {R.choice(DEFAULTS)})",
            f"len({n}s) + {R.randint(1, 64)}",
            "time.monotonic() - self._started",
            f"{self.class_name(theme)}({n}={self.noun(theme)}, {self.adj()}=True)",
            f"{n}.{v}().{self.verb()}()",
            f"max(self.min_{n}, min({n}, self.max_{n}))",
            f"{{k: v for k, v in {n}s.items() if v is not None}}",
            f"await self.{v}_{n}({self.noun(theme)})",
        ]
        return R.choice(choices)

    def cond(self, theme: list[str]) -> str:
        n = self.noun(theme)
        return self.R.choice(
            [
                f"{n} is None",
                f"not {n}s",
                f"len({n}s) > self.max_{n}s",
                f"{n}.{self.adj()}",
                f"isinstance({n}, {self.class_name(theme)})",
                f"self._{n} and {self.noun(theme)}",
                f"{n}.expires_at < now",
                f"{n} in self._{self.noun(theme)}s",
            ]
        )

    def statements(self, indent: int, count: int, theme: list[str], depth: int = 0) -> list[str]:
        R, pad = self.R, " " * indent
        out: list[str] = []
        while len(out) < count:
            k = R.random()
            n = self.noun(theme)
            if k < 0.26:
                out.append(f"{pad}{n} = {self.expr(theme)}")
            elif k < 0.36 and depth < 2:
                out.append(f"{pad}if {self.cond(theme)}:")
                out += self.statements(indent + 4, R.randint(1, 3), theme, depth + 1)
            elif k < 0.43 and depth < 2:
                out.append(f"{pad}for {n[0]} in {n}s:")
                out += self.statements(indent + 4, R.randint(1, 3), theme, depth + 1)
            elif k < 0.48 and depth < 2:
                err = R.choice(ERRORS)
                out.append(f"{pad}try:")
                out += self.statements(indent + 4, R.randint(1, 2), theme, depth + 1)
                out.append(f"{pad}except {err} as err:")
                out.append(
                    f'{pad}    raise {cap(n)}Error(f"cannot {self.verb()} {n}: {{err}}") from err'
                )
            elif k < 0.58:
                out.append(
                    f"{pad}log.{R.choice(['debug', 'info', 'warning'])}"
                    f'("{self.verb()} %s {n} (%d {self.noun(theme)}s)", '
                    f"{n}, len({n}s))"
                )
            elif k < 0.66:
                words = " ".join(
                    R.choice(
                        [
                            n,
                            self.verb(),
                            self.adj(),
                            "the",
                            "a",
                            "is",
                            "before",
                            "after",
                            "so",
                            "we",
                            "not",
                        ]
                    )
                    for _ in range(R.randint(4, 10))
                )
                out.append(f"{pad}# {cap(words)}.")
            elif k < 0.74:
                out.append(f"{pad}self._{n} = {self.expr(theme)}")
            elif k < 0.80 and depth < 2:
                out.append(f"{pad}if {self.cond(theme)}:")
                out.append(f'{pad}    raise {R.choice(ERRORS)}(f"{self.adj()} {n}: {{{n}!r}}")')
            else:
                out.append(f"{pad}{n}s.append({self.expr(theme)})")
        return out

    def function(self, theme: list[str], method: bool) -> list[str]:
        R = self.R
        pad = "    " if method else ""
        name = self.func_name(theme)
        args = ", ".join(f"{self.noun(theme)}: {R.choice(TYPES)}" for _ in range(R.randint(0, 3)))
        if method:
            args = "self" + (", " + args if args else "")
        prefix = "async def" if R.random() < 0.15 else "def"
        lines = [f"{pad}{prefix} {name}({args}) -> {R.choice([*TYPES, 'None'])}:"]
        if R.random() < 0.6:
            lines.append(
                f'{pad}    """{cap(self.verb())} the {self.adj()} {self.noun(theme)} '
                f'and return the {self.noun(theme)}."""'
            )
        lines += self.statements(len(pad) + 4, R.randint(2, 9), theme)
        lines.append(f"{pad}    return {self.noun(theme)}")
        return lines

    def klass(self, theme: list[str]) -> list[str]:
        R = self.R
        lines = ["@dataclass"] if R.random() < 0.4 else []
        lines.append(f"class {self.class_name(theme)}:")
        lines.append(
            f'    """{cap(self.adj())} {self.noun(theme)} {self.noun(theme)}s, '
            f'{ed(self.verb())} on demand."""'
        )
        lines.append("")
        for _ in range(R.randint(2, 4)):
            lines.append(f"    {self.noun(theme)}: {R.choice(TYPES)} = None")
        for _ in range(R.randint(1, 4)):
            lines.append("")
            lines += self.function(theme, method=True)
        return lines

    def module(self, pkg: str, theme: list[str]) -> FileState:
        R = self.R
        lines = [
            f'"""{cap(theme[0])} {theme[1]} helpers for the {pkg} package."""',
            "",
            "from __future__ import annotations",
            "",
        ]
        lines += sorted(f"import {m}" for m in R.sample(STDLIB, R.randint(2, 5)))
        lines += [
            "from dataclasses import dataclass",
            "from typing import Any, Iterator, Mapping, Optional, Sequence",
            "",
        ]
        for _ in range(R.randint(0, 2)):
            other = R.choice(PACKAGES)
            lines.append(f"from {PROJECT}.{other} import {self.func_name()}")
        lines += ["", "log = logging.getLogger(__name__)", ""]
        lines.append(f"DEFAULT_{theme[0].upper()}_TIMEOUT = {R.randint(1, 120)}")
        lines.append(f"MAX_{theme[1].upper()}S = {R.choice([16, 64, 256, 1024, 4096])}")
        for _ in range(R.randint(2, 6)):
            lines += ["", ""]
            lines += self.klass(theme) if R.random() < 0.35 else self.function(theme, False)
        return FileState("py", lines=lines, theme=theme)

    def test_module(self, pkg: str, theme: list[str]) -> FileState:
        lines = [
            f'"""Tests for the {pkg} {theme[0]}."""',
            "",
            "import pytest",
            "",
            f"from {PROJECT}.{pkg} import {theme[0]}",
            "",
        ]
        for _ in range(self.R.randint(3, 8)):
            lines += ["", "", *self.test_function(theme)]
        return FileState("test", lines=lines, theme=theme)

    def test_function(self, theme: list[str]) -> list[str]:
        R = self.R
        lines = []
        if R.random() < 0.2:
            lines.append(
                f'@pytest.mark.parametrize("{self.noun(theme)}", '
                f"[{R.randint(0, 9)}, {R.randint(10, 99)}, None])"
            )
        fixture = R.choice(["", "tmp_path", "monkeypatch"])
        lines.append(f"def test_{self.func_name(theme)}_{self.adj()}({fixture}):")
        lines += self.statements(4, R.randint(2, 5), theme, depth=1)
        for _ in range(R.randint(1, 3)):
            n = self.noun(theme)
            expected = R.choice(["[]", "None", "0", repr(self.noun()), "expected"])
            err, func, adj = R.choice(ERRORS), self.func_name(theme), self.adj()
            lines.append(
                R.choice(
                    [
                        f"    assert {n} == {expected}",
                        f"    assert {n}.{adj}",
                        f"    with pytest.raises({err}):\n        {func}({n})",
                    ]
                )
            )
        return lines

    # ---- docs

    def heading(self, theme: list[str], used: set[str]) -> str:
        R = self.R
        for _ in range(20):
            h = R.choice(
                [
                    R.choice(SECTION_TOPICS),
                    f"Why {self.noun(theme)} {self.noun(theme)}s?",
                    f"{cap(self.noun(theme))} lifecycle",
                    f"How {self.noun(theme)} {ing(self.verb())} works",
                    f"Troubleshooting {self.adj()} {self.noun(theme)}s",
                    f"Configuring the {self.noun(theme)} {self.noun(theme)}",
                    f"The {self.noun(theme)} format",
                    f"{cap(ing(self.verb()))} {self.noun(theme)}s",
                ]
            )
            if h not in used:
                used.add(h)
                return h
        return h

    def doc_para(self, theme: list[str], kind: str) -> str:
        R = self.R
        k = R.random()
        if k < 0.15:
            items = [
                f"{'-' if kind == 'md' else '*'} {cap(self.verb())} the {self.adj()} "
                f"{self.noun(theme)} before {ing(self.verb())} the {self.noun(theme)}."
                for _ in range(R.randint(2, 5))
            ]
            return "\n".join(items)
        if k < 0.25:
            code = [
                f"{PROJECT} {self.verb()} --{self.noun(theme)} {self.adj()}",
                f"{self.noun(theme)} = {PROJECT}.{self.func_name(theme)}("
                f"{self.noun(theme)}={R.randint(1, 100)})",
            ]
            body = "\n".join(R.choice(code) for _ in range(R.randint(1, 3)))
            if kind == "md":
                return f"```{R.choice(['sh', 'python', ''])}\n{body}\n```"
            return "::\n\n" + textwrap.indent(body, "    ")
        return self.paragraph(theme, (2, 5), width=80)

    def doc(self, kind: str, title: str, theme: list[str], sections: int) -> FileState:
        used = {title}
        secs = [
            Section(1, title, [self.doc_para(theme, kind) for _ in range(self.R.randint(1, 2))])
        ]
        for _ in range(sections - 1):
            level = 2 if self.R.random() < 0.75 else 3
            secs.append(
                Section(
                    level,
                    self.heading(theme, used),
                    [self.doc_para(theme, kind) for _ in range(self.R.randint(1, 3))],
                )
            )
        return FileState(kind, sections=secs, theme=theme)

    # ---- the initial tree

    def initial_tree(self) -> None:
        R = self.R
        for pkg in PACKAGES:
            self.files[f"src/{PROJECT}/{pkg}/__init__.py"] = FileState(
                "text", lines=[f'"""The {pkg} package."""']
            )
            for _ in range(R.randint(12, 18)):
                self.add_module(pkg, with_test=R.random() < 0.4)
        self.files[f"src/{PROJECT}/__init__.py"] = FileState(
            "text",
            lines=['"""Orbit: a made-up project for benchmarks."""', "", '__version__ = "0.1.0"'],
        )
        self.files["pyproject.toml"] = FileState("text", lines=self.pyproject_lines())
        self.files["poetry.lock"] = FileState("text", lines=self.lock_lines())
        self.files[".gitignore"] = FileState(
            "text", lines=["__pycache__/", "*.pyc", ".venv/", "dist/", "build/", ".coverage"]
        )
        self.files[".github/workflows/ci.yml"] = FileState(
            "text",
            lines=[
                "name: ci",
                "on: [push, pull_request]",
                "jobs:",
                "  test:",
                "    runs-on: ubuntu-latest",
                "    strategy:",
                "      matrix:",
                '        python: ["3.10", "3.11", "3.12"]',
                "    steps:",
                "      - uses: actions/checkout@v4",
                "      - uses: actions/setup-python@v5",
                "        with:",
                "          python-version: ${{ matrix.python }}",
                "      - run: pip install -e .[dev]",
                "      - run: pytest -q",
            ],
        )
        self.files["Makefile"] = FileState(
            "text",
            lines=[".PHONY: test lint", "test:", "\tpytest -q", "lint:", "\truff check src tests"],
        )
        # Documentation: ~30 Markdown and 10 reST files with several headings each.
        self.files["README.md"] = self.doc("md", "Orbit", ["install", "config", "usage"], 9)
        self.files["CONTRIBUTING.md"] = self.doc("md", "Contributing", ["test", "review"], 6)
        self.files["SECURITY.md"] = self.doc("md", "Security policy", ["secret", "cert"], 4)
        self.files["CHANGELOG.md"] = FileState(
            "md",
            sections=[
                Section(
                    1, "Changelog", ["All notable changes to this project are documented here."]
                ),
                Section(2, "0.1.0", ["- Initial release."]),
            ],
        )
        guides = [
            "getting-started",
            "configuration",
            "deployment",
            "plugins",
            "storage",
            "networking",
            "authentication",
            "scheduling",
            "telemetry",
            "search",
            "cli-reference",
            "troubleshooting",
            "faq",
            "architecture",
            "performance",
            "upgrading",
            "security-model",
            "sync-protocol",
            "data-model",
            "glossary",
        ]
        for name in guides:
            words = [w for w in re.split(r"[-]", name) if w]
            theme = [R.choice(NOUNS) for _ in range(3)]
            self.files[f"docs/{name}.md"] = self.doc(
                "md", " ".join(cap(w) for w in words), theme, R.randint(4, 10)
            )
        for _ in range(6):
            self.add_adr()
        for pkg in PACKAGES[:10]:
            theme = [pkg, R.choice(NOUNS), R.choice(NOUNS)]
            self.files[f"docs/api/{pkg}.rst"] = self.doc(
                "rst", f"{PROJECT}.{pkg} API", theme, R.randint(4, 8)
            )

    def add_adr(self) -> str:
        self.adr_count += 1
        theme = [self.R.choice(NOUNS), self.R.choice(NOUNS)]
        title = f"ADR {self.adr_count:04d}: {cap(self.verb())} {theme[0]} {theme[1]}s"
        path = f"docs/adr/{self.adr_count:04d}-{self.verb()}-{theme[0]}-{theme[1]}.md"
        doc = self.doc("md", title, theme, 1)
        used = {title}
        for topic in ["Context", "Decision", "Consequences", "Alternatives considered"]:
            used.add(topic)
            doc.sections.append(
                Section(2, topic, [self.doc_para(theme, "md") for _ in range(self.R.randint(1, 3))])
            )
        self.files[path] = doc
        return path

    def add_module(self, pkg: str, with_test: bool) -> list[str]:
        R = self.R
        for _ in range(50):
            theme = [R.choice(NOUNS), R.choice(NOUNS), R.choice(NOUNS)]
            path = f"src/{PROJECT}/{pkg}/{theme[0]}_{theme[1]}.py"
            if path not in self.files:
                break
        self.files[path] = self.module(pkg, theme)
        self.module_count += 1
        added = [path]
        if with_test:
            tpath = f"tests/{pkg}/test_{theme[0]}_{theme[1]}.py"
            if tpath not in self.files:
                self.files[tpath] = self.test_module(pkg, theme)
                added.append(tpath)
        return added

    def pyproject_lines(self) -> list[str]:
        v = ".".join(map(str, self.version))
        lines = [
            "[project]",
            f'name = "{PROJECT}"',
            f'version = "{v}"',
            'requires-python = ">=3.10"',
            "dependencies = [",
        ]
        lines += [f'    "{d}>={".".join(map(str, ver))}",' for d, ver in self.dep_versions.items()]
        lines += ["]", "", "[tool.pytest.ini_options]", 'testpaths = ["tests"]']
        return lines

    def lock_lines(self) -> list[str]:
        lines = []
        for d, ver in self.dep_versions.items():
            digest = self.R.randbytes(32).hex()
            lines += [
                "[[package]]",
                f'name = "{d}"',
                f'version = "{".".join(map(str, ver))}"',
                f'files = [{{file = "{d}-{".".join(map(str, ver))}.tar.gz", '
                f'hash = "sha256:{digest}"}}]',
                "",
            ]
        return lines

    # ---- edits

    def paths(self, *kinds: str, under: str = "") -> list[str]:
        return [p for p, f in self.files.items() if f.kind in kinds and p.startswith(under)]

    def edit_code(self, path: str) -> None:
        R, f = self.R, self.files[path]
        lines, theme = f.lines, f.theme
        body_start = min(len(lines), 12)
        n = len(lines)
        k = R.random()
        grow = 0.45 if n < 250 else 0.1
        if k < grow or n < 40:
            # Insert a new function (test) or a few statements inside an existing one.
            if R.random() < 0.35:
                block = (
                    self.test_function(theme)
                    if f.kind == "test"
                    else self.function(theme, method=False)
                )
                lines += ["", "", *block]
                return
            at = R.randint(body_start, n - 1)
            indent = len(lines[at]) - len(lines[at].lstrip()) or 4
            if lines[at].rstrip().endswith(":"):
                indent += 4
                at += 1
            lines[at:at] = self.statements(indent, R.randint(1, 5), theme, depth=1)
        elif k < 0.85:
            # Rewrite a handful of lines in place.
            at = R.randint(body_start, n - 1)
            indent = len(lines[at]) - len(lines[at].lstrip())
            if indent == 0:
                indent = 4
            span = R.randint(1, 4)
            end = at
            while (
                end < n
                and end - at < span
                and (len(lines[end]) - len(lines[end].lstrip()) >= indent or not lines[end].strip())
            ):
                end += 1
            lines[at : max(end, at + 1)] = self.statements(indent, R.randint(1, 4), theme, 2)
        else:
            # Delete a few lines.
            at = R.randint(body_start, n - 2)
            del lines[at : at + R.randint(1, 6)]

    def edit_doc(self, path: str) -> None:
        R, f = self.R, self.files[path]
        secs = f.sections
        k = R.random()
        if k < 0.12 and len(secs) < 12:
            used = {s.heading for s in secs}
            secs.insert(
                R.randint(1, len(secs)),
                Section(
                    2 if R.random() < 0.8 else 3,
                    self.heading(f.theme, used),
                    [self.doc_para(f.theme, f.kind) for _ in range(R.randint(1, 3))],
                ),
            )
        elif k < 0.16 and len(secs) > 4:
            del secs[R.randint(1, len(secs) - 1)]
        else:
            s = R.choice(secs)
            if len(s.paras) < 5 and R.random() < 0.5:
                s.paras.insert(R.randint(0, len(s.paras)), self.doc_para(f.theme, f.kind))
            else:
                s.paras[R.randrange(len(s.paras))] = self.doc_para(f.theme, f.kind)

    def functions_in(self, path: str) -> list[str]:
        f = self.files.get(path)
        if not f or f.kind not in ("py", "test"):
            return []
        return [m.group(1) for line in f.lines if (m := re.match(r"\s*(?:async )?def (\w+)", line))]

    # ---- commits

    def message(
        self, ctype: str, scope: str, func: str, theme: list[str], docfile: str, plain: bool
    ) -> str:
        R = self.R
        n, n2, a = self.noun(theme), self.noun(theme), self.adj()
        subjects = {
            "fix": [
                f"handle {a} {n}s in {func}",
                f"avoid {R.choice(PROBLEMS)} when the {n} is {a}",
                f"prevent {R.choice(PROBLEMS)} in {n} {n2}",
                f"correct off-by-one in {func}",
                f"don't {self.verb()} the {n} twice",
                f"restore {n} after {n2} {self.verb()}",
                f"guard against {a} {n}",
                f"close {n} on the error path of {func}",
                f"make {func} thread-safe",
            ],
            "feat": [
                f"add {n} {n2} support",
                f"support {a} {n}s in {scope}",
                f"add --{n}-{n2} option",
                f"expose {func} in the public API",
                f"introduce {n} {n2}",
                f"allow configuring the {n} {n2}",
            ],
            "refactor": [
                f"extract {self.func_name(theme)} from {func}",
                f"split {scope} {n} handling",
                f"simplify {n} handling",
                f"rename {self.func_name(theme)} to {func}",
                f"move {n} helpers to utils",
                f"replace {n} dict with a dataclass",
            ],
            "perf": [f"speed up {func}", f"cache {n} lookups", f"avoid copying {n}s in {func}"],
            "test": [
                f"add tests for {func}",
                f"cover the {a} {n} case",
                f"fix flaky {func} test",
                f"use fixtures for {n} setup",
            ],
            "docs": [
                f"document {n} {n2}",
                f"update {docfile}",
                f"fix typos in {docfile}",
                f"explain the {n} lifecycle",
                f"add an example for {func}",
            ],
            "chore": ["clean up unused imports", f"tidy {scope}", "update pre-commit hooks"],
            "ci": [
                f"run tests on python 3.{R.randint(10, 13)}",
                "cache pip downloads",
                "split the lint job",
            ],
            "style": ["format with ruff", "sort imports", "fix line lengths"],
        }[ctype]
        subject = R.choice(subjects)
        if plain:
            subject = cap(subject.replace("don't", "Do not"))
            if R.random() < 0.1:
                subject = R.choice(
                    [
                        "WIP",
                        "fixes",
                        "address review comments",
                        "more tests",
                        f"Refactor {scope}",
                        "Remove dead code",
                        "oops",
                    ]
                )
        else:
            scoped = R.random() < 0.6
            bang = "!" if ctype in ("feat", "refactor") and R.random() < 0.02 else ""
            subject = (
                f"{ctype}({scope}){bang}: {subject}" if scoped else f"{ctype}{bang}: {subject}"
            )
        return subject + self.body(theme, func)

    def body(self, theme: list[str], func: str) -> str:
        R = self.R
        k = R.random()
        if k < 0.55:
            body = ""
        elif k < 0.88:
            body = self.paragraph(theme, (1, 4), func)
        else:
            paras = [self.paragraph(theme, (2, 5), func) for _ in range(R.randint(2, 5))]
            if R.random() < 0.4:
                paras.insert(
                    R.randint(1, len(paras)),
                    "\n".join(
                        textwrap.fill(f"- {self.sentence(theme)}", 72, subsequent_indent="  ")
                        for _ in range(R.randint(2, 5))
                    ),
                )
            body = "\n\n".join(paras)
        trailers = []
        if R.random() < 0.12:
            trailers.append(f"{R.choice(['Fixes', 'Closes', 'Refs'])} #{self.next_issue()}")
        if R.random() < 0.05:
            name, email, _ = R.choice(self.authors)
            trailers.append(f"Co-authored-by: {name} <{email}>")
        if R.random() < 0.04:
            name, email, _ = R.choice(self.authors)
            trailers.append(f"Reviewed-by: {name} <{email}>")
        if trailers:
            body = (body + "\n\n" if body else "") + "\n".join(trailers)
        return "\n\n" + body if body else ""

    def commit(self, forbidden: set[str]) -> tuple[str, list[tuple[str, str]]]:
        """Mutate the tree for one ordinary commit; return its message and ``(op, path)``."""
        R = self.R
        k = R.random()
        changes: list[tuple[str, str]] = []

        def pick(candidates: list[str]) -> str | None:
            ok = [c for c in candidates if c not in forbidden and c not in {p for _, p in changes}]
            return R.choice(ok) if ok else None

        if k < 0.03 and "pyproject.toml" not in forbidden and "poetry.lock" not in forbidden:
            dep = R.choice(DEPS)
            old = ".".join(map(str, self.dep_versions[dep]))
            ver = self.dep_versions[dep]
            if R.random() < 0.8:
                ver[2] += 1
            else:
                ver[1] += 1
                ver[2] = 0
            new = ".".join(map(str, ver))
            self.files["pyproject.toml"].lines = self.pyproject_lines()
            self.files["poetry.lock"].lines = self.lock_lines()
            msg = R.choice(
                [
                    f"chore(deps): bump {dep} from {old} to {new}",
                    f"build(deps): bump {dep} from {old} to {new}",
                    f"Bump {dep} from {old} to {new}",
                ]
            )
            if R.random() < 0.5:
                msg += (
                    f"\n\nBumps [{dep}](https://github.com/example/{dep}) from {old} "
                    f"to {new}.\n\nSigned-off-by: dependabot[bot] "
                    "<support@github.com>"
                )
            self.changelog_pending.append(f"Bump {dep} to {new}.")
            return msg, [("M", "pyproject.toml"), ("M", "poetry.lock")]
        if k < 0.045 and len(self.changelog_pending) > 8 and not forbidden:
            return self.release()
        if k < 0.06:
            path = pick(self.paths("text", under=".github"))
            if path:
                f = self.files[path]
                f.lines.append(
                    f"      - run: {R.choice(['ruff check .', 'mypy src', 'pytest -x'])}"
                )
                return self.message("ci", "ci", "", [], "", R.random() < 0.3), [("M", path)]
        if k < 0.075 and len(self.paths("py")) < 240:
            pkg = R.choice(PACKAGES)
            added = self.add_module(pkg, with_test=R.random() < 0.7)
            theme = self.files[added[0]].theme
            func = R.choice(self.functions_in(added[0]) or ["it"])
            msg = R.choice(
                [
                    f"feat({pkg}): add {theme[0]} {theme[1]} module",
                    f"Add {theme[0]} {theme[1]} to {pkg}",
                    f"feat: introduce {theme[0]} {theme[1]}s",
                ]
            ) + self.body(theme, func)
            self.changelog_pending.append(f"Add {theme[0]} {theme[1]}s to {pkg}.")
            return msg, [("M", p) for p in added]
        if k < 0.08 and not forbidden and len(self.paths("py")) > 170:
            path = pick(self.paths("py"))
            if path:
                del self.files[path]
                changes.append(("D", path))
                tpath = path.replace(f"src/{PROJECT}/", "tests/").rsplit("/", 1)
                tpath_s = f"{tpath[0]}/test_{tpath[1]}"
                if tpath_s in self.files and tpath_s not in forbidden:
                    del self.files[tpath_s]
                    changes.append(("D", tpath_s))
                name = path.rsplit("/", 1)[-1]
                return R.choice(
                    [
                        f"refactor: remove unused {name}",
                        f"Remove {name}",
                        f"chore: drop dead module {name}",
                    ]
                ), changes
        if k < 0.085 and self.adr_count < 14:
            path = self.add_adr()
            title = self.files[path].sections[0].heading
            return f"docs(adr): record {title.split(': ', 1)[1].lower()}", [("M", path)]
        if k < 0.17:
            # Documentation commit.
            docs = [p for p in self.paths("md", "rst") if p != "CHANGELOG.md"]
            for _ in range(R.choices([1, 2, 3], [70, 22, 8])[0]):
                path = pick(docs)
                if path:
                    self.edit_doc(path)
                    changes.append(("M", path))
            if changes:
                first = changes[0][1]
                theme = self.files[first].theme
                msg = self.message(
                    "docs",
                    first.split("/")[-1].split(".")[0],
                    self.func_name(theme),
                    theme,
                    first,
                    R.random() < 0.35,
                )
                return msg, changes
        # A code commit: the main case.
        nfiles = R.choices([1, 2, 3, 4, 5], [34, 30, 18, 11, 7])[0]
        src = self.paths("py")
        path = pick(src)
        if path is None:
            path = pick(self.paths("test"))
            if path is None:
                return "chore: empty commit", []
        pkg = path.split("/")[2] if path.startswith("src/") else "core"
        same_pkg = [p for p in src if p.startswith(f"src/{PROJECT}/{pkg}/")]
        tests = self.paths("test")
        ctype = R.choices(
            ["fix", "feat", "refactor", "perf", "test", "chore", "style"], [34, 26, 16, 5, 10, 6, 3]
        )[0]
        changes.append(("M", path))
        while len(changes) < nfiles:
            r = R.random()
            cand = pick(tests if r < 0.35 or ctype == "test" else same_pkg if r < 0.75 else src)
            if cand is None:
                break
            changes.append(("M", cand))
        for _, p in changes:
            for _ in range(R.choices([1, 2, 3], [60, 30, 10])[0]):
                self.edit_code(p)
        theme = self.files[path].theme
        func = R.choice(self.functions_in(path) or [self.func_name(theme)])
        msg = self.message(ctype, pkg, func, theme, "", plain=R.random() < 0.35)
        if ctype in ("fix", "feat", "perf") and R.random() < 0.5:
            self.changelog_pending.append(cap(msg.split("\n", 1)[0].split(": ", 1)[-1]) + ".")
        return msg, changes

    def release(self) -> tuple[str, list[tuple[str, str]]]:
        R = self.R
        if R.random() < 0.25:
            self.version = [self.version[0], self.version[1] + 1, 0]
        else:
            self.version[2] += 1
        v = ".".join(map(str, self.version))
        items = self.changelog_pending[-12:]
        self.changelog_pending = []
        log = self.files["CHANGELOG.md"]
        log.sections.insert(1, Section(2, v, ["\n".join(f"- {i}" for i in items)]))
        self.files["pyproject.toml"].lines = self.pyproject_lines()
        self.files[f"src/{PROJECT}/__init__.py"].lines[-1] = f'__version__ = "{v}"'
        msg = R.choice([f"chore(release): {v}", f"Release {v}", f"Bump version to {v}", f"{v}"])
        return msg, [
            ("M", "CHANGELOG.md"),
            ("M", "pyproject.toml"),
            ("M", f"src/{PROJECT}/__init__.py"),
        ]


# ------------------------------------------------------------------------------ fast-import


class Emitter:
    def __init__(self, gen: Gen, total: int, out: IO[bytes]) -> None:
        self.gen, self.out = gen, out
        R = gen.R
        gaps = [R.expovariate(1.0) + 0.02 for _ in range(total)]
        scale = SPAN / sum(gaps)
        ts, self.times = START_TS, []
        for g in gaps:
            ts += max(1, int(g * scale))
            self.times.append(ts)
        self.count = 0
        self.mark = 0

    def data(self, payload: bytes) -> None:
        self.out.write(b"data %d\n" % len(payload))
        self.out.write(payload)
        self.out.write(b"\n")

    def emit(
        self,
        ref: str,
        message: str,
        changes: list[tuple[str, str]],
        parent: int | None,
        merge: int | None = None,
        author: tuple[str, str, str] | None = None,
    ) -> int:
        gen = self.gen
        name, email, tz = author or gen.author()
        when = self.times[self.count]
        self.count += 1
        self.mark += 1
        w = self.out.write
        w(f"commit {ref}\nmark :{self.mark}\n".encode())
        w(f"author {name} <{email}> {when} {tz}\n".encode())
        w(f"committer {name} <{email}> {when} {tz}\n".encode())
        self.data(message.rstrip("\n").encode() + b"\n")
        if parent is not None:
            w(f"from :{parent}\n".encode())
        if merge is not None:
            w(f"merge :{merge}\n".encode())
        for op, path in changes:
            if op == "D":
                w(f"D {path}\n".encode())
            else:
                w(f"M 100644 inline {path}\n".encode())
                self.data(gen.files[path].render().encode())
        w(b"\n")
        return self.mark


def generate(out_dir: Path, commits: int, seed: int = 1, quiet: bool = False) -> dict[str, float]:
    """Create the repository at ``out_dir`` (replacing it); return a few counts."""
    if commits < 1:
        raise ValueError("commits must be >= 1")
    started = time.perf_counter()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    env = {**os.environ, "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str, **kw: Any) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", *args], cwd=out_dir, env=env, check=True, **kw)

    git("init", "-q")
    git("symbolic-ref", "HEAD", "refs/heads/main")
    git("config", "remote.origin.url", f"git@github.com:example/{PROJECT}-{commits}-{seed}.git")
    gen = Gen(seed)
    proc = subprocess.Popen(
        ["git", "fast-import", "--quiet", "--done"], cwd=out_dir, env=env, stdin=subprocess.PIPE
    )
    assert proc.stdin is not None
    out = proc.stdin
    em = Emitter(gen, commits, out)
    gen.initial_tree()
    tip = em.emit("refs/heads/main", "Initial commit", [("M", p) for p in sorted(gen.files)], None)
    merges = 0
    R = gen.R
    while em.count < commits:
        left = commits - em.count
        if left >= 7 and R.random() < 0.03:
            # A pull request: main moves on a little while the branch is worked on, then a
            # merge commit brings the branch in (branch and main touch different files).
            base = tip
            touched: set[str] = set()
            for _ in range(R.randint(0, 2)):
                msg, ch = gen.commit(set())
                tip = em.emit("refs/heads/main", msg, ch, tip)
                touched |= {p for _, p in ch}
            branch_tip = base
            feature: list[tuple[str, str]] = []
            author = gen.author()
            for _ in range(R.randint(1, 4)):
                msg, ch = gen.commit(touched | {"CHANGELOG.md"})
                branch_tip = em.emit("refs/heads/pr", msg, ch, branch_tip, author=author)
                feature += [c for c in ch if c not in feature]
            branch = f"{R.choice(['feature', 'fix', 'topic'])}/{gen.verb()}-{gen.noun()}"
            num = gen.next_issue()
            user = author[1].split("@")[0].split(".")[0]
            msg = R.choice(
                [
                    f"Merge pull request #{num} from {user}/{branch}",
                    f"Merge branch '{branch}'",
                    f"Merge branch '{branch}' into main",
                ]
            )
            if msg.startswith("Merge pull") and R.random() < 0.7:
                msg += "\n\n" + gen.paragraph(None, (1, 2))
            tip = em.emit(
                "refs/heads/main",
                msg,
                [c for c in feature if c[1] in gen.files],
                tip,
                merge=branch_tip,
            )
            merges += 1
            continue
        msg, ch = gen.commit(set())
        tip = em.emit("refs/heads/main", msg, ch, tip)
    out.write(b"done\n")
    out.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    subprocess.run(
        ["git", "update-ref", "-d", "refs/heads/pr"],
        cwd=out_dir,
        env=env,
        check=False,
        stderr=subprocess.DEVNULL,
    )
    git("reset", "-q", "--hard", "main")
    sections = sum(len(f.sections) for f in gen.files.values() if f.kind in ("md", "rst"))
    stats = {
        "commits": em.count,
        "merges": merges,
        "files": len(gen.files),
        "doc_files": sum(1 for f in gen.files.values() if f.kind in ("md", "rst")),
        "doc_sections": sections,
        "seconds": round(time.perf_counter() - started, 2),
    }
    if not quiet:
        print(
            f"generated {out_dir}: " + ", ".join(f"{k}={v}" for k, v in stats.items()),
            file=sys.stderr,
        )
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--commits", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    generate(args.out_dir, args.commits, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
