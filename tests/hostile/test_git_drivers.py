"""A repository's ``.gitattributes`` can name a diff driver for its files; the command of such a
driver (the user's own git configuration defines it) must not run on a stranger's file during
a sync, and what is stored is the patch as git holds it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from ..conftest import Repo, run_cli


def test_a_sync_runs_no_textconv_or_external_diff_a_repository_names(
    make_repo: Callable[[str], Repo], cloned: Callable[[Repo], Path], tmp_path: Path
):
    source = make_repo("drivers")
    source.commit(
        "Add the notes",
        {".gitattributes": "*.txt diff=shown\n", "notes.txt": "plain words of the notes\n"},
    )
    source.commit("More notes", {"notes.txt": "plain words of the notes\nzyxplain\n"})
    clone = cloned(source)
    ran = tmp_path / "driver-ran"
    # The user's own git configuration defines the driver (a clone brings none of its own).
    converter = f"sh -c 'touch {ran}; tr a-z A-Z < \"$0\"'"
    for key in ("diff.shown.textconv", "diff.shown.command"):
        subprocess.run(["git", "config", key, converter], cwd=clone, check=True)
    assert run_cli("init", "-C", str(clone)).returncode == 0
    done = run_cli("sync", "-q", "-C", str(clone))
    assert done.returncode == 0, done.stderr
    assert not ran.exists()
    found = run_cli("query", "zyxplain", "-C", str(clone))
    assert "+zyxplain" in found.stdout and "ZYXPLAIN" not in found.stdout
