"""Changelogs and release notes: which files they are, and what a release heading says.

A changelog answers "which release did X": as sections cut at every heading it answered badly,
since a release is often a version heading over ``### Fixed`` / ``### Added`` sub-headings, each
a section of a few lines that names no version. So a changelog becomes one section per release
(collectors/docs.py folds the sub-headings in), titled by the version and its date whatever the
heading style (``## [1.7.9](…compare…) (2024-12-04)``, ``Version 8.1.0`` over ``Released
2022-03-28``, ``0.28.1 (6th December, 2024)``), and dated by the release, not by the last
commit that touched the file.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re

__all__ = ["NAME_WORDS", "is_changelog", "plain_release_text", "release_label", "version_of"]

_NAMES = frozenset(
    ("changes", "changelog", "history", "news", "releases", "release-notes", "release_notes")
)
NAME_WORDS = ("change", "history", "news", "release")  # one is in every name above
_EXTENSIONS = frozenset(("", ".md", ".markdown", ".rst", ".txt"))
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")  # [text](url) -> text
_VERSION = re.compile(
    r"(?<![\w.])v?(\d+\.\d+(?:\.\d+){0,2}(?:[-.]?(?:a|b|rc|alpha|beta|dev|post|pre)[.-]?\d*)?)"
    r"(?![\w.]*\w)",
    re.IGNORECASE,
)
# Release notes that tools generate link every entry: ``([#6680](https://github.com/…/issues/
# 6680)) ([eac4619](https://github.com/…/commit/eac4619…))``, and a contributors list of
# ``<img src="https://avatars…" …/> [Name](https://github.com/… "+12/-65 (#6714 )")``. Kept as
# written, the addresses were two thirds of a release's words: BM25 took the section for a
# long one and ranked it under short sections holding one word of the question. The text of a
# link stays (``#6680``, ``eac4619``, a name); its address and the tags go.
_MD_LINK = re.compile(r"!?\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"\n]*\")?\)")
_RST_LINK = re.compile(r"`([^`<\n]+)<[^>\n]+>`_{1,2}")  # one way to match: no backtracking
_TAG = re.compile(r"</?[A-Za-z][^>\n]*>")
_UNRELEASED = re.compile(r"^\W*(unreleased|tbd|upcoming|in development|next release)\b", re.I)
_MONTHS = "|".join(calendar.month_name[1:] + calendar.month_abbr[1:])
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTHS})\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_DAY = re.compile(rf"\b({_MONTHS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_LEAD_WORDS = 3  # a release heading names its version among its first words


def is_changelog(path: str) -> bool:
    """``CHANGES``, ``CHANGELOG``, ``HISTORY``, ``NEWS``, ``RELEASES`` (.md, .rst, .txt or none)."""
    name = path.rsplit("/", 1)[-1].lower()
    stem, dot, ext = name.rpartition(".")
    stem, ext = (stem, dot + ext) if dot else (ext, "")
    return stem in _NAMES and ext in _EXTENSIONS


def _plain(heading: str) -> str:
    return _LINK.sub(r"\1", heading).replace("[", " ").replace("]", " ").strip()


def version_of(heading: str) -> str | None:
    """The release a heading names (``1.7.9``, ``Unreleased``), or None for any other."""
    plain = _plain(heading)
    if _UNRELEASED.match(plain):
        return "Unreleased"
    match = _VERSION.search(plain)
    if match is None or len(plain[: match.start()].split()) >= _LEAD_WORDS:
        return None
    return match.group(1)


def _date(text: str) -> dt.date | None:
    found: list[tuple[int, dt.date]] = []
    for pattern, order in ((_ISO, "ymd"), (_DAY_MONTH, "dmy"), (_MONTH_DAY, "mdy")):
        match = pattern.search(text)
        if match is None:
            continue
        parts = dict(zip(order, match.groups(), strict=True))
        month = parts["m"]
        if not month.isdigit():
            month = str(_month_number(month))
        try:
            found.append((match.start(), dt.date(int(parts["y"]), int(month), int(parts["d"]))))
        except ValueError:
            continue
    return min(found)[1] if found else None


def _month_number(name: str) -> int:
    key = name[:3].lower()
    return next(i for i in range(1, 13) if calendar.month_abbr[i].lower() == key)


def plain_release_text(text: str) -> str:
    """A release's text with its links reduced to their text and its HTML tags dropped."""
    text = _MD_LINK.sub(r"\1", text)
    text = _RST_LINK.sub(lambda m: m[1].rstrip(), text)
    return _TAG.sub("", text)


def release_label(heading: str, text: str) -> tuple[str, int | None]:
    """A release's title (``version 1.7.9, released 2024-12-04``: the words people ask with,
    "which version", "what release", whatever the heading said) and its date as unix seconds
    (UTC midnight), read from the heading or else from the section's first lines (``Released
    2022-03-28``)."""
    version = version_of(heading) or _plain(heading)
    if version == "Unreleased":
        return "unreleased changes", None
    day = _date(_plain(heading)) or _date(text[:200])
    if day is None:
        return f"version {version}", None
    moment = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    return f"version {version}, released {day.isoformat()}", int(moment.timestamp())
