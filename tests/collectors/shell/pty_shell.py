"""Drive a real interactive shell under a pseudo-terminal, as a person at a prompt would."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import subprocess
import termios
import time
from pathlib import Path

PROMPT = "NXM-PROMPT>"


def _controlling_tty() -> None:
    """In the child: a session of its own, with the pty as its controlling terminal (job
    control in fish refuses to start without one)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def spawn(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen, int]:
    """Start ``argv`` on a new pty as its controlling terminal; return it and the master fd.

    Shared with bench/bench_shell.py, which times prompts on the same kind of terminal.
    """
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        argv,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        preexec_fn=_controlling_tty,
        close_fds=True,
    )
    os.close(slave)
    return proc, master


class PtyShell:
    """An interactive shell on a pty; ``run`` types a line and waits for the next prompt."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc, self.master = spawn(argv, env, cwd)
        self.output = ""
        self.wait_prompt()

    def read_until(self, marker: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while marker not in self.output:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {marker!r} after {timeout}s; got: {self.output[-400:]!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:
                    break
                self.output += chunk.decode("utf-8", "replace")
        head, _, self.output = self.output.partition(marker)
        return head

    def wait_prompt(self, timeout: float = 15.0) -> str:
        return self.read_until(PROMPT, timeout)

    def run(self, line: str, timeout: float = 15.0) -> str:
        """Type ``line`` and Enter; return what was printed before the next prompt."""
        os.write(self.master, (line + "\r").encode())
        return self.wait_prompt(timeout)

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        os.close(self.master)


def shell_env(home: Path, nexusmem_home: Path, shell: str) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "NEXUSMEM_HOME": str(nexusmem_home),
        "TERM": "dumb",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SHELL": f"/usr/bin/{shell}",
        "LANG": "C.UTF-8",
        "PS1": PROMPT,
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "HISTCONTROL": "ignorespace",
    }
    return env
