"""Changelog files and release headings, whatever their style."""

from __future__ import annotations

import pytest

from nexusmem_core.collectors.changelog import is_changelog, release_label, version_of


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("CHANGES.rst", True),
        ("CHANGELOG.md", True),
        ("docs/HISTORY.txt", True),
        ("NEWS", True),
        ("RELEASES.md", True),
        ("changelog.markdown", True),
        ("CHANGES.py", False),
        ("docs/changes-guide.md", False),
        ("README.md", False),
    ],
)
def test_changelog_files_by_name(path: str, expected: bool):
    assert is_changelog(path) is expected


@pytest.mark.parametrize(
    ("heading", "version"),
    [
        ("Version 8.1.0", "8.1.0"),
        ("[1.7.9](https://github.com/o/r/compare/v1.7.8...v1.7.9) (2024-12-04)", "1.7.9"),
        ("0.28.1 (6th December, 2024)", "0.28.1"),
        ("v2.0.0-rc1", "2.0.0-rc1"),
        ("[UNRELEASED]", "Unreleased"),
        ("TBD", "Unreleased"),
        ("Bug Fixes", None),
        ("Dropped support for Python 3.8 and older", None),
    ],
)
def test_release_headings(heading: str, version: str | None):
    assert version_of(heading) == version


def test_a_release_without_a_date_is_titled_by_its_version():
    assert release_label("Version 8.5.0", "Unreleased\n\n- things") == ("version 8.5.0", None)
    assert release_label("0.13.0 (May 22nd, 2020)", "")[0] == "version 0.13.0, released 2020-05-22"
