"""hook install / remove / status: idempotent, byte-exact, honest about what it finds."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusmem_core.collectors.shell import hooks
from nexusmem_core.collectors.shell.scripts import render

from .conftest_shell import HOME_ENV

ORIGINAL = {
    "ends with newline": "export PATH=$HOME/bin:$PATH\nalias ll='ls -l'\n",
    "no final newline": "PS1='$ '\nalias gs='git status'",
    "empty": "",
    "crlf and non-utf8": "set -o vi\r\n# caf\udce9\r\n",
}


def env(tmp_path: Path) -> dict[str, str]:
    return {k: v.format(tmp=tmp_path) for k, v in HOME_ENV.items()}


@pytest.mark.parametrize("shell", ["bash", "zsh", "pwsh"])
@pytest.mark.parametrize("name", sorted(ORIGINAL))
def test_remove_restores_the_rc_file_byte_for_byte(tmp_path: Path, shell: str, name: str):
    environ = env(tmp_path)
    (rc,) = hooks.rc_files(shell, environ)
    rc.parent.mkdir(parents=True, exist_ok=True)
    before = ORIGINAL[name].encode("utf-8", "surrogateescape")
    rc.write_bytes(before)
    nm = tmp_path / "nm"
    hooks.install(shell, nm, "/opt/py", environ)
    hooks.install(shell, nm, "/opt/py", environ)  # idempotent: one block
    text = rc.read_bytes()
    assert text.startswith(before) and text.count(b">>> nexusmem hook >>>") == 1
    assert hooks.status(shell, nm, "/opt/py", environ).state == "installed"
    assert hooks.remove(shell, nm, environ) is True
    assert rc.read_bytes() == before
    assert hooks.status(shell, nm, "/opt/py", environ).state == "not installed"


def test_an_rc_file_created_for_the_hook_is_deleted_again(tmp_path: Path):
    environ = env(tmp_path)
    (rc,) = hooks.rc_files("zsh", environ)
    hooks.install("zsh", tmp_path / "nm", "/opt/py", environ)
    assert rc.is_file()
    hooks.remove("zsh", tmp_path / "nm", environ)
    assert not rc.exists()


def test_fish_gets_a_conf_d_file_of_its_own(tmp_path: Path):
    environ = env(tmp_path)
    hooks.install("fish", tmp_path / "nm", "/opt/py", environ)
    conf = tmp_path / "home" / ".config" / "fish" / "conf.d" / "nexusmem.fish"
    assert conf.read_text() == render("fish", "/opt/py", str(tmp_path / "nm"))
    assert hooks.remove("fish", tmp_path / "nm", environ) and not conf.exists()


def test_status_says_outdated_when_the_script_differs(tmp_path: Path):
    environ, nm = env(tmp_path), tmp_path / "nm"
    hooks.install("bash", nm, "/opt/py", environ)
    assert hooks.status("bash", nm, "/another/python", environ).state == "outdated"


def test_a_foreign_debug_trap_is_reported(tmp_path: Path):
    environ, nm = env(tmp_path), tmp_path / "nm"
    (rc,) = hooks.rc_files("bash", environ)
    rc.parent.mkdir(parents=True)
    rc.write_text("trap 'echo hi' DEBUG\n")
    warnings = hooks.install("bash", nm, "/opt/py", environ).warnings
    assert any("DEBUG trap" in w for w in warnings)


def test_unknown_shell_is_a_usage_error(tmp_path: Path):
    from nexusmem_core.errors import UsageError

    with pytest.raises(UsageError, match="--shell"):
        hooks.install("tcsh", tmp_path, "/opt/py", env(tmp_path))


def test_default_shell_comes_from_SHELL():
    assert hooks.default_shell({"SHELL": "/usr/bin/zsh"}) == "zsh"
    assert hooks.default_shell({"SHELL": "/usr/local/bin/fish"}) == "fish"
    assert hooks.default_shell({}) == "bash"


def test_hook_commands_from_the_cli(tmp_path: Path, home: Path):
    from ...conftest import run_cli

    user = tmp_path / "user"
    user.mkdir()
    (user / ".zshrc").write_text("bindkey -v\n")
    environ = {"HOME": str(user), "SHELL": "/usr/bin/zsh"}
    assert "not installed" in run_cli("hook", "status", env=environ).stdout
    out = run_cli("hook", "install", env=environ)
    assert out.returncode == 0 and "installed the zsh hook" in out.stdout
    status = run_cli("hook", "status", "--json", env=environ)
    assert '"state": "installed"' in status.stdout
    assert run_cli("hook", "remove", env=environ).stdout.strip() == "removed the zsh hook"
    assert (user / ".zshrc").read_text() == "bindkey -v\n"
    bad = run_cli("hook", "install", "--shell", "tcsh", env=environ)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_lines_appended_after_the_block_stay_lines_of_their_own(tmp_path: Path, home: Path):
    """The rc file had no final newline, so install added one; the user then wrote a line after
    the block. Remove takes the block out and leaves that newline between their two lines."""
    from ...conftest import run_cli

    user = tmp_path / "user"
    user.mkdir()
    rc = user / ".zshrc"
    rc.write_bytes(b'alias ll="ls -l"')
    environ = {"HOME": str(user), "SHELL": "/usr/bin/zsh"}
    assert run_cli("hook", "install", env=environ).returncode == 0
    with open(rc, "ab") as handle:
        handle.write(b"export FOO=1\n")
    assert run_cli("hook", "remove", env=environ).stdout.strip() == "removed the zsh hook"
    assert rc.read_bytes() == b'alias ll="ls -l"\nexport FOO=1\n'


def test_a_second_install_says_it_is_already_installed_and_writes_nothing(
    tmp_path: Path, home: Path
):
    from ...conftest import run_cli

    user = tmp_path / "user"
    user.mkdir()
    (user / ".bashrc").write_text("set -o vi\n")
    environ = {"HOME": str(user), "SHELL": "/bin/bash"}
    assert "installed the bash hook" in run_cli("hook", "install", env=environ).stdout
    rc, script = user / ".bashrc", home / "hooks" / "nexusmem.bash"
    before = [(path.read_bytes(), path.stat().st_ino) for path in (rc, script)]
    again = run_cli("hook", "install", env=environ)
    assert again.returncode == 0
    assert again.stdout.strip() == f"the bash hook is already installed in {rc}"
    # Same bytes, and the same inodes: neither file was rewritten (a rewrite is a rename).
    assert [(path.read_bytes(), path.stat().st_ino) for path in (rc, script)] == before


def test_status_reports_the_last_record_of_its_own_shell(tmp_path: Path, home: Path):
    """The log is shared by every shell: a later bash command is not PowerShell's."""
    import json

    from nexusmem_core.collectors.shell import hooklog

    from ...conftest import run_cli

    pwsh = {"v": 1, "id": "a", "cmd": "Get-Item .", "shell": "pwsh", "start": 1_700_000_000.5}
    hooklog.append(home, {**pwsh, "duration": 2.0})
    hooklog.append(home, {**pwsh, "id": "b", "shell": "bash", "start": 1_800_000_000.0})
    environ = {"HOME": str(tmp_path / "user")}
    status = run_cli("hook", "status", "--shell", "pwsh", "--json", env=environ)
    assert json.loads(status.stdout)["last_recorded"] == 1_700_000_002.5
    zsh = run_cli("hook", "status", "--shell", "zsh", env=environ)
    assert zsh.returncode == 0 and "last recorded: never" in zsh.stdout


PROFILE = "Microsoft.PowerShell_profile.ps1"


def fake_powershell(bin_dir: Path, name: str, profile: Path) -> None:
    """A ``pwsh`` or ``powershell`` on PATH that answers the one question NexusMem asks it:
    ``$PROFILE``, without loading the profile, as base64 of UTF-8."""
    import base64

    answer = base64.b64encode(str(profile).encode()).decode()
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text(
        f"#!/bin/sh\ncase \"$*\" in *-NoProfile*'$PROFILE'*) echo {answer} ;; *) exit 1 ;; esac\n"
    )
    script.chmod(0o755)


def test_the_pwsh_hook_goes_where_pwsh_says_its_profile_is(tmp_path: Path, home: Path):
    """A Documents folder OneDrive moved is found by asking PowerShell for $PROFILE."""
    import os

    from ...conftest import run_cli

    user = tmp_path / "user"
    profile = user / "OneDrive" / "Documents" / "PowerShell" / PROFILE
    fake_powershell(tmp_path / "bin", "pwsh", profile)
    environ = {"HOME": str(user), "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    out = run_cli("hook", "install", "--shell", "pwsh", env=environ)
    assert out.returncode == 0 and f"installed the pwsh hook in {profile};" in out.stdout
    assert ">>> nexusmem hook >>>" in profile.read_text()
    assert not (user / ".config" / "powershell").exists()
    status = run_cli("hook", "status", "--shell", "pwsh", env=environ).stdout
    assert status.startswith(f"pwsh: installed ({profile})")
    assert run_cli("hook", "remove", "--shell", "pwsh", env=environ).returncode == 0
    assert not profile.exists()  # created for the hook, so deleted again


def test_on_windows_both_editions_get_the_hook(tmp_path: Path):
    """Without a PowerShell to ask, the documented profiles of 7 and of 5.1 in Documents; with
    Windows PowerShell to ask (it is always there), its Documents serves PowerShell 7 too."""
    user = tmp_path / "user"
    environ = {"HOME": str(user)}
    assert hooks.rc_files("pwsh", environ, platform="win32") == [
        user / "Documents" / "PowerShell" / PROFILE,
        user / "Documents" / "WindowsPowerShell" / PROFILE,
    ]
    moved = tmp_path / "OneDrive - Contoso" / "Documents"
    fake_powershell(tmp_path / "bin", "powershell", moved / "WindowsPowerShell" / PROFILE)
    environ["PATH"] = str(tmp_path / "bin")
    assert hooks.rc_files("pwsh", environ, platform="win32") == [
        moved / "PowerShell" / PROFILE,
        moved / "WindowsPowerShell" / PROFILE,
    ]


def test_a_powershell_that_does_not_answer_leaves_the_documented_profile(tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pwsh").write_text("#!/bin/sh\necho 'not base64!'\n")
    (bin_dir / "pwsh").chmod(0o755)
    environ = {**env(tmp_path), "PATH": str(bin_dir)}
    assert hooks.rc_files("pwsh", environ, platform="linux") == [
        tmp_path / "home" / ".config" / "powershell" / PROFILE
    ]


def test_the_pwsh_block_quotes_a_path_with_an_apostrophe(tmp_path: Path):
    environ, nm = env(tmp_path), tmp_path / "o'neil"
    hooks.install("pwsh", nm, "/opt/py", environ)
    (rc,) = hooks.rc_files("pwsh", environ)
    script = str(nm / "hooks" / "nexusmem.ps1").replace("'", "''")
    assert f"if (Test-Path -LiteralPath '{script}') {{ . '{script}' }}" in rc.read_text()
