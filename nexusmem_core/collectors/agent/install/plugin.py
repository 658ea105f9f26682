"""opencode's hooks: a plugin file of our own, ``nexusmem.js`` in its plugins directory.

opencode has no hooks file: it loads every JavaScript file in ``~/.config/opencode/plugins/``
(``$XDG_CONFIG_HOME/opencode/plugins/``) and a project's ``.opencode/plugins/`` at start-up. Ours
is a small module that, on ``tool.execute.before`` and ``tool.execute.after`` of the shell and
edit tools, runs the hook command with one JSON object on its stdin, under a timeout, and never
throws: a broken NexusMem must look like no NexusMem. A note the hook prints (before or after a
command) is appended to that tool call's output, the one text of a plugin opencode shows the
model; a new session (its ``session.created`` event) runs the hook too, for the background
sync it starts. The payload is the one ``adapters/opencode.py`` reads. The file is recognised
as ours by its first line; a file of that name without it is someone else's, and is neither
overwritten nor deleted.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from ....errors import ConfigError, FileAccessError
from ....files import read_text
from .common import (
    MARK,
    FileStatus,
    InstallResult,
    created_by_install,
    forget_created,
    missing_paths,
    note_created,
    reinstall,
    remove_created,
    settle,
    write_text,
)

__all__ = ["EVENTS", "FILE", "MARKER", "file_status", "install", "remove", "render"]

FILE = "nexusmem.js"
MARKER = "// NexusMem agent hooks: written by `nexusmem agent install`, deleted by `remove`."
EVENTS = ["tool.execute.before", "tool.execute.after", "session.created"]
TIMEOUT_MS = 5000
# The tools whose calls the hook reads: the shell, and the edits (path only).
TOOLS = ["bash", "edit", "write", "patch", "apply_patch", "multiedit"]

_BODY = """\
// Each call of a shell or edit tool runs NexusMem's hook with one JSON object on its stdin.
// A note it prints reaches the model appended to that call's output. Never throws.
import { spawn } from "node:child_process";

const COMMAND = __COMMAND__;
const TIMEOUT_MS = __TIMEOUT__;
const TOOLS = new Set(__TOOLS__);
const pending = new Map(); // callID -> {args, note}, from before to after

function run(payload) {
  return new Promise((resolve) => {
    let out = "";
    let done = false;
    let timer;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(out);
    };
    let child;
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      return finish();
    }
    timer = setTimeout(() => {
      try { child.kill(); } catch {}
      finish();
    }, TIMEOUT_MS);
    child.on("error", finish);
    child.on("close", finish);
    child.stdout.on("data", (chunk) => { if (out.length < 65536) out += chunk; });
    child.stdin.on("error", () => {});
    try { child.stdin.end(JSON.stringify(payload)); } catch { finish(); }
  });
}

function noteOf(text) {
  text = (text || "").trim();
  if (!text) return "";
  try {
    const answer = JSON.parse(text);
    const note = answer.note ?? answer.hookSpecificOutput?.additionalContext;
    return typeof note === "string" ? note : "";
  } catch {
    return text;
  }
}

export const NexusMem = async ({ directory }) => {
  const payload = (event, input, extra) => ({
    hook_event_name: event,
    session_id: input?.sessionID,
    call_id: input?.callID,
    tool: input?.tool,
    cwd: directory,
    ...extra,
  });
  return {
    event: async ({ event }) => {
      try {
        if (event?.type !== "session.created") return;
        const id = event.properties?.info?.id ?? event.properties?.sessionID;
        await run(payload("session.created", { sessionID: id }, {}));
      } catch {}
    },
    "tool.execute.before": async (input, output) => {
      try {
        if (!TOOLS.has(input?.tool)) return;
        const event = payload("tool.execute.before", input, { args: output?.args });
        const note = noteOf(await run(event));
        if (pending.size > 1000) pending.clear();
        pending.set(input.callID, { args: output?.args, note });
      } catch {}
    },
    "tool.execute.after": async (input, output) => {
      try {
        if (!TOOLS.has(input?.tool)) return;
        const before = pending.get(input.callID) || {};
        pending.delete(input.callID);
        const args = before.args ?? input?.args;  // a before that was missed: the after's own
        const extra = { args, output: output?.output, metadata: output?.metadata };
        const note = noteOf(await run(payload("tool.execute.after", input, extra))) || before.note;
        if (note && output && typeof output.output === "string") {
          output.output += "\\n\\n" + note;
        }
      } catch {}
    },
  };
};
"""


def render(command: list[str]) -> str:
    """The plugin file for ``command`` (the hook's argv, run without a shell)."""
    body = (
        _BODY.replace("__COMMAND__", json.dumps(command))
        .replace("__TIMEOUT__", str(TIMEOUT_MS))
        .replace("__TOOLS__", json.dumps(TOOLS))
    )
    return f"{MARKER}\n{body}"


def argv(command: str) -> list[str]:
    """The hook command as the words the plugin spawns, with no shell between."""
    return shlex.split(command, posix=sys.platform != "win32")


def _read(path: Path) -> str | None:
    """The file's text if it is ours, None if there is none; someone else's is refused."""
    text = read_text(path)
    if text is not None and not text.startswith(MARKER + "\n"):
        raise ConfigError(
            f"{path}: this file was not written by NexusMem (its first line is not NexusMem's "
            "marker); move it aside and run the command again, NexusMem will not touch it"
        )
    return text


def install(path: Path, command: str, home: Path) -> InstallResult:
    """Write our plugin file at ``path`` (replacing an older one of ours); idempotent."""
    path = path.resolve()
    text = _read(path)
    wanted = render(argv(command))
    if text is None:
        note_created(home, path)
    if text != wanted:
        write_text(path, wanted)
    return InstallResult(str(path), text != wanted, command, list(EVENTS), [])


def remove(path: Path, home: Path) -> bool:
    """Delete our plugin file, and the directories install made for it if they are empty."""
    path = path.resolve()
    if _read(path) is None:
        forget_created(home, path)
        return False
    if not created_by_install(home, path):
        note_created(home, path)  # the directory was there: only the file goes
    remove_created(home, path)
    forget_created(home, path)
    return True


def file_status(scope: str, path: Path, command: str, flags: str) -> FileStatus:
    """Whether ``path`` is our plugin as this NexusMem writes it, and can still run."""
    try:
        text = _read(path.resolve())
    except (ConfigError, FileAccessError) as err:
        return FileStatus(scope, str(path), "unreadable", warnings=[str(err)])
    if text is None:
        return FileStatus(scope, str(path), "not installed", missing=list(EVENTS))
    result = FileStatus(scope, str(path), "installed", events=list(EVENTS))
    if text != render(argv(command)):
        result.state = "outdated"
    for line in text.splitlines():
        if line.startswith("const COMMAND = "):
            try:
                words = json.loads(line.removeprefix("const COMMAND = ").rstrip(";"))
            except ValueError:
                continue
            if isinstance(words, list) and any(MARK in str(w) for w in words):
                result.warnings += missing_paths([str(w) for w in words], reinstall(flags))
    return settle(result, flags)
