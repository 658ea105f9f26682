"""Reading a repository's files by their paths without ever leaving its work tree.

A cloned repository is a stranger's: a committed symlink can point anywhere (``/etc/passwd``,
``../../.ssh/id_rsa``, a link to a link, a directory link), and a path in the work tree can be
a FIFO or a device that never ends. Whatever git lists, a sync reads a file only when its real
path, every link resolved, is a regular file inside the work tree and outside ``.git`` and
``.nexusmem``; and it reads at most the bytes its caller asks for, so a huge file is cut at
read time, never held whole.
"""

from __future__ import annotations

import os
import stat

__all__ = ["WorkTree"]

_PRIVATE = (".git", ".nexusmem")  # inside the work tree, but never a file of the project's


class WorkTree:
    """The files of the work tree at ``root``, read by repository path."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.realpath(root)
        self._dirs: dict[str, bool] = {"": True}  # directory -> whether no link is on its way

    def real(self, path: str) -> str | None:
        """The real path of ``path`` (relative to the root) when it lies inside the work tree,
        else None: a link out of it, into ``.git``, or through a directory that leads out."""
        full = os.path.join(self.root, path)
        if os.path.islink(full) or not self._plain_dir(os.path.dirname(path)):
            full = os.path.realpath(full)
            return full if self._inside(full) else None
        return full

    def _plain_dir(self, directory: str) -> bool:
        """Whether no directory on the way to ``directory`` is a link: one lstat each, ever."""
        known = self._dirs.get(directory)
        if known is None:
            parent = self._plain_dir(os.path.dirname(directory))
            full = os.path.join(self.root, directory)
            known = self._dirs[directory] = parent and not os.path.islink(full)
        return known

    def _inside(self, real: str) -> bool:
        rel = os.path.relpath(real, self.root)
        top = rel.split(os.sep, 1)[0]
        return top != os.pardir and not os.path.isabs(rel) and top not in _PRIVATE

    def read(self, path: str, limit: int) -> tuple[bytes, bool, os.stat_result] | str:
        """At most ``limit`` bytes of ``path``, whether there was more, and its stat; or why
        it was not read: ``"outside"`` (it leads out of the work tree), ``"not a file"`` (a
        directory, a FIFO, a device) or ``"unreadable"`` (gone, no permission)."""
        real = self.real(path)
        if real is None:
            return "outside"
        try:
            # O_NONBLOCK: opening a FIFO for reading does not wait for a writer; O_NOFOLLOW:
            # the path checked above is the path opened, not a link swapped in since.
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            return "unreadable"
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return "not a file"
            try:
                # Up to its size: a read of ``limit`` bytes allocates all of them first.
                data = handle.read(min(st.st_size, limit) + 1)
            except OSError:
                return "unreadable"
        return (data[:limit], True, st) if len(data) > limit else (data, False, st)

    def stat(self, path: str) -> os.stat_result | None:
        """The stat of ``path`` when it is a regular file inside the work tree; else None.
        As cheap as ``os.stat`` for a file that is no link (most of them)."""
        full = os.path.join(self.root, path)
        st: os.stat_result | None
        try:
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode) or not self._plain_dir(os.path.dirname(path)):
                real = self.real(path)
                st = os.stat(real) if real is not None else None
        except OSError:
            return None
        return st if st is not None and stat.S_ISREG(st.st_mode) else None
