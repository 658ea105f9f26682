"""Every way a secret reaches NexusMem, end to end: the labelled corpus goes in through the real
entry points, and the raw bytes left behind are searched for it.

Channels, each in a fresh :class:`~.workspace.Workspace` with many secrets batched into one
repository and one sync:

* ``commit``: a commit message, then ``nexusmem sync``;
* ``file``: a committed file's content (the diff's added lines), in code and in config files;
* ``doc``: a section of a committed Markdown document;
* ``filename``: a committed file *named* after the token (``assets/<probe>/ghp_....txt``), so
  the path reaches refs, titles and ``node_files``;
* ``shell``: the shell recorder started as the bash hook starts it (command on stdin);
* ``agent``: the Claude Code hook (``PreToolUse``, ``PostToolUse`` and ``PostToolUseFailure``
  of Bash), the secret in the command and in the failure's message;
* ``transcript``: a Claude Code transcript, read by ``sync --conversation``;

then, over all of them, ``query``: what ``nexusmem query --json`` prints, and ``scrub``: what is
left after ``nexusmem scrub-secrets --yes``. Each secret carries a probe word (``probe0042``)
next to it; a channel whose store lacks the probe never received the text, and that secret is
counted as not reached rather than as caught.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .corpus import Secret
from .leaks import (
    HEADER,
    Changed,
    ShaReport,
    Verdicts,
    changed_commands,
    judge,
    merge,
    row,
    wholes,
)
from .workspace import WORKERS, Workspace

__all__ = ["CHANNELS", "ChannelRun", "Negatives", "Results", "run_channels"]

_EXT = {"sh": "sh", "fish": "fish", "py": "py", "js": "js", "go": "go", "rb": "rb", "java": "java",
        "text": "txt"}  # fmt: skip
_CONFIG_PATH = {
    "yaml": "config/{p}.yaml", "toml": "config/{p}.toml", "ini": "config/{p}.ini",
    "json": "config/{p}.json", "env": "config/{p}.env", "npmrc": "{p}/.npmrc",
    "netrc": "{p}/.netrc", "properties": "config/{p}.properties", "xml": "{p}/NuGet.Config",
    "tf": "infra/{p}.tf",
}  # fmt: skip
_CLIENT = {
    "postgres": "psql '{v}' -c 'select 1'", "mongodb": "mongosh '{v}' --eval 'db.stats()'",
    "redis": "redis-cli -u '{v}' ping", "mysql": "mysqlsh '{v}' --sql -e 'select 1'",
    "rabbitmq": "celery -A shop worker --broker '{v}'",
    "sidekiq": "bundle config gems.contribsys.com '{v}'",
    "slack": """curl -X POST -H 'Content-type: application/json' -d '{"text":"ok"}' '{v}'""",
    "teams": """curl -H 'Content-Type: application/json' -d '{"text":"ok"}' '{v}'""",
}  # fmt: skip


def _identifier(name: str) -> str:
    """``name`` as a variable name: ``1password`` is ``op_1password``."""
    name = name.replace("-", "_")
    return f"op_{name}" if name[:1].isdigit() else name


def commands(s: Secret) -> list[str]:
    """What a person or an agent types with this secret in it, the probe as a trailing
    comment."""
    if s.klass == "keyword":
        return [f"{s.line}  # {s.probe}"]
    if s.kind == "pem":
        return [f"cat > deploy_key.pem <<'EOF'  # {s.probe}\n{s.value}\nEOF"]
    if s.kind == "url":
        return [_CLIENT[s.family].replace("{v}", s.value) + f"  # {s.probe}"]
    env = _identifier(s.family).upper()
    return [
        f"echo {s.value} | {s.family}-cli login --with-token  # {s.probe}",
        f"export {env}_API_KEY={s.value}  # {s.probe}",
    ]


# --- Feeding each channel ---------------------------------------------------------------------


def _commit_message(s: Secret) -> str:
    if s.klass == "keyword":
        return f"Update the setup notes ({s.probe})\n\n{s.line}\n"
    if s.kind == "pem":
        return f"Add the deploy key for {s.probe}\n\n{s.value}\n"
    if s.kind == "url":
        return f"Point the worker at the new cluster ({s.probe})\n\nIt now lives at {s.value}.\n"
    return [
        f"Fix the staging deploy ({s.probe})\n\nThe job failed because the {s.family} CLI was "
        f"given {s.value} from an old runbook; it reads the environment now.\n",
        f"Add a {s.family} smoke test ({s.probe})\n\nRun it with:\n\n"
        f"    echo {s.value} | {s.family}-cli login --with-token\n",
        f"Revert an accidental paste ({s.probe})\n\n{s.value}\n",
    ][s.id % 3]


def feed_commit(ws: Workspace, secrets: Sequence[Secret]) -> None:
    ws.commit_all((_commit_message(s), {}) for s in secrets)


def _files_for(s: Secret) -> dict[str, str]:
    p = s.probe
    if s.klass == "keyword":
        if s.kind == "config":
            text = (f'{{"{p}": {{{s.line}}}}}\n' if s.fmt == "json"
                    else f"<!-- {p} -->\n<configuration>\n  {s.line}\n</configuration>\n"
                    if s.fmt == "xml" else f"# {p}\n{s.line}\n")  # fmt: skip
            return {_CONFIG_PATH[s.fmt].format(p=p): text}
        mark = "//" if s.fmt in ("js", "go", "java") else "#"
        folder = {"shell": "scripts", "code": "src", "prose": "notes"}[s.kind]
        return {f"{folder}/{p}.{_EXT[s.fmt]}": f"{mark} {p}\n{s.line}\n"}
    if s.kind == "pem":
        indented = "\n".join("    " + line for line in s.value.splitlines())
        return {
            f"src/{p}.py": f'DEPLOY_KEY_{p.upper()} = """\n{s.value}\n"""\n',
            f"config/{p}.yaml": f"{s.family}:\n  {p}: |\n{indented}\n",
        }
    return {
        f"src/{p}.py": f'{_identifier(s.family)}_client = connect("{s.value}")  # {p}\n',
        f"config/{p}.yaml": f"{s.family}:\n  {p}: {s.value}\n",
    }


def feed_file(ws: Workspace, secrets: Sequence[Secret]) -> None:
    ws.commit_all((f"Add the {s.probe} settings", _files_for(s)) for s in secrets)


def _section(s: Secret) -> str:
    heading = f"## Setting up {s.family or s.provider} ({s.probe})\n\n"
    if s.klass == "keyword":
        if s.kind == "prose":
            return f"{heading}{s.line}\n"
        lang = s.fmt if s.kind != "shell" else "sh"
        return f"{heading}Use this:\n\n```{lang}\n{s.line}\n```\n"
    if s.kind == "pem":
        return f"{heading}The deploy key:\n\n```\n{s.value}\n```\n"
    if s.id % 2:
        return f"{heading}Paste the token from the dashboard, `{s.value}`, into the prompt.\n"
    return f"{heading}Log in first:\n\n```sh\n{commands(s)[0]}\n```\n"


def feed_doc(ws: Workspace, secrets: Sequence[Secret]) -> None:
    pages = [secrets[i : i + 10] for i in range(0, len(secrets), 10)]
    files = {
        f"docs/guide-{n:03d}.md": f"# Guide {n}\n\n" + "\n".join(_section(s) for s in page)
        for n, page in enumerate(pages)
    }
    ws.commit_all([("Write the setup guides", files)])


def named(s: Secret) -> bool:
    """Whether the token can be a file name: one line, no slash, within a name's length."""
    return s.klass == "prefixed" and s.kind == "token" and "/" not in s.value and len(s.value) < 240


def feed_filename(ws: Workspace, secrets: Sequence[Secret]) -> None:
    batches = [secrets[i : i + 20] for i in range(0, len(secrets), 20)]
    ws.commit_all(
        (f"Add fixtures, batch {n}", {f"assets/{s.probe}/{s.value}.txt": "fixture\n" for s in b})
        for n, b in enumerate(batches)
    )


def _sync(ws: Workspace, *flags: str) -> None:
    ws.nexusmem("sync", "--no-embed", *flags)


@dataclass
class Negatives:
    """Ordinary commands for the hook channels, and agent failures with ordinary messages."""

    commands: list[str]
    errors: list[str] = field(default_factory=list)


def feed_shell(ws: Workspace, secrets: Sequence[Secret], negatives: Negatives) -> None:
    items = [(f"{s.probe}-{n}", cmd) for s in secrets for n, cmd in enumerate(commands(s))]
    items += [(f"neg-{n}", cmd) for n, cmd in enumerate(negatives.commands)]
    ws.record_shell(items)


def _payload(ws: Workspace, event: str, command: str, use_id: str, **extra: object) -> dict:
    return {
        "session_id": f"sess-{use_id.split('-')[0]}",
        "transcript_path": str(ws.claude / "projects" / "x" / "sess.jsonl"),
        "cwd": str(ws.repo),
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run it"},
        "tool_use_id": use_id,
        **extra,
    }


_OK = {"tool_response": {"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False}}


def _failure_text(s: Secret) -> str:
    if s.klass == "keyword":
        return f"Exit code 1\n+ {s.line}\nerror: 401 Unauthorized ({s.probe})"
    return f"Exit code 1\n{s.family}-cli: authentication failed for {s.value} ({s.probe})"


def feed_agent(ws: Workspace, secrets: Sequence[Secret], negatives: Negatives) -> None:
    chains = []
    for s in secrets:
        chain = []
        for n, cmd in enumerate(commands(s)):
            if n == 0:  # before a repeat it only reads; once is enough to see what it prints
                chain.append(_payload(ws, "PreToolUse", cmd, f"{s.probe}-pre{n}"))
            chain.append(_payload(ws, "PostToolUse", cmd, f"{s.probe}-ok{n}", **_OK))
        failure = {"error": _failure_text(s), "is_interrupt": False}
        chain.append(
            _payload(
                ws, "PostToolUseFailure", f"x-cli whoami  # {s.probe}", f"{s.probe}-f", **failure
            )
        )
        chains.append(chain)
    for n, cmd in enumerate(negatives.commands):
        chains.append([_payload(ws, "PostToolUse", cmd, f"neg{n}-ok", **_OK)])
    for n, error in enumerate(negatives.errors):
        failure = {"error": error, "is_interrupt": False}
        chains.append([_payload(ws, "PostToolUseFailure", "make test", f"negerr{n}-f", **failure)])
    ws.agent_events(chains)


def _exchange(s: Secret) -> tuple[str, str]:
    if s.klass == "keyword":
        return f"Is this right? ({s.probe})\n\n{s.line}", "Yes, but keep it out of git."
    if s.kind == "pem":
        return f"Here is the key ({s.probe}):\n{s.value}", "Thanks; I wrote it to deploy_key.pem."
    question = f"Why does `{commands(s)[0]}` fail with 401?"
    return question, f"The value you passed, {s.value}, was revoked: issue a new one."


def feed_transcript(ws: Workspace, secrets: Sequence[Secret]) -> None:
    from nexusmem_core.collectors.conversation.claude import claude_slug

    folder = ws.claude / "projects" / claude_slug(str(ws.repo))
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(0, len(secrets), 50):
        session = f"5f0c2a9e-1b7d-4c3e-9a61-{n:012d}"
        lines = []
        for k, s in enumerate(secrets[n : n + 50]):
            question, answer = _exchange(s)
            lines += _turn(ws, session, n + k, question, answer)
        (folder / f"{session}.jsonl").write_text("".join(lines))


def _turn(ws: Workspace, session: str, n: int, question: str, answer: str) -> list[str]:
    base = {"isSidechain": False, "userType": "external", "cwd": str(ws.repo), "sessionId": session,
            "version": "2.0.14", "gitBranch": "main"}  # fmt: skip
    asked = datetime(2026, 1, 10, 9, tzinfo=UTC) + timedelta(minutes=n)
    minute = asked.strftime("%Y-%m-%dT%H:%M")
    ask, reply = (f"00000000-0000-4000-8000-{k:012d}" for k in (2 * n, 2 * n + 1))
    user = base | {"type": "user", "uuid": ask, "timestamp": f"{minute}:00.000Z",
                   "message": {"role": "user", "content": question}}  # fmt: skip
    message = {"id": f"msg_{n}", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5-20250929", "stop_reason": "end_turn",
               "content": [{"type": "text", "text": answer}]}  # fmt: skip
    bot = base | {"type": "assistant", "uuid": reply, "parentUuid": ask,
                  "timestamp": f"{minute}:05.000Z", "message": message}  # fmt: skip
    return [json.dumps(user) + "\n", json.dumps(bot) + "\n"]


# --- Running them ----------------------------------------------------------------------------


@dataclass
class ChannelRun:
    """What one channel left: its verdicts after the sync, what queries printed, after scrub."""

    name: str
    label: str
    repo: str
    stored: Verdicts
    query: Verdicts
    scrubbed: Verdicts
    backup_copies: int
    shell_log: list[dict] = field(default_factory=list)
    agent_log: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Channel:
    name: str
    label: str
    takes: Callable[[Secret], bool]
    feed: Callable[..., None]
    hooks: bool = False  # fed after init (a hook acts only where NexusMem has run), with the
    # ordinary commands beside the secrets
    flags: tuple[str, ...] = ()


def _all(s: Secret) -> bool:
    return True


def _typed(s: Secret) -> bool:
    return s.klass == "prefixed" or s.kind == "shell"


CHANNELS = [
    Channel("commit", "(a) commit message", _all, feed_commit),
    Channel("file", "(b) committed file content", _all, feed_file),
    Channel("doc", "(c) Markdown doc section", _all, feed_doc),
    Channel("filename", "(d) file named after the token", named, feed_filename),
    Channel("shell", "(e) shell recorder (stdin)", _typed, feed_shell, hooks=True),
    Channel("agent", "(f) Claude Code agent hook", _typed, feed_agent, hooks=True),
    Channel("transcript", "(g) transcript (sync --conversation)", _all, feed_transcript,
            flags=("--conversation",)),
]  # fmt: skip


def _queries(ws: Workspace, secrets: Sequence[Secret]) -> list[bytes]:
    """``nexusmem query --json`` for the secrets' probe words, 24 to a query (its term limit),
    with the largest budget: what a client of the CLI or MCP could be shown."""
    outputs = []
    for n in range(0, len(secrets), 24):
        words = " ".join(s.probe for s in secrets[n : n + 24])
        done = ws.nexusmem("query", words, "--json", "--budget", "200000", "--no-vector")
        outputs.append(done.stdout)
    return outputs


def run_channel(
    channel: Channel, secrets: Sequence[Secret], negatives: Negatives, tmp: Path
) -> ChannelRun:
    ws = Workspace(tmp / channel.name)
    mine = [s for s in secrets if channel.takes(s)]
    ws.commit_all([("Initial commit", {"README.md": "# Shop\n"})])
    if channel.hooks:
        ws.init(sources={"diff": {"maxCommits": 100_000}})
        channel.feed(ws, mine, negatives)
    else:
        channel.feed(ws, mine)
        ws.init(sources={"diff": {"maxCommits": 100_000}})
    _sync(ws, *channel.flags)
    stored = judge(mine, ws.stored())
    outputs = _queries(ws, [s for s in mine if stored[s.id] != "unreached"])
    query = judge(mine, b"\n".join(outputs), probes=b"\n".join(_results(o) for o in outputs))
    logs = _log(ws.home / "shell-history.jsonl"), _log(ws.home / "agent-events.jsonl")
    ws.nexusmem("scrub-secrets", "--yes")
    scrubbed = judge(mine, ws.stored())
    backup = ws.backups()
    copies = sum(1 for s in mine if any(w in backup for w in wholes(s.secret)))
    return ChannelRun(
        channel.name, channel.label, str(ws.repo), stored, query, scrubbed, copies, *logs
    )


def _results(output: bytes) -> bytes:
    """The results of a query's JSON without the query text itself, which names the probes."""
    answer = json.loads(output)
    return json.dumps(answer.get("results", []), ensure_ascii=False).lower().encode()


def _log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_channels(
    secrets: Sequence[Secret],
    negatives: Negatives,
    only: Sequence[str] | None = None,
    tmp: Path | None = None,
    progress: Callable[[str], None] = lambda text: None,
    jobs: int = WORKERS,
) -> list[ChannelRun]:
    """Every channel (or those named in ``only``), each in its own workspace under ``tmp``,
    ``jobs`` at a time: most of a channel's time is spent starting processes, one after
    another."""
    chosen = [c for c in CHANNELS if only is None or c.name in only]

    def one(channel: Channel, base: Path) -> ChannelRun:
        progress(channel.name)
        return run_channel(channel, secrets, negatives, base)

    with tempfile.TemporaryDirectory(prefix="nexusmem-secrets-") as scratch:
        base = tmp or Path(scratch)
        with ThreadPoolExecutor(jobs) as pool:
            return list(pool.map(one, chosen, [base] * len(chosen)))


@dataclass
class Results:
    """A whole run: the channels, what went in, and the sha check of the real corpora."""

    runs: list[ChannelRun]
    secrets: list[Secret]
    negatives: Negatives
    shas: ShaReport | None = None
    corpora: tuple[str, ...] = ()

    def changes(self, run: ChannelRun) -> list[Changed]:
        """The ordinary commands (and agent failure messages) a hook channel changed."""
        from nexusmem_core.collectors.agent.payload import error_excerpt, normalize

        originals = self.negatives.commands
        if run.name == "shell":
            return [changed_commands(run.shell_log, "session", "neg-", originals)]
        if run.name == "agent":
            normal = [normalize(c, run.repo).text for c in originals]
            return [
                changed_commands(run.agent_log, "tool_use_id", "neg", normal),
                changed_commands(run.agent_log, "tool_use_id", "negerr", self.negatives.errors,
                                 error_excerpt, "error"),
            ]  # fmt: skip
        return []

    def false_positives(self, run: ChannelRun) -> int:
        return sum(len(c.changed) for c in self.changes(run))

    def query(self) -> Verdicts:
        return merge(r.query for r in self.runs)

    def scrubbed(self) -> Verdicts:
        return merge(r.scrubbed for r in self.runs)

    def rows(self) -> list[str]:
        out = []
        for run in self.runs:
            fp = "—"
            if run.name in ("shell", "agent"):
                parts = [f"{len(c.changed)} of {c.total - c.missing}" for c in self.changes(run)]
                fp = " commands, ".join(parts) + (" errors" if len(parts) > 1 else "")
            out.append(row(run.label, run.stored, self.secrets, fp))
        if self.runs:
            out.append(row("(h) `query --json` output", self.query(), self.secrets))
            out.append(row("after `scrub-secrets --yes`", self.scrubbed(), self.secrets))
        if self.shas is not None:
            s = self.shas
            fp = (f"{len(s.lost)} of {s.shas} shas in {s.messages} messages redacted; "
                  f"{len(s.own_lost)} of {s.own} own shas")  # fmt: skip
            name = ", ".join(self.corpora)
            out.append(f"| commit messages of {name} (redact) | — | — | {fp} | — | — |")
        return out

    def markdown(self) -> str:
        return "\n".join([HEADER, *self.rows()])
