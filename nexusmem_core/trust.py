"""Whose ``.nexusmem/`` this is: a repository is data from a stranger, never memory or config.

A clone can ship a ``.nexusmem/`` of forged memory (commands marked verified) and a config
that sends the user's own commands to a host of its choosing; a committed ``.nexusmem`` link
would have memory written wherever it points. So a workspace is used only when this user's
NexusMem made it:

* a directory, not a symbolic link, owned by this user;
* holding :data:`MARKER`, a random nonce with its HMAC under the user's key (``hook.key`` in
  ``$NEXUSMEM_HOME``), which nothing in a repository can forge: the key never leaves the home;
* not tracked by git (the engine asks git: see ``engine.py``), so memory is never published by
  a ``git commit -a``.

A workspace an older NexusMem made has no marker: it is stamped when the user's own registry
(``projects.json``, which only their NexusMem writes) lists it at this root, and so is an empty
folder (git keeps none: a mount point). Anything else is refused with one line saying how to
move it aside; ``init --adopt`` is the user's word that one is theirs. Standard library only,
no ``typing``: the agent hook checks this on every event.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat

__all__ = [
    "KEY_FILE",
    "MARKER",
    "UNTRACK",
    "foreign",
    "refusal",
    "stamp",
    "trusted",
    "user_key",
]

KEY_FILE = "hook.key"
MARKER = "owner"
_WORKSPACE = ".nexusmem"
_TAG = b"nexusmem workspace 1\x00"  # keeps the marker's MACs apart from the command hashes
_MAX_MARKER = 4096
_MAX_REGISTRY = 64 << 20
UNTRACK = "`git rm -r --cached .nexusmem`, move it aside (`mv .nexusmem .nexusmem.shipped`)"


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def user_key(home: str | os.PathLike[str], create: bool = True) -> bytes | None:
    """The user's secret key (32 random bytes in ``home/hook.key``, 0600), made on first use;
    None when it does not exist and ``create`` is false."""
    path = os.path.join(home, KEY_FILE)
    try:
        return _read(path)
    except FileNotFoundError:
        if not create:
            return None
    os.makedirs(home, mode=0o700, exist_ok=True)
    key = os.urandom(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race: use its key
        return _read(path)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


def _mac(key: bytes, nonce: str) -> str:
    return hmac.new(key, _TAG + nonce.encode("ascii"), hashlib.sha256).hexdigest()


def stamp(workspace: str | os.PathLike[str], home: str | os.PathLike[str]) -> None:
    """Mark ``workspace`` as made by this user's NexusMem (0600, replaced in one step)."""
    nonce = os.urandom(16).hex()
    mac = _mac(user_key(home) or b"", nonce)  # made when missing: never None here
    text = (
        "Made by NexusMem for the user whose $NEXUSMEM_HOME holds the key; "
        "a copy in another repository is worthless.\n"
        f"{nonce} {mac}\n"
    )
    path = os.path.join(workspace, MARKER)
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _stamped(workspace: str, home: str | os.PathLike[str]) -> bool:
    """Whether the workspace's marker was made with this user's key."""
    key = user_key(home, create=False)
    if key is None:
        return False
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)  # a FIFO never blocks
    try:
        fd = os.open(os.path.join(workspace, MARKER), flags)
    except OSError:  # missing, or a link (whose target is anyone's)
        return False
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        lines = handle.read(_MAX_MARKER).decode("ascii", "replace").splitlines()
    fields = lines[-1].split() if lines else []
    if len(fields) != 2 or not (fields[0].isascii() and fields[1].isascii()):
        return False  # compare_digest takes ASCII text only
    return hmac.compare_digest(_mac(key, fields[0]), fields[1])


def _registered(root: str, home: str | os.PathLike[str]) -> bool:
    """Whether the user's registry lists a memory at ``root``'s workspace (what an older
    NexusMem, which made no marker, left behind)."""
    database = os.path.join(root, _WORKSPACE, "memory.db")
    try:
        with open(os.path.join(home, "projects.json"), "rb") as handle:
            data = json.loads(handle.read(_MAX_REGISTRY))
        entries = data["projects"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False
    return isinstance(entries, list) and any(
        isinstance(e, dict) and e.get("root") == root and e.get("database") == database
        for e in entries
    )


def foreign(workspace: str) -> str | None:
    """Why ``workspace`` cannot be the user's whatever it holds, in one line: a link, not a
    folder, or another user's; None for a folder of this user's."""
    try:
        info = os.lstat(workspace)
    except OSError as err:
        return f"{workspace} cannot be read ({err.strerror}): fix its permissions"
    if stat.S_ISLNK(info.st_mode):
        return (
            f"{workspace} is a symbolic link (to {os.readlink(workspace)}), which would have "
            "memory written wherever it points: remove the link"
        )
    if not stat.S_ISDIR(info.st_mode):
        return f"{workspace} is not a directory: move it aside"
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return (
            f"{workspace} belongs to another user (uid {info.st_uid}), not to you: "
            "move it aside (`mv .nexusmem .nexusmem.shipped`)"
        )
    return None


def _empty(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def refusal(root: str | os.PathLike[str], home: str | os.PathLike[str]) -> str | None:
    """Why the ``.nexusmem`` at ``root`` must not be used, in one line; None when there is
    none yet or it is this user's (a registered one from an older NexusMem is stamped now)."""
    root = os.fspath(root)
    workspace = os.path.join(root, _WORKSPACE)
    if not os.path.lexists(workspace):
        return None
    if (why := foreign(workspace)) is not None:
        return why
    if _stamped(workspace, home):
        return None
    # Nothing in it to trust (git keeps no empty folder: a mount point, or one made by hand),
    # or what an older NexusMem left, which the user's registry lists: stamped now.
    if _empty(workspace) or (
        _registered(root, home) and os.path.isfile(os.path.join(workspace, "memory.db"))
    ):
        # One that cannot be written now (read-only, full) is stamped by a later command.
        with contextlib.suppress(OSError):
            stamp(workspace, home)
        return None
    return (
        f"{workspace} was not made by your NexusMem (it holds no marker of yours): a "
        "repository's own files are never memory or config; move it aside "
        "(`mv .nexusmem .nexusmem.shipped`), or if you made it under another $NEXUSMEM_HOME, "
        "adopt it (`nexusmem init --adopt`)"
    )


def trusted(root: str, home: str | os.PathLike[str]) -> bool:
    """Whether ``root`` has a workspace this user's NexusMem made (the hooks' check)."""
    return os.path.isdir(os.path.join(root, _WORKSPACE)) and refusal(root, home) is None
