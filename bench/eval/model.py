"""The shapes the evaluation fixture is written in: commits, file edits, doc sections, commands.

Standard library only. ``story.py`` and ``filler.py`` describe the project in these terms and
``fixture.py`` turns them into a git repository and a shell hook log.
"""

from __future__ import annotations

import calendar
import textwrap
import time
from dataclasses import dataclass, field

__all__ = [
    "A",
    "AgentSession",
    "AgentStep",
    "Cmd",
    "Commit",
    "D",
    "Doc",
    "Edit",
    "R",
    "Section",
    "Shell",
    "W",
    "code",
    "ts",
]


def code(text: str) -> str:
    """A dedented block without its leading newline: how file contents are written here."""
    return textwrap.dedent(text).lstrip("\n")


def ts(when: str) -> int:
    """``2026-04-14 10:30`` (UTC) as a Unix timestamp."""
    return calendar.timegm(time.strptime(when, "%Y-%m-%d %H:%M"))


@dataclass(frozen=True)
class Edit:
    op: str  # write | replace | append | delete
    path: str
    text: str = ""
    new: str = ""


def W(path: str, text: str) -> Edit:
    """Write the whole file."""
    return Edit("write", path, code(text))


def R(path: str, old: str, new: str) -> Edit:
    """Replace ``old`` (which must occur exactly once) by ``new``."""
    return Edit("replace", path, old, new)


def A(path: str, text: str) -> Edit:
    """Append a block (a blank line is put before it)."""
    return Edit("append", path, code(text))


def D(path: str) -> Edit:
    """Delete the file."""
    return Edit("delete", path)


@dataclass(frozen=True)
class Commit:
    when: str
    author: str
    subject: str
    body: str = ""
    edits: tuple[Edit, ...] = ()
    docs: tuple[str, ...] = ()  # "path#heading" keys of sections this commit adds or rewrites
    pr: tuple[str, int] | None = None  # (branch, number): made on a branch, merged right after
    revert_of: str | None = None  # subject of the commit this one reverts (sha put in the body)
    deps: tuple[tuple[str, str | None], ...] = ()  # dependency pins: name -> spec (None drops)


@dataclass(frozen=True)
class Cmd:
    cmd: str
    exit: int = 0
    cwd: str = ""  # relative to the repository root
    after: float = 1.0  # minutes after the previous command of the session
    duration: float = 1.2  # seconds


@dataclass(frozen=True)
class Shell:
    """One terminal session: commands typed in order, starting at ``when``."""

    when: str
    cmds: tuple[Cmd, ...]
    session: str = ""


@dataclass(frozen=True)
class AgentStep:
    """One tool call of a coding agent: a command (with what it printed, or its error), or an
    edit of ``edit`` (a path in the repository)."""

    cmd: str = ""
    exit: int = 0
    output: str = ""
    edit: str = ""
    cwd: str = ""  # relative to the repository root
    after: float = 1.0  # minutes after the previous step
    duration: float = 2.0  # seconds


@dataclass(frozen=True)
class AgentSession:
    """One coding agent's session (``agent``: a key of the agents table), from ``when``."""

    agent: str
    when: str
    steps: tuple[AgentStep, ...]


@dataclass(frozen=True)
class Section:
    heading: str
    text: str
    level: int = 2


@dataclass
class Doc:
    """A documentation file as a list of sections; a commit adds or rewrites some of them."""

    path: str
    sections: list[Section] = field(default_factory=list)

    def key(self, heading: str) -> str:
        return f"{self.path}#{heading}"

    def render(self, present: dict[str, str]) -> str:
        """The file with only the sections in ``present`` (heading -> text), in order."""
        rst = self.path.endswith(".rst")
        out: list[str] = []
        for s in self.sections:
            if s.heading not in present:
                continue
            if rst:
                mark = {1: "=", 2: "-", 3: "~"}[s.level]
                if s.level == 1:
                    out.append(mark * len(s.heading))
                out += [s.heading, mark * len(s.heading), ""]
            else:
                out += ["#" * s.level + " " + s.heading, ""]
            out += [present[s.heading].rstrip("\n"), ""]
        return "\n".join(out).rstrip("\n") + "\n"
