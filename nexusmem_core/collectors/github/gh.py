"""Running the ``gh`` CLI: one bounded call, its JSON, or one line saying why not.

Every way ``gh`` can fail here (not installed, not logged in, no network, a rate limit, an
answer that is not JSON, no answer in time) becomes a :class:`GhUnavailable` whose message is
the one line the sync report carries. Nothing in this module raises anything else.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio

from ...redact import redact

__all__ = ["GhUnavailable", "github_repo", "run_gh"]

# No pager, no colours, no prompt, no "a new release is available" banner: gh runs without a
# terminal here and must answer with JSON on stdout or fail at once.
_ENV = {
    "GH_PAGER": "",
    "GH_PROMPT_DISABLED": "1",
    "NO_COLOR": "1",
    "CLICOLOR": "0",
    "GH_NO_UPDATE_NOTIFIER": "1",
    "GH_SPINNER_DISABLED": "1",
}
# gh's own wording for these failures (stderr, or the API's message in the body).
_NETWORK = (
    "error connecting to",
    "dial tcp",
    "no such host",
    "connection refused",
    "connection reset",
    "i/o timeout",
    "tls handshake",
    "network is unreachable",
    "could not resolve",
)


class GhUnavailable(Exception):
    """gh could not give an answer; ``str(err)`` is the report's one line."""


def github_repo(origin: str | None) -> tuple[str, str] | None:
    """``(owner, name)`` when ``origin`` is a repository on github.com, else None."""
    from ..git import normalize_origin

    if not origin:
        return None
    host, _, path = normalize_origin(origin).partition("/")
    parts = path.split("/")
    if host not in ("github.com", "www.github.com") or len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]


async def run_gh(args: list[str], cwd: Path, timeout: float, *, bound: float | None = None) -> Any:
    """``gh api --hostname github.com <args>`` parsed as JSON. A GraphQL answer that carries
    both data and errors (one thread gone, say) is returned: the caller skips what is
    missing. ``bound`` is the time limit named when ``timeout`` (what is left of it) runs
    out."""
    exe = shutil.which("gh")
    if exe is None:
        raise GhUnavailable("off: gh is not installed (https://cli.github.com)")
    env = {**os.environ, **_ENV}
    try:
        with anyio.move_on_after(timeout) as scope:
            done = await anyio.run_process(
                [exe, "api", "--hostname", "github.com", *args], cwd=cwd, env=env, check=False
            )
    except OSError as failed:  # on PATH, not runnable: a broken install, a bad interpreter line
        raise GhUnavailable(f"off: gh cannot be started ({failed.strerror or failed})") from failed
    if scope.cancelled_caught:
        raise GhUnavailable(f"skipped: gh did not answer within {bound or timeout:g}s")
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    try:
        data = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        data = None
    if done.returncode == 0 and data is None:
        endpoint = args[0].split("?", 1)[0] if args else ""
        raise GhUnavailable(f"skipped: gh api {endpoint} answered with something not JSON")
    if done.returncode != 0 and not (isinstance(data, dict) and data.get("data")):
        raise GhUnavailable(_why(done.returncode, err, data))
    return data


def _why(code: int, stderr: str, body: Any) -> str:
    """The one line for a failed call, from gh's exit code, its stderr and the API's answer."""
    message = body.get("message") if isinstance(body, dict) else None
    errors = body.get("errors") if isinstance(body, dict) else None
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        message = message or errors[0].get("message")
    text = f"{stderr}\n{message or ''}"
    lowered = text.lower()
    if code == 4 or "gh auth login" in lowered:
        return "off: gh is not logged in: run `gh auth login`"
    if "http 401" in lowered or "bad credentials" in lowered:
        return "off: GitHub refused gh's login (HTTP 401): run `gh auth login`"
    if "rate limit" in lowered or "http 429" in lowered:
        return "skipped: GitHub's rate limit is reached; a later sync reads on from here"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = redact(first.removeprefix("gh: "))[:200]
    if any(marker in lowered for marker in _NETWORK):
        return f"skipped: GitHub cannot be reached ({first})"
    return f"skipped: gh failed (exit {code}): {first or 'no message'}"
