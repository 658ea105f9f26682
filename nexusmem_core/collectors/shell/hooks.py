"""``nexusmem hook install|remove|status``: put the hook into a shell's start-up file and out.

The script itself lives in ``$NEXUSMEM_HOME/hooks/``; the user's rc file only gets a marked
block that sources it if it exists, so a removed NexusMem costs nothing and prints nothing.
The block records how it was added (a newline put before it, a file created for it), so
``remove`` gives the file back byte for byte. fish reads ``conf.d/`` by itself: there the hook
is a file of its own and the user's config is never touched. PowerShell 7 and Windows
PowerShell 5.1 each read a profile of their own: the block goes into both, at the path each
reports as ``$PROFILE`` (a Documents folder OneDrive moved included).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError, UsageError
from ...files import file_error, make_dir, obstacle, read_text, remove_file, replace_file
from ...private import PRIVATE_DIR, PRIVATE_FILE
from .hooklog import LOG_FILE, last_record
from .scripts import SCRIPTS, VERSION, render

__all__ = ["SHELLS", "HookStatus", "Installed", "default_shell", "install", "remove", "status"]

SHELLS = tuple(SCRIPTS)
BEGIN = "# >>> nexusmem hook >>>"
END = "# <<< nexusmem hook <<<"
_BLOCK = re.compile(
    r"(?P<nl>\n)?# >>> nexusmem hook >>>(?P<flags>[^\n]*)\n.*?# <<< nexusmem hook <<<\n?",
    re.DOTALL,
)


def default_shell(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """The user's shell from ``$SHELL`` (PowerShell on Windows)."""
    env = os.environ if environ is None else environ
    if sys.platform == "win32":
        return "pwsh"
    name = Path(env.get("SHELL", "bash")).name
    return {"pwsh": "pwsh", "powershell": "pwsh"}.get(name, name if name in SHELLS else "bash")


def rc_files(
    shell: str,
    environ: dict[str, str] | os._Environ[str] | None = None,
    platform: str = sys.platform,
) -> list[Path]:
    """The start-up files the hook goes into: one, or for PowerShell each edition's profile."""
    env = os.environ if environ is None else environ
    home = Path(env.get("HOME") or Path.home())
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    if shell == "bash":
        return [home / ".bashrc"]
    if shell == "zsh":
        return [Path(env.get("ZDOTDIR") or home) / ".zshrc"]
    if shell == "fish":
        return [config / "fish" / "conf.d" / "nexusmem.fish"]
    if platform != "win32":  # only PowerShell 7 runs here
        return [_asked_profile("pwsh", env) or config / "powershell" / _PROFILE]
    asked = {exe: _asked_profile(exe, env) for exe in _EDITIONS}
    known = next((path for path in asked.values() if path), None)
    # Both editions keep their profiles in Documents, wherever OneDrive may have moved it.
    documents = known.parent.parent if known else home / "Documents"
    return [asked[exe] or documents / folder / _PROFILE for exe, folder in _EDITIONS.items()]


_PROFILE = "Microsoft.PowerShell_profile.ps1"
_EDITIONS = {"pwsh": "PowerShell", "powershell": "WindowsPowerShell"}  # 7, and 5.1 on Windows
# Base64 of UTF-8: no console code page can garble a user name on the way.
_ASK_PROFILE = "[Convert]::ToBase64String([Text.Encoding]::UTF8.GetBytes($PROFILE))"


def _asked_profile(exe: str, env: dict[str, str] | os._Environ[str]) -> Path | None:
    """``$PROFILE`` as the PowerShell ``exe`` on PATH reports it, or None without one."""
    found = shutil.which(exe, path=env["PATH"]) if env.get("PATH") else None
    if found is None:
        return None
    argv = [found, "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", _ASK_PROFILE]
    try:
        done = subprocess.run(
            argv, capture_output=True, stdin=subprocess.DEVNULL, env=dict(env), timeout=60
        )
        path = base64.b64decode(done.stdout.strip(), validate=True).decode()
    except (OSError, subprocess.SubprocessError, ValueError):  # ValueError: not base64 of UTF-8
        return None
    return Path(path) if done.returncode == 0 and os.path.isabs(path) else None


def _script_path(home: Path, shell: str) -> Path:
    return home / "hooks" / f"nexusmem.{ {'pwsh': 'ps1'}.get(shell, shell) }"


def _block(shell: str, script: Path, flags: str) -> str:
    if shell == "pwsh":
        quoted = str(script).replace("'", "''")
        line = f"if (Test-Path -LiteralPath '{quoted}') {{ . '{quoted}' }}"
    else:
        quoted = str(script).replace("'", "'\\''")
        line = f"[ -f '{quoted}' ] && . '{quoted}'"
    return f"{BEGIN}{flags}\n{line}\n{END}\n"


def _check_shell(shell: str) -> None:
    if shell not in SHELLS:
        raise UsageError(f"--shell: {shell!r} is not one of {', '.join(SHELLS)}")


@dataclass
class HookStatus:
    shell: str
    state: str  # installed, not installed, outdated
    rc_files: list[str]
    script: str
    last_recorded: float | None  # when the last command this shell recorded ended
    warnings: list[str]


@dataclass
class Installed:
    change: str  # installed, updated (the script was rewritten), unchanged
    rc_files: list[str]
    warnings: list[str]


def install(
    shell: str, home: Path, python: str = sys.executable, environ: dict[str, str] | None = None
) -> Installed:
    """Write the script and the rc blocks, each only if it is not there as it should be."""
    _check_shell(shell)
    rcs = rc_files(shell, environ)
    script = rcs[0] if shell == "fish" else _script_path(home, shell)
    text = render(shell, python, str(home))
    before = read_text(script)
    if shell != "fish":  # fish's file is in the user's own config folder, with its own mode
        make_dir(home, PRIVATE_DIR)
        make_dir(script.parent, PRIVATE_DIR)
    if before != text:
        replace_file(script, text, None if shell == "fish" else PRIVATE_FILE)
    remove_file(home / "hooks" / f"{shell}.state")  # the next shell finds out again
    warnings: list[str] = []
    added = [] if shell == "fish" else [rc for rc in rcs if _wire(shell, rc, script, warnings)]
    if shell == "fish":
        remove_file(_script_path(home, shell))  # fish reads its own conf.d file
    if added or before is None:
        change = "installed"
    else:
        change = "updated" if before != text else "unchanged"
    return Installed(change, [str(rc) for rc in rcs], warnings)


def _wire(shell: str, rc: Path, script: Path, warnings: list[str]) -> bool:
    """Add the block that sources ``script`` to ``rc``; False if it is there already."""
    text = read_text(rc)
    if text is not None and BEGIN in text:
        return False
    if shell == "bash" and text and re.search(r"trap\s.*DEBUG|bash-preexec", text):
        warnings.append(
            f"{rc} sets a DEBUG trap or loads bash-preexec: NexusMem joins "
            "bash-preexec, but cannot share a DEBUG trap owned by anything else"
        )
    if text is None:  # remove deletes the file again
        new = _block(shell, script, " created")
    elif text == "" or text.endswith("\n"):
        new = text + _block(shell, script, "")
    else:  # remove takes the newline out again too
        new = text + "\n" + _block(shell, script, " newline")
    replace_file(rc, new)
    return True


def remove(shell: str, home: Path, environ: dict[str, str] | None = None) -> bool:
    """Take the hook out, restoring the rc files exactly; return whether anything was there."""
    _check_shell(shell)
    found = False
    for rc in rc_files(shell, environ):
        if shell == "fish":
            found = found or rc.exists()
            remove_file(rc)
        else:
            found = _unwire(rc) or found
    script = _script_path(home, shell)
    found = found or script.exists()
    remove_file(script)
    return found


def _unwire(rc: Path) -> bool:
    """Take the block out of ``rc``, giving the file back as it was; False if it had none."""
    text = read_text(rc)
    if text is None or BEGIN not in text:
        return False
    match = _BLOCK.search(text)
    if match is None:
        raise ConfigError(
            f"{rc}: the NexusMem block has lost its end marker; "
            f"remove the lines from {BEGIN!r} by hand"
        )
    flags = match.group("flags")
    # The newline before the block is the user's unless the block says we added it; even then
    # it stays when the user has since written lines after the block, or their last line
    # before it and their first after it would become one.
    ours = "newline" in flags and match.end() == len(text)
    keep = "" if ours else match.group("nl") or ""
    rest = text[: match.start()] + keep + text[match.end() :]
    if "created" in flags and not rest:
        remove_file(rc)
    else:
        replace_file(rc, rest)
    return True


def _last_recorded(home: Path, shell: str) -> float | None:
    """When ``shell``'s last record ended: the log is shared by every shell, so its own time
    says nothing about this one."""
    log = home / LOG_FILE
    try:
        record = last_record(log, lambda r: r["shell"] == shell, json.dumps(shell).encode())
    except OSError as err:
        raise file_error("read", log, err) from err
    if record is None or record.get("start") is None:
        return None
    return float(record["start"]) + float(record.get("duration") or 0)


def status(
    shell: str, home: Path, python: str = sys.executable, environ: dict[str, str] | None = None
) -> HookStatus:
    """installed / not installed / outdated, and when this shell last recorded a command.

    The script names the home it records into. Installed under another ``NEXUSMEM_HOME`` it is
    still current (the rc file sources it, it records), so it is read where the rc file points
    and compared as the script for the home it names; a warning says which home that is."""
    _check_shell(shell)
    rcs = rc_files(shell, environ)
    script = rcs[0] if shell == "fish" else _sourced(shell, rcs) or _script_path(home, shell)
    current = read_text(script)
    named = _named_home(shell, current) or str(home)
    unwired = [rc for rc in rcs if shell != "fish" and BEGIN not in (read_text(rc) or "")]
    warnings = []
    if current is None or len(unwired) == len(rcs):
        state = "not installed"
    elif unwired or current != render(shell, python, named):
        state = "outdated"
        missing = f" ({', '.join(map(str, unwired))} does not load it)" if unwired else ""
        warnings.append(
            f"run `nexusmem hook install --shell {shell}` to update it{missing} "
            f"(this NexusMem writes version {VERSION})"
        )
    else:
        state = "installed"
    if state != "not installed" and named != str(home):
        warnings.append(
            f"it records into {named} (NEXUSMEM_HOME when it was installed), not {home}: "
            f"`nexusmem hook install --shell {shell}` makes it record here"
        )
    where = Path(named)
    if (where / "hooks" / f"{shell}.state").is_file():
        warnings.append(
            "another tool owns bash's DEBUG trap: commands are not recorded; load "
            "bash-preexec (NexusMem joins it) or remove the other trap"
        )
    blocked = obstacle(where)  # the recorder fails silently at the prompt: say it here
    if blocked is not None and state != "not installed":
        warnings.append(f"commands cannot be recorded now: {blocked.text}")
    last = _last_recorded(where, shell)
    return HookStatus(shell, state, [str(rc) for rc in rcs], str(script), last, warnings)


_SOURCED = {
    "pwsh": (re.compile(r"Test-Path -LiteralPath '((?:[^']|'')*)'"), "''"),
    "posix": (re.compile(r"\[ -f '((?:[^']|'\\'')*)' \]"), "'\\''"),
}


def _sourced(shell: str, rcs: list[Path]) -> Path | None:
    """The script the first rc file's NexusMem block sources (it names its home's path)."""
    pattern, quote = _SOURCED["pwsh" if shell == "pwsh" else "posix"]
    for rc in rcs:
        text = read_text(rc) or ""
        block = _BLOCK.search(text)
        found = pattern.search(block.group(0)) if block else None
        if found:
            return Path(found.group(1).replace(quote, "'"))
    return None


# Where each script passes its home to the recorder, quoted as scripts.py quotes it.
_HOME_ARG = {
    "bash": (re.compile(r"--home '((?:[^']|'\\'')*)'"), lambda t: t.replace("'\\''", "'")),
    "zsh": (re.compile(r"--home '((?:[^']|'\\'')*)'"), lambda t: t.replace("'\\''", "'")),
    "fish": (re.compile(r"--home '((?:[^'\\]|\\.)*)'"), lambda t: re.sub(r"\\(.)", r"\1", t)),
    "pwsh": (re.compile(r"'--home', '((?:[^']|'')*)'"), lambda t: t.replace("''", "'")),
}


def _named_home(shell: str, script: str | None) -> str | None:
    """The home ``script`` records into, as its recorder's ``--home`` names it; status then
    compares the whole script with the one rendered for that home."""
    pattern, unquote = _HOME_ARG[shell]
    found = pattern.search(script or "")
    return unquote(found.group(1)) if found else None
