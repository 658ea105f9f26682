"""Real bash, zsh and fish under a pty: install the hook, type commands, read the log.

A shell that is not installed skips with the reason; `.ci/run` installs zsh and fish.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from nexusmem_core.collectors.shell import hooks

from .pty_shell import PROMPT, PtyShell, shell_env

USER_RC = {
    "bash": (".bashrc", f"PS1='{PROMPT}'\nPROMPT_COMMAND='user_prompt_ran=1'\n"),
    "zsh": (".zshrc", f"PS1='{PROMPT}'\nsetopt HIST_IGNORE_SPACE\nunsetopt PROMPT_SP\n"),
    "fish": (
        ".config/fish/config.fish",
        f"function fish_prompt; printf '{PROMPT}'; end\nfunction fish_greeting; end\n",
    ),
}
ARGV = {
    "bash": lambda home: ["bash", "--rcfile", str(home / ".bashrc"), "-i"],
    "zsh": lambda home: ["zsh", "-i"],
    "fish": lambda home: ["fish", "-i"],
}
SET_SECRET = {
    "bash": "export DB_PASSWORD=hunter2; true",
    "zsh": "export DB_PASSWORD=hunter2",
    "fish": "env DB_PASSWORD=hunter2 true",
}


def records(log: Path, count: int, timeout: float = 20.0) -> list[dict]:
    """The log's records once it holds ``count`` of them (recorders run in the background)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists():
            lines = [json.loads(line) for line in log.read_text().splitlines()]
            if len(lines) >= count:
                return sorted(lines, key=lambda r: r["start"])
        time.sleep(0.05)
    raise AssertionError(f"expected {count} records in {log}")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_hook_records_commands_from_a_live_shell(shell: str, tmp_path: Path):
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (apt-get install {shell})")
    home, nm, work = tmp_path / "home", tmp_path / "nm", tmp_path / "work"
    work.mkdir(parents=True)
    env = {**shell_env(home, nm, shell), "ZDOTDIR": str(home)}
    rc_name, rc_text = USER_RC[shell]
    (home / rc_name).parent.mkdir(parents=True, exist_ok=True)
    (home / rc_name).write_text(rc_text)
    hooks.install(shell, nm, sys.executable, env)
    session = PtyShell(ARGV[shell](home), env, work)
    try:
        status = "echo $status" if shell == "fish" else "echo $?"
        for line in ["false", "sleep 0.3", " echo typed-with-a-space", SET_SECRET[shell], status]:
            session.run(line)
        got = records(nm / "shell-history.jsonl", 4)
    finally:
        session.close()
    by_cmd = {r["cmd"]: r for r in got}
    assert by_cmd["false"]["exit"] == 1
    assert by_cmd["sleep 0.3"]["exit"] == 0 and by_cmd["sleep 0.3"]["duration"] >= 0.25
    assert not any("typed-with-a-space" in r["cmd"] for r in got)
    secret = next(r for r in got if "DB_PASSWORD" in r["cmd"])
    assert "hunter2" not in secret["cmd"] and "[REDACTED]" in secret["cmd"]
    assert all(Path(r["cwd"]).resolve() == work.resolve() for r in got)
    assert all(r["shell"] == shell and r["session"] for r in got)
    assert "hunter2" not in (nm / "shell-history.jsonl").read_text()


def test_bash_keeps_the_exit_status_and_other_prompt_commands(tmp_path: Path):
    home, nm, work = tmp_path / "home", tmp_path / "nm", tmp_path / "work"
    work.mkdir(parents=True)
    env = shell_env(home, nm, "bash")
    home.mkdir()
    (home / ".bashrc").write_text(f"PS1='{PROMPT}'\nPROMPT_COMMAND='seen=$?'\n")
    hooks.install("bash", nm, sys.executable, env)
    session = PtyShell(ARGV["bash"](home), env, work)
    try:
        session.run("(exit 7)")
        out = session.run("echo status=$seen")
        session.run("for i in 1 2; do\necho $i\ndone")
        got = records(nm / "shell-history.jsonl", 3)
    finally:
        session.close()
    assert "status=7" in out  # the user's PROMPT_COMMAND still saw the command's $?
    by_cmd = {r["cmd"]: r for r in got}
    assert by_cmd["(exit 7)"]["exit"] == 7  # a subshell-only command: no DEBUG trap fired
    assert [r["cmd"] for r in got if r["cmd"].startswith("for")] == [
        "for i in 1 2; do echo $i; done"
    ]  # typed over three lines, recorded as one command


def test_powershell_script_wraps_the_prompt_and_captures_status_first():
    from nexusmem_core.collectors.shell.scripts import render

    text = render("pwsh", "C:\\Python\\python.exe", "C:\\Users\\me\\.nexusmem")
    body = text.split("function global:prompt {", 1)[1]
    assert body.strip().startswith("$ok = $?")  # first, before anything can change it
    assert "$global:__NexusMemPrompt = $function:prompt" in text  # the old prompt is kept
    assert "& $global:__NexusMemPrompt" in body and "$global:LASTEXITCODE = $code" in body
    assert "UTF8.GetBytes([string]$h.CommandLine)" in body  # text on stdin, not in argv
    assert "StandardInput.BaseStream.Write($bytes" in body
    assert "'C:\\Python\\python.exe'" in text


def test_powershell_script_uses_only_what_windows_powershell_5_1_has():
    """.NET Framework has no ProcessStartInfo.ArgumentList: calling .Add on it threw inside the
    hook's catch, and Windows PowerShell recorded nothing, silently."""
    from nexusmem_core.collectors.shell.scripts import render

    text = render("pwsh", "C:\\Python\\python.exe", "C:\\Users\\me\\.nexusmem")
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "ArgumentList" not in code and "StandardInputEncoding" not in code
    assert "$psi.Arguments = ($argv | ForEach-Object { __NexusMemQuote $_ }) -join ' '" in text


def _split_windows(line: str) -> list[str]:
    """A command line split as the C runtime (and .NET on Unix) splits it into argv."""
    args: list[str] = []
    arg, quoted, started, i = "", False, False, 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            n = len(line[i:]) - len(line[i:].lstrip("\\"))
            before_quote = line[i + n : i + n + 1] == '"'
            arg += "\\" * (n // 2 if before_quote else n) + ('"' if before_quote and n % 2 else "")
            i += n + (1 if before_quote and n % 2 else 0)
        elif c == '"':
            quoted, i = not quoted, i + 1
        elif c in " \t" and not quoted:
            if started:
                args.append(arg)
            arg, started, i = "", False, i + 1
            continue
        else:
            arg, i = arg + c, i + 1
        started = True
    return [*args, arg] if started else args


def test_powershell_quoting_gives_the_recorder_each_argument_as_it_was():
    """The two replacements the script makes, applied as .NET applies them ($1 is the group,
    all else literal), then the command line split back: every argument comes out whole."""
    import re

    from nexusmem_core.collectors.shell.scripts import render

    text = render("pwsh", "C:\\Python\\python.exe", "C:\\Users\\me\\.nexusmem")
    pairs = re.findall(r"-replace '([^']*)', '([^']*)'", text.split("__NexusMemQuote(", 1)[1])
    assert len(pairs) == 2

    def quote(value: str) -> str:
        for pattern, replacement in pairs:
            value = re.sub(pattern, lambda m, r=replacement: r.replace("$1", m.group(1)), value)
        return '"' + value + '"'

    argv = ["C:\\Program Files\\", 'say "hi"', 'a\\"b', "\\\\server\\share\\", "", "it's", "x\ty"]
    assert _split_windows(" ".join(quote(a) for a in argv)) == argv


def test_fish_records_when_the_command_started(tmp_path: Path):
    """fish gives only a duration after the fact: the hook reads the clock when the command
    starts, so the start is not the recorder's own (later, by its start-up) time less it."""
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed (apt-get install fish)")
    home, nm, work = tmp_path / "home", tmp_path / "nm", tmp_path / "work"
    work.mkdir(parents=True)
    env = shell_env(home, nm, "fish")
    rc_name, rc_text = USER_RC["fish"]
    (home / rc_name).parent.mkdir(parents=True)
    (home / rc_name).write_text(rc_text)
    hooks.install("fish", nm, sys.executable, env)
    session = PtyShell(ARGV["fish"](home), env, work)
    try:
        session.run("date +%s.%N >clock; sleep 0.2")  # the clock, read inside the command
        (record,) = records(nm / "shell-history.jsonl", 1)
    finally:
        session.close()
    inside = float((work / "clock").read_text())
    # It lies within what was recorded (the start is kept to the millisecond).
    assert record["start"] - 0.0005 <= inside <= record["start"] + record["duration"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_a_command_that_changes_directory_is_recorded_where_it_started(shell: str, tmp_path: Path):
    """`cd elsewhere && make` was run from here: the directory after it ran would put it, and
    the memory of what it did, in another project."""
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (apt-get install {shell})")
    home, nm, work = tmp_path / "home", tmp_path / "nm", tmp_path / "work"
    elsewhere = tmp_path / "elsewhere"
    for folder in (work, elsewhere):
        folder.mkdir(parents=True)
    env = {**shell_env(home, nm, shell), "ZDOTDIR": str(home)}
    rc_name, rc_text = USER_RC[shell]
    (home / rc_name).parent.mkdir(parents=True, exist_ok=True)
    (home / rc_name).write_text(rc_text)
    hooks.install(shell, nm, sys.executable, env)
    session = PtyShell(ARGV[shell](home), env, work)
    try:
        session.run(f"cd {elsewhere} && true")
        session.run("pwd")
        got = records(nm / "shell-history.jsonl", 2)
    finally:
        session.close()
    where = {r["cmd"].split()[0]: Path(r["cwd"]).resolve() for r in got}
    assert where == {"cd": work.resolve(), "pwd": elsewhere.resolve()}


def test_powershell_records_the_directory_its_command_started_in():
    """PowerShell's history keeps no directory: the prompt notes where the next command
    starts, and records a command with the directory its own prompt noted."""
    from nexusmem_core.collectors.shell.scripts import render

    body = render("pwsh", "C:\\Python\\python.exe", "C:\\Users\\me\\.nexusmem").split(
        "function global:prompt {", 1
    )[1]
    assert "'--cwd', $global:__NexusMemCwd" in body
    noted = body.index('$global:__NexusMemCwd = "$PWD"')
    assert body.index("[System.Diagnostics.Process]::Start($psi)") < noted
    assert noted < body.index("& $global:__NexusMemPrompt")
