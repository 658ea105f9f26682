"""``nexusmem``: the command line. Parse arguments, call one core handler, print the result.

Results go to stdout, progress and errors to stderr. Every command goes through ``run()``, the
one bridge from sync to async, which maps the project's own errors to ``error: ...`` and exit 1.
Heavy modules are imported inside the commands that need them, so start-up stays cheap.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nexusmem_core.config import Settings
    from nexusmem_core.errors import WaysOut

__all__ = ["main"]


def run(command: Callable[..., Awaitable[int]], args: argparse.Namespace) -> int:
    """Build settings, run ``command`` under anyio, turn expected failures into one line."""
    import anyio

    from nexusmem_core.config import settings_from_env
    from nexusmem_core.errors import NexusMemError
    from nexusmem_core.logging import configure_logging

    try:
        settings = settings_from_env()
        configure_logging(settings.log_level)
        return anyio.run(command, settings, args)
    except NexusMemError as err:
        print(f"error: {_said(err)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def run_light(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """The bridge for the light commands (hook and agent set-up): no event loop, no settings
    object built up front, the same one-line errors as :func:`run`."""
    from nexusmem_core.errors import NexusMemError

    try:
        return command(args)
    except NexusMemError as err:
        print(f"error: {_said(err)}", file=sys.stderr)
        return 1


def _said(err: Exception) -> str:
    """One of the project's errors in the CLI's words: its flags, and its way out of a path that
    is not a repository or a repository with no memory (the core leaves those to each adapter)."""
    from nexusmem_core.errors import (
        NotAGitRepositoryError,
        NotInitialisedError,
        StoreError,
        UntrustedWorkspaceError,
        UsageError,
    )

    if isinstance(err, StoreError):
        return _cli_words().word(err.message)
    if isinstance(err, NotAGitRepositoryError):
        return f"{err}: run NexusMem in a repository or pass -C <path>"
    if isinstance(err, NotInitialisedError):
        return f"{err}: run `nexusmem init` (or `nexusmem sync` after it) in that repository"
    if isinstance(err, UntrustedWorkspaceError):
        return f"{err}; then run `nexusmem init` for memory of your own"
    if isinstance(err, UsageError) and err.argument:
        named = _BY_POSITION.get(err.argument) or f"--{err.argument.replace('_', '-')}"
        return f"{named}: {err.message}"
    return str(err)


# Arguments the CLI takes by position, not as a flag: an error names their command instead.
_BY_POSITION = {"new_id": "mark-stale"}


def _cli_words() -> WaysOut:
    """The ways out the core marks in its text (``nexusmem_core.errors.WaysOut``), in the
    CLI's commands and flags."""
    from nexusmem_core.errors import WaysOut

    return WaysOut(
        sync="run `nexusmem sync`",
        search="`nexusmem query`",
        confirm="add --yes",
        export="`nexusmem forget --export FILE`, then `--import FILE`",
    )


def _engine(settings: Settings, args: argparse.Namespace, **kwargs: Any) -> Any:
    from nexusmem_core.engine import open_engine

    return open_engine(settings, Path(args.C), **kwargs)


def _print_json(value: Any) -> None:
    from nexusmem_core.textguard import json_safe

    # The same data, with what a terminal would act on written as \u escapes.
    sys.stdout.write(json_safe(json.dumps(value, indent=2, ensure_ascii=False)) + "\n")


# -------------------------------------------------------------------------------- commands


async def cmd_init(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers

    workspace, created = await handlers.init_project(settings, Path(args.C), adopt=args.adopt)
    # The settings were validated before the home existed, so their snapshot was not kept
    # (config/snapshot.py): keep it now, or the first sync validates them again (pydantic's
    # imports, ~0.13 s of a first `nexusmem sync` in a new home).
    from nexusmem_core.config import settings_from_env

    settings_from_env()
    for path in created:
        print(f"created {path}")
    if args.adopt:
        print(f"adopted {workspace}: it is trusted as yours from now on")
    elif not created:
        print(f"already initialised: {workspace}")
    print(_next_steps(args.C))
    return 0


def _next_steps(path: str) -> str:
    """What to run after ``init``: the sync that reads the history, then a question."""
    import shlex

    here = "" if Path(path).resolve() == Path.cwd() else f" -C {shlex.quote(path)}"
    return (
        f"next: nexusmem sync{here}   (reads the history once; later syncs read what is new)\n"
        f'then: nexusmem query "why did we ..."{here}'
    )


class _Progress:
    """A one-line progress display on a terminal, shown only for syncs that take a moment."""

    def __init__(self, quiet: bool) -> None:
        self.live = not quiet and sys.stderr.isatty()
        self.started = time.monotonic()
        self.shown = False

    def __call__(self, stage: str, count: int) -> None:
        if self.live and time.monotonic() - self.started > 0.5:
            sys.stderr.write(f"\rsyncing {stage}: {count:,}      ")
            sys.stderr.flush()
            self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 40 + "\r")


def _sync_with_walker(args: argparse.Namespace) -> int:
    """``sync``, with the second process of a long first walk started before the imports
    (nexusmem_core/walker.py), and stopped at the end whether it was used or not."""
    from nexusmem_core import walker

    plain = args.prune_source or args.prune_unreachable
    args.walk_child = None if plain else walker.prestart(args.C, args.since, rebuild=args.rebuild)
    try:
        return run(cmd_sync, args)
    finally:
        walker.stop(args.walk_child)


async def cmd_sync(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers

    if args.prune_source:
        return await _prune_source(settings, args)
    if args.prune_unreachable:
        return await _prune_unreachable(settings, args)
    progress = _Progress(args.quiet)
    # As `sync_project` does over MCP: a repository whose memory is missing (never set up, or
    # its damaged database moved aside as the error about it says) gets it built. Not for the
    # post-commit hook's `--auto`, which must not set up memory nobody asked for.
    async with _engine(settings, args, create=not args.auto) as engine:
        report = await handlers.sync(
            engine,
            auto=args.auto,
            rebuild=args.rebuild,
            since=args.since,
            embed=not args.no_embed,
            embed_limit=args.embed_limit,
            link_failures=args.link_failures,
            conversation=args.conversation,
            github=args.github,
            progress=progress,
            walk_child=getattr(args, "walk_child", None),
        )
    progress.done()
    conversation = engine.config.sources.conversation.enabled  # in config, or --conversation
    if report.skipped and not args.json:  # another `sync --auto` is running
        if not args.quiet:
            print(report.skipped)
        return 0
    if args.json:
        _print_json(report.to_dict())
    elif not args.quiet:
        from nexusmem_core.sync_line import sync_text

        _coloured(sync_text(report, conversation))
    if report.flagged and not args.quiet and not args.json:
        print(f"flagged: {report.flagged} stale node(s) likely superseded: see `nexusmem stale`")
    if report.denied and not args.quiet and not args.json:
        print(f"denied: {report.denied} node(s) holding a forgotten value, not written")
        if report.deny_timeouts:
            print(
                f"  {report.deny_timeouts} of them only because a deny-list pattern ran past "
                "0.2 s on them (it backtracks): simplify it (`nexusmem forget --list` shows it)"
            )
    if report.unreachable_pruned and not args.quiet and not args.json:
        print(
            f"pruned: {report.unreachable_pruned} node(s) of commits no ref has reached for "
            f"{engine.config.sources.git.prune_unreachable_days} day(s) (after a rebase)"
        )
    if report.unreachable_waiting and not args.quiet and not args.json:
        from nexusmem_core.sync_line import waiting_text

        days = engine.config.sources.git.prune_unreachable_days
        print(f"rewritten: {waiting_text(report.unreachable_waiting, days)}")
    if conversation and not args.quiet and not args.json:
        print(
            f"conversation: {report.conversation_files} changed transcript(s) read, "
            f"{report.conversation_skipped} broken or unknown line(s) passed over"
        )
    if report.session_note != "off" and not args.quiet and not args.json:
        print(
            f"session summaries: {report.sessions} written, {report.sessions_queued} queued "
            "for the next sync"
        )
    if report.session_note.startswith("skipped") and not args.quiet:
        print(f"session summaries: {report.session_note}", file=sys.stderr)
    _github_lines(report, args)
    if report.vectors.startswith("skipped") and not args.quiet:
        # One line on why vectors were skipped or rebuilt; sync itself succeeded.
        print(f"vectors: {report.vectors}", file=sys.stderr)
    if report.contradictions.startswith("skipped") and not args.quiet:
        print(f"contradictions: {report.contradictions}", file=sys.stderr)
    for note in report.notes if not args.quiet else []:
        print(f"note: {note}", file=sys.stderr)
    return 0


_GREEN, _BOLD, _PLAIN = "\x1b[32m", "\x1b[1m", "\x1b[0m"


def _coloured(line: str) -> None:
    """The sync line; on a terminal its verb green and its counts bold, unless ``NO_COLOR`` is
    set (no-color.org) or stdout is a pipe or a file."""
    from nexusmem_core.textguard import terminal

    raw = getattr(sys.stdout, "_stream", sys.stdout)  # past the guard: it drops escapes
    if os.environ.get("NO_COLOR") or not raw.isatty():
        print(line)
        return
    verb, _, rest = terminal(line).partition(" ")  # stored text made safe before colour
    head, _, counts = rest.rpartition(": ")
    counts = re.sub(r"\d[\d,]*", lambda m: f"{_BOLD}{m.group()}{_PLAIN}", counts)
    raw.write(f"{_GREEN}{verb}{_PLAIN} {head}: {counts}\n")


def _github_lines(report: Any, args: argparse.Namespace) -> None:
    """When the GitHub source ran: the threads it wrote, and on stderr why it stopped early or
    did not run (gh missing, not logged in, offline, rate-limited, no github.com remote)."""
    note = report.github_note
    if note == "off" or args.quiet:
        return
    if not args.json and note.startswith(("ok", "skipped")):
        print(f"github: {report.github} issue and pull-request thread(s) written")
    if note != "ok":
        print(f"github: {note}", file=sys.stderr)


async def _prune_source(settings: Settings, args: argparse.Namespace) -> int:
    """``sync --prune-source NAME``: remove what one source wrote instead of syncing."""
    from nexusmem_core import handlers

    async with _engine(settings, args, read_only=not args.yes) as engine:
        report = await handlers.prune_source(engine, args.prune_source, apply=args.yes)
    _print_report(report, args.json)
    return 0


async def _prune_unreachable(settings: Settings, args: argparse.Namespace) -> int:
    """``sync --prune-unreachable``: remove the commits a rewrite left behind, instead of
    syncing."""
    from nexusmem_core import handlers

    async with _engine(settings, args, read_only=not args.yes) as engine:
        report = await handlers.prune_unreachable(engine, apply=args.yes)
    _print_report(report, args.json)
    return 0


async def cmd_query(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers

    text = " ".join(args.text)
    if args.why:
        return await _query_why(settings, args, text)
    if args.all_projects:
        response = await handlers.search_all(
            settings, text, args.budget, not args.no_vector, args.as_of, author=args.author
        )
    else:
        async with _engine(settings, args, read_only=True) as engine:
            response = await handlers.search(
                engine, text, args.budget, not args.no_vector, args.as_of, author=args.author
            )
    if args.json:
        _print_json(response.to_dict())
    else:
        from nexusmem_core.render import render_search

        sys.stdout.write(render_search(response))
    return 0


async def _query_why(settings: Settings, args: argparse.Namespace, text: str) -> int:
    """``query --why``: the same results, each with why it ranked where it did."""
    from nexusmem_core import handlers
    from nexusmem_core.errors import UsageError
    from nexusmem_core.retrieval.why import explained_text

    if args.all_projects:
        raise UsageError(
            "explains one repository's ranking: leave out --all-projects", argument="why"
        )
    async with _engine(settings, args, read_only=True) as engine:
        explained = await handlers.explain(
            engine, text, args.budget, not args.no_vector, args.as_of, author=args.author
        )
    if args.json:
        _print_json(explained.to_dict())
    else:
        sys.stdout.write(explained_text(explained))
    return 0


async def cmd_status(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers, render

    async with _engine(settings, args, read_only=True) as engine:
        status = await handlers.status(engine)
    if args.json:
        _print_json(status.to_dict())
    elif args.share:
        print(render.share_text(status))
    else:
        print(render.status_text(status))
    return 0


_REVIEWED = {"verified": "verified", "rejected": "rejected", "candidate": "cleared"}


async def cmd_review(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers

    trust = "verified" if args.verify else "rejected" if args.reject else "candidate"
    async with _engine(settings, args) as engine:
        result = await handlers.review(engine, args.node, trust, args.note)
    if args.json:
        _print_json(result.to_dict())
    else:
        same = "" if result.changed else " (it already was)"
        print(f"{_REVIEWED[result.trust]} {result.id[:12]} {result.title}{same}")
    return 0


async def cmd_stale(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers

    if args.dismiss:
        async with _engine(settings, args) as engine:
            dismissed = await handlers.dismiss_suggestion(engine, args.dismiss)
        if args.json:
            _print_json(dismissed.to_dict())
        else:
            print(f"dismissed {dismissed.dismissed} suggestion(s) under {dismissed.id[:12]}")
        return 0
    check = args.check_contradictions
    async with _engine(settings, args, read_only=not check) as engine:
        run = handlers.check_contradictions if check else handlers.stale
        report = await run(engine, args.min_age_days, args.limit)
    if args.json:
        _print_json(report.to_dict())
    else:
        for line in report.lines():
            print(line)
        more = ": --limit N shows N" if len(report.candidates) < report.total else ""
        print(f"{report.counted()}{more} (nothing was changed)", file=sys.stderr)
    if check and report.contradictions != "ok":
        print(f"contradictions: {report.contradictions}", file=sys.stderr)  # the one line
    elif check and not args.json:
        done = f"{report.judged} pair(s) judged, {report.cached} from the cache"
        print(f"contradictions: {done}", file=sys.stderr)
    return 0


async def cmd_mark_stale(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers

    async with _engine(settings, args) as engine:
        result = await handlers.mark_stale(engine, args.old, args.new)
    if args.json:
        _print_json(result.to_dict())
    else:
        same = "" if result.changed else " (already marked)"
        print(f"{result.old_id[:12]} {result.old_title}{same}")
        print(f"  superseded by {result.new_id[:12]} {result.new_title}")
    return 0


def _print_report(report: Any, as_json: bool) -> None:
    """A report's lines (or its JSON) on stdout, its warnings on stderr."""
    if as_json:
        _print_json(report.to_dict())
    else:
        words = _cli_words()
        for line in report.lines():
            print(words.word(line))
    _warn(report.warnings if hasattr(report, "warnings") else [])


FORGET_MAX_CHARS = 4096  # a value is matched within one line; a longer one is a mistake


def _value_to_forget(args: argparse.Namespace) -> str:
    """The value to forget: from the command line, from stdin with ``--stdin``, else asked for
    without echo on a terminal. The last two keep it out of the shell's history and out of
    ``/proc/<pid>/cmdline``; no error below repeats it."""
    from nexusmem_core.errors import UsageError

    if args.value is not None:
        return str(args.value)
    if args.stdin:
        # Past the bound by a line ending and one character: enough to tell a value over it.
        try:
            value = sys.stdin.read(FORGET_MAX_CHARS + 3)
        except UnicodeDecodeError:
            raise UsageError("forget --stdin: the input is not UTF-8 text") from None
        value = value[:-1] if value.endswith("\n") else value
        value = value[:-1] if value.endswith("\r") else value
        if len(value) > FORGET_MAX_CHARS:
            raise UsageError(
                f"forget --stdin: the value is longer than {FORGET_MAX_CHARS} characters; "
                "give the part of it that is secret"
            )
        return value
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass("value to forget (not shown): ")
    raise UsageError(
        "forget: no VALUE and no terminal to ask on: pipe the value in with "
        "`nexusmem forget --stdin`"
    )


async def cmd_forget(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers
    from nexusmem_core.errors import UsageError

    reading = bool(args.list or args.export)
    if args.value is not None and args.stdin:
        raise UsageError("forget: give the value on the command line or with --stdin, not both")
    if (args.value is not None or args.stdin) and (reading or args.import_file):
        raise UsageError("forget: give a value, or --list, --export or --import, not both")
    value = "" if reading or args.import_file else _value_to_forget(args)
    report: Any
    async with _engine(settings, args, read_only=reading or not args.yes) as engine:
        if args.list:
            _print_deny_list(await handlers.deny_list(engine), args.json)
            return 0
        if args.export:
            exported = await handlers.export_deny_list(engine, Path(args.export))
            print(f"exported {exported.entries} entr(ies) to {exported.path} (mode 0600)")
            _warn(exported.warnings)
            return 0
        if args.import_file:
            path = Path(args.import_file)
            report = await handlers.import_deny_list(engine, path, apply=args.yes)
        else:
            report = await handlers.forget(
                engine,
                value,
                regex=args.regex,
                ignore_case=args.ignore_case,
                reason=args.reason,
                apply=args.yes,
            )
    _print_report(report, args.json)
    return 0


def _print_deny_list(entries: list[dict[str, Any]], as_json: bool) -> None:
    from nexusmem_core.hygiene.forget import entry_line

    if as_json:
        _print_json(entries)
        return
    for entry in entries:
        print(entry_line(entry))
    if not entries:
        print("the deny list is empty")


async def cmd_precheck(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers

    report = await handlers.precheck(settings, Path(args.C), files=args.files, working=args.working)
    if args.json:
        _print_json(report.to_dict())
    else:
        for line in report.lines():
            print(line)
    if report.notice:
        print(report.notice, file=sys.stderr)
    return 1 if args.strict and report.warnings else 0


async def cmd_projects(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers

    report = await handlers.list_projects(settings, prune=args.prune, remove=args.remove)
    if args.json:
        _print_json({"projects": report.projects, "pruned": report.pruned, "kept": report.kept})
        return 0
    for row in report.projects:
        mark = f"  ({row['reason']})" if row["reason"] else ""
        print(f"{row['name']:<24} {row['last_sync'] or 'never synced':<22} {row['root']}{mark}")
    for root in report.pruned:
        print(f"pruned {root}")
    for line in report.kept:
        print(f"not pruned: {line}")
    if not args.prune and any(row["state"] in ("gone", "no-memory") for row in report.projects):
        print("`nexusmem projects --prune` forgets the entries whose repository was deleted")
    if not report.projects and not report.pruned:
        print("no projects yet: run `nexusmem init` and `nexusmem sync` in a repository")
    return 0


async def cmd_scrub_secrets(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers

    report = await handlers.scrub_secrets(
        settings, Path(args.C), all_projects=args.all_projects, apply=args.yes
    )
    if args.json:
        _print_json(report.to_dict())
    else:
        for line in report.lines():
            print(line)
    return 0


async def cmd_scan_structure(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers
    from nexusmem_core.engine import read_project

    # A dry run works before init and creates nothing.
    repo, config = await read_project(settings, Path(args.C))
    graph = await handlers.scan_structure(repo, config, args.limit)
    if args.json:
        _print_json(graph)
    else:
        for edge in graph["edges"]:
            print(f"{edge['src']} -> {edge['dst']} ({edge['lang']})")
    langs = ", ".join(f"{lang} {count}" for lang, count in graph["by_lang"].items())
    print(
        f"{graph['edge_count']} import edge(s){f' ({langs})' if langs else ''} among "
        f"{graph['files']} source file(s); {graph['too_large']} too large and "
        f"{graph['unparsed']} unparsable passed over (dry run: nothing was written)",
        file=sys.stderr,
    )
    return 0


def _scan(source: str) -> Callable[[Settings, argparse.Namespace], Awaitable[int]]:
    async def command(settings: Settings, args: argparse.Namespace) -> int:
        from nexusmem_core import handlers
        from nexusmem_core.engine import read_project

        # A dry run works before init and creates nothing.
        repo, config = await read_project(settings, Path(args.C))
        preview = await handlers.scan(settings, repo, config, source, args.limit)
        if args.json:
            _print_json(preview.nodes)
        else:
            for row in preview.nodes:
                print(f"{row['signal']:.2f}  {row['date']}  {row['kind']:<12} {row['title']}")
            print(f"{preview.counted()} (dry run: nothing was)", file=sys.stderr)
        return 0

    return command


async def cmd_scan_session(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers
    from nexusmem_core.collectors.session.scan import preview_footer, preview_lines

    limit = args.limit if args.limit is not None or args.dry_run else 1
    async with _engine(settings, args, read_only=True) as engine:
        scan = await handlers.scan_session(engine, limit, call_model=not args.dry_run)
    if args.json:
        _print_json(scan.to_dict())
    else:
        for line in preview_lines(scan):
            print(line)
    print(preview_footer(scan), file=sys.stderr)
    if scan.note:
        print(f"session summaries: {scan.note}", file=sys.stderr)
    return 0


async def cmd_scan_conversation(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers
    from nexusmem_core.engine import read_project

    # A dry run works before init and creates nothing.
    repo, config = await read_project(settings, Path(args.C))
    found = await handlers.scan_conversation(settings, repo, config, args.limit)
    if args.json:
        _print_json(found)
        return 0
    for row in found["nodes"]:
        secrets = f"  ({row['redacted']} secret(s) redacted)" if row["redacted"] else ""
        print(f"{row['signal']:.2f}  {row['date']}  {row['title']}{secrets}")
    for agent, n in found["agents"].items():
        print(
            f"{agent}: {n['files']} transcript(s), {n['turns']} turn(s), {n['commands']} "
            f"command(s) ({n['failed']} failed), {n['redacted']} secret(s) redacted, "
            f"{n['skipped']} passed over",
            file=sys.stderr,
        )
    print(
        f"{len(found['nodes'])} node(s) would be written from {found['files']} "
        f"transcript(s); {found['redacted']} secret(s) redacted, {found['skipped']} broken or "
        "unknown line(s) passed over (dry run: nothing was written)",
        file=sys.stderr,
    )
    return 0


async def cmd_scan_github(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core import handlers
    from nexusmem_core.engine import read_project

    # A dry run works before init and creates nothing.
    repo, config = await read_project(settings, Path(args.C))
    found = await handlers.scan_github(repo, config, args.limit)
    note = found["github"]
    if not note.startswith("ok") and not found["threads"]:
        print(f"error: {note.split(': ', 1)[-1]}", file=sys.stderr)
        return 1
    if args.json:
        _print_json(found)
    else:
        for row in found["threads"]:
            print(f"{row['signal']:.2f}  {row['date']}  {row['ref']:<8} {row['title']}")
        print(
            f"{len(found['threads'])} thread node(s) would be written; {found['redacted']} "
            "secret(s) redacted (dry run: nothing was written)",
            file=sys.stderr,
        )
    if note != "ok":
        print(f"github: {note}", file=sys.stderr)
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    """install / remove / status of the shell hook, or (``hook git|git-post ...``) of a git
    hook. Synchronous and light: no event loop."""
    from nexusmem_core.collectors.shell import hooks
    from nexusmem_core.config import settings_from_env

    if args.action in ("git", "git-post"):
        return _git_hook(args)
    if args.git_action:
        print(f"error: unexpected {args.git_action!r} after `hook {args.action}`", file=sys.stderr)
        return 2
    home = settings_from_env().home
    shell = args.shell or hooks.default_shell()
    if args.action == "install":
        result = hooks.install(shell, home)
        _warn(result.warnings)
        where = " and ".join(result.rc_files)
        if result.change == "unchanged":
            print(f"the {shell} hook is already installed in {where}")
        else:
            print(
                f"{result.change} the {shell} hook in {where}; open a new shell to start recording"
            )
    elif args.action == "remove":
        found = hooks.remove(shell, home)
        print(f"removed the {shell} hook" if found else f"no {shell} hook was installed")
    else:
        status = hooks.status(shell, home)
        if args.json:
            _print_json(status.__dict__)
            return 0
        print(f"{shell}: {status.state} ({', '.join(status.rc_files)})")
        print(f"last recorded: {_when(status.last_recorded)}")
        _warn(status.warnings)
    return 0


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts is not None else "never"


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def cmd_agent(args: argparse.Namespace) -> int:
    """install / remove / status of the coding agents' hooks. Synchronous and light: no event
    loop. Without --agent, every agent found on this machine."""
    from nexusmem_core.collectors.agent import install as agents
    from nexusmem_core.config import settings_from_env

    home, cwd = settings_from_env().home, Path(args.C)
    names = list(dict.fromkeys(args.agent)) if args.agent else agents.discover()
    if args.action == "status":
        _print_agent_status(agents.status(names, home, cwd), args.json)
    elif args.action == "install":
        results = agents.install_all(names, home, cwd, project=args.project)
        for result in results:
            _agent_flag(result, args.yes, args.json)
        if args.json:
            _print_json({"agents": [r.__dict__ for r in results]})
        for result in [] if args.json else results:
            _print_installed(result)
    else:
        gone = agents.remove_all(names, home, cwd, project=args.project)
        if args.json:
            _print_json({"agents": [r.__dict__ for r in gone]})
        for removed in [] if args.json else gone:
            if not removed.removed:
                print(f"{removed.label}: no NexusMem hooks were installed in {removed.path}")
                continue
            how = " and deleted it, as install had created it" if removed.deleted else ""
            print(
                f"{removed.label}: removed the NexusMem hooks from {removed.path}{how}; "
                f"{removed.restart}"
            )
    return 0


def _agent_flag(result: Any, yes: bool, quiet: bool) -> None:
    """A setting the agent needs for any hook to run: set with the user's yes (--yes, or a
    prompt on a terminal), else named with the way to set it."""
    from nexusmem_core.collectors.agent import install as agents

    flag = result.flag
    if flag is None:
        return
    ask = f"{result.label} runs no hooks without {flag.name} in {flag.path} ({flag.detail})"
    if not yes and not quiet and sys.stdin.isatty():
        print(f"{ask}. Set it? [y/N] ", end="", flush=True, file=sys.stderr)
        yes = sys.stdin.readline().strip().lower() in ("y", "yes")
    if yes:
        agents.enable_flag(flag)
        result.flag = None
        if not quiet:
            print(f"{result.label}: set {flag.name} in {flag.path}")
        return
    _warn(
        [
            f"{ask}: run `nexusmem agent install --agent {result.agent} --yes` to set it, "
            "or set it yourself"
        ]
    )


def _print_installed(result: Any) -> None:
    _warn(result.warnings)
    if not result.changed:
        print(f"{result.label}: the NexusMem hooks in {result.path} are up to date")
    else:
        print(
            f"{result.label}: wrote {', '.join(result.events)} hooks to {result.path}\n"
            f"  command: {result.command}\n  {result.restart}"
        )
    if result.git_excluded:
        print(
            f"added /{result.project} to {result.git_excluded}: git ignores it, "
            "as it holds this machine's paths"
        )


def _print_agent_status(status: Any, as_json: bool) -> None:
    if as_json:
        _print_json(status.to_dict())
        return
    for agent in status.agents:
        print(agent.label)
        for file in agent.files:
            missing = f" (missing {', '.join(file.missing)})" if file.state == "partial" else ""
            where = f": {file.path}" if file.path else " (-C <repository> to check one)"
            print(f"  {file.scope}: {file.state}{missing}{where}")
        if agent.flag is not None:
            state = "not set" if agent.flag.state == "default" else agent.flag.state
            why = f" ({agent.flag.detail})" if agent.flag.detail else ""
            print(f"  hooks setting: {state}{why}: {agent.flag.path}")
        print(f"  notes: {'reach the agent' if agent.context is None else agent.context}")
        print(f"  last event: {_when(agent.last_event)}")
        if agent.notice:
            print(f"  note: {agent.notice}")
    drops = ", ".join(f"{reason} {count}" for reason, count in status.drops.items())
    print(f"drops: {drops or 'none'}")
    for agent in status.agents:
        for file in agent.files:
            _warn(file.warnings)
        if agent.flag is not None and agent.flag.needed:
            _warn(
                [
                    f"{agent.label} runs no hooks without {agent.flag.name} in "
                    f"{agent.flag.path}: `nexusmem agent install --agent {agent.agent} --yes` "
                    "sets it"
                ]
            )


_GIT_HOOK_DONE = {
    "created": "installed",
    "added": "added at the top of the existing hook",
    "updated": "updated",
    "unchanged": "already installed",
}
_GIT_HOOK_DOES = {
    "pre-commit": "each commit runs `nexusmem precheck` (advisory: it warns, never blocks)",
    "post-commit": "each commit starts `nexusmem sync --auto` in the background",
}


def _git_hook(args: argparse.Namespace) -> int:
    """``hook git|git-post install|remove|status``: NexusMem's block in a git hook."""
    from nexusmem_core import githooks

    kind, repo = githooks.COMMANDS[args.action], Path(args.C)
    if args.git_action is None:
        print(f"error: `hook {args.action}` needs install, remove or status", file=sys.stderr)
        return 2
    if args.git_action == "install":
        change, path = githooks.install(repo, kind, force=args.force)
        print(f"{kind} hook {path}: {_GIT_HOOK_DONE[change]}; {_GIT_HOOK_DOES[kind]}")
    elif args.git_action == "remove":
        found, path = githooks.remove(repo, kind)
        print(f"{kind} hook {path}: {'removed' if found else 'NexusMem was not in it'}")
    else:
        status = githooks.status(repo, kind)
        if args.json:
            _print_json(status.__dict__)
            return 0
        print(f"{kind}: {status.state} ({status.path})")
        _warn(status.warnings)
    return 0


async def cmd_mcp(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_mcp.server import serve

    await serve(settings)
    return 0


async def cmd_ui(settings: Settings, args: argparse.Namespace) -> int:
    from nexusmem_core.viewer.server import serve

    def ready(url: str) -> None:
        print(f"NexusMem viewer: {url}", flush=True)
        print("(the address holds this launch's key; Ctrl-C stops the viewer)", flush=True)

    await serve(
        settings,
        Path(args.C),
        host=args.host,
        port=args.port,
        open_browser=not args.no_browser,
        ready=ready,
    )
    print("NexusMem viewer stopped", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nexusmem",
        description="Local memory for coding agents: what happened in this repository, "
        "ranked and packed into a token budget.",
    )
    # -C before the command, as git takes it, or after it; `_repository()` joins the two.
    parser.add_argument(
        "-C", dest="outer_C", metavar="PATH", help="run against the repository at PATH"
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="print NexusMem's version and exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    repo = argparse.ArgumentParser(add_help=False)
    repo.add_argument(
        "-C",
        metavar="PATH",
        default=argparse.SUPPRESS,  # a default here would hide a -C given before the command
        help="run against the repository at PATH (default: here)",
    )
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON for machines")

    _memory_commands(sub, repo, as_json)
    _trust_commands(sub, repo, as_json)
    _setup_commands(sub, repo, as_json)
    _scan_commands(sub, repo, as_json)
    return parser


def _memory_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    repo: argparse.ArgumentParser,
    as_json: argparse.ArgumentParser,
) -> None:
    """The everyday commands: set up, sync, ask, look."""
    p = sub.add_parser("init", parents=[repo], help="create .nexusmem/ in this repository")
    p.add_argument(
        "--adopt",
        action="store_true",
        help="take the .nexusmem/ here as yours though it holds no marker of this home's key "
        "(your own, after $NEXUSMEM_HOME was reset); never one a repository shipped",
    )
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("sync", parents=[repo, as_json], help="ingest what is new")
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="drop this project's nodes and ingest from scratch (atomically); conversation "
        "turns and GitHub threads are kept, and read again with --conversation / --github",
    )
    p.add_argument(
        "--auto",
        action="store_true",
        help="for git's post-commit hook: skip (exit 0) while another --auto sync runs",
    )
    p.add_argument(
        "--since",
        metavar="DATE",
        help="only commits since DATE (YYYY-MM-DD[THH:MM[:SS]], @UNIX_SECONDS or 'N days ago'); "
        "the next sync without it walks the older ones",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    p.add_argument("--no-embed", action="store_true", help="skip the embedding pass")
    p.add_argument("--embed-limit", type=int, metavar="N", help="embed at most N nodes")
    p.add_argument(
        "--link-failures",
        action="store_true",
        help="link each failed command to what fixed it (automatic after agent commands)",
    )
    p.add_argument(
        "--conversation",
        action="store_true",
        help="this run only: read assistant transcripts (sources.conversation.enabled)",
    )
    p.add_argument(
        "--github",
        action="store_true",
        help="this run only: read issues and pull requests through gh (sources.github.enabled)",
    )
    p.add_argument(
        "--prune-source",
        metavar="NAME",
        help="instead of syncing, remove every node one source wrote (git, diff, docs, "
        "shell:hook, shell:bash, ..., agent:claude); a dry run unless --yes",
    )
    p.add_argument(
        "--prune-unreachable",
        action="store_true",
        help="instead of syncing, remove the commits no ref reaches any more (after a rebase) "
        "and their diffs; a dry run unless --yes (syncs do it by themselves after "
        "sources.git.pruneUnreachableDays)",
    )
    p.add_argument(
        "--yes", action="store_true", help="with --prune-source or --prune-unreachable: remove"
    )
    p.set_defaults(func=cmd_sync)

    p = sub.add_parser("query", parents=[repo, as_json], help="ask the memory something")
    p.add_argument("text", nargs="+", help="what to look for, in plain words")
    p.add_argument(
        "--budget",
        type=int,
        metavar="TOKENS",
        help="token budget for the packed result (default from config: 2000)",
    )
    p.add_argument("--all-projects", action="store_true", help="search every registered repository")
    p.add_argument("--no-vector", action="store_true", help="BM25 only: no embedding call")
    p.add_argument(
        "--as-of",
        metavar="DATE",
        help="read memory as it was then: only what was recorded by DATE (YYYY-MM-DD[THH:MM])",
    )
    p.add_argument(
        "--author",
        metavar="WHO",
        help="only what WHO ran or wrote: you (at a prompt), claude-code, codex, gemini-cli, "
        "cursor or opencode",
    )
    p.add_argument(
        "--why",
        action="store_true",
        help="under each result, why it ranked where it did: its rank in each arm, the fused "
        "relevance, the priors and every stage that moved it",
    )
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("status", parents=[repo, as_json], help="what is remembered")
    p.add_argument(
        "--share",
        action="store_true",
        help="a plain summary to paste elsewhere (no paths, no content)",
    )
    p.set_defaults(func=cmd_status)


def _trust_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    repo: argparse.ArgumentParser,
    as_json: argparse.ArgumentParser,
) -> None:
    """Keeping memory true and clean: review, staleness, forget, precheck, scrub."""
    p = sub.add_parser("review", parents=[repo, as_json], help="record your judgement of one node")
    p.add_argument("node", metavar="NODE_ID", help="a node id, or a unique prefix of one")
    verdict = p.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--verify", action="store_true", help="label it [verified] (same rank)")
    verdict.add_argument(
        "--reject", action="store_true", help="label it [rejected] and rank it lower (never hidden)"
    )
    verdict.add_argument("--clear", action="store_true", help="back to unreviewed: no label")
    p.add_argument("--note", metavar="TEXT", help="why, kept in the audit trail")
    p.set_defaults(func=cmd_review)

    p = sub.add_parser(
        "stale",
        parents=[repo, as_json],
        help="old claims that nothing has confirmed since (writes nothing)",
    )
    p.add_argument(
        "--min-age-days", type=int, default=45, metavar="DAYS", help="older than DAYS (45)"
    )
    p.add_argument("--limit", type=int, default=20, metavar="N", help="at most N, oldest first")
    action = p.add_mutually_exclusive_group()
    action.add_argument(
        "--check-contradictions",
        action="store_true",
        help="ask a local chat model whether the most similar newer node supersedes each "
        "(every verdict is cached; nothing is marked stale)",
    )
    action.add_argument(
        "--dismiss", metavar="NODE_ID", help="silence the suggestions under one stale node"
    )
    p.set_defaults(func=cmd_stale)

    p = sub.add_parser(
        "mark-stale",
        parents=[repo, as_json],
        help="record that a newer node replaces an older one (ranked lower, kept)",
    )
    p.add_argument("old", metavar="OLD_ID", help="the node that no longer holds")
    p.add_argument(
        "--supersedes",
        dest="new",
        metavar="NEW_ID",
        required=True,
        help="the newer node that replaces it",
    )
    p.set_defaults(func=cmd_mark_stale)

    p = sub.add_parser(
        "forget",
        parents=[repo, as_json],
        help="delete every node holding a value and never ingest it again",
        description="Delete every node of this repository's memory whose title, body, paths "
        "or metadata hold VALUE (where it does not cut a word in two), with its vector and "
        "index entries, and add VALUE to the deny list so no sync ingests it again. A dry run "
        "unless --yes. Give it with --stdin, or leave it out to be asked for without echo: "
        "on the command line it goes into your shell history and, while forget runs, into "
        "the process list any local user can read.",
    )
    p.add_argument(
        "value",
        nargs="?",
        metavar="VALUE",
        help="the text to forget (better: --stdin, or leave it out to be asked)",
    )
    p.add_argument(
        "--stdin",
        action="store_true",
        help="read the value from standard input (one value; a trailing newline is dropped)",
    )
    p.add_argument("--regex", action="store_true", help="VALUE is a regular expression")
    p.add_argument("--ignore-case", action="store_true", help="match any letter case")
    p.add_argument("--reason", metavar="TEXT", help="why, shown by --list")
    p.add_argument("--yes", action="store_true", help="forget (default: dry run)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--list", action="store_true", help="show the deny list (literals masked)")
    mode.add_argument("--export", metavar="FILE", help="write the deny list to FILE (0600)")
    mode.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="add an exported deny list here and forget what it matches (dry run unless --yes)",
    )
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser(
        "precheck",
        parents=[repo, as_json],
        help="warn about files named by recent unresolved failures, or changing often",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--working", action="store_true", help="check every changed or untracked file"
    )
    which.add_argument("--files", nargs="+", metavar="PATH", help="check these files")
    p.add_argument("--strict", action="store_true", help="exit 1 when there is any warning")
    p.set_defaults(func=cmd_precheck)

    p = sub.add_parser(
        "scrub-secrets",
        parents=[repo, as_json],
        help="redact secrets already stored (nodes, hook logs) with the current table",
        description="Re-apply the current redaction table to the nodes of this repository's "
        "memory and to the shell and agent hook logs. A dry run unless --yes; with --yes each "
        "database is backed up to .nexusmem/backups/ (0600) first.",
    )
    p.add_argument(
        "--all-projects", action="store_true", help="every registered repository, not just this"
    )
    p.add_argument("--yes", action="store_true", help="scrub (default: dry run, nothing changes)")
    p.set_defaults(func=cmd_scrub_secrets)


def _setup_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    repo: argparse.ArgumentParser,
    as_json: argparse.ArgumentParser,
) -> None:
    """This machine: the projects registry, the hooks, the MCP server."""
    p = sub.add_parser("projects", parents=[as_json], help="registered repositories")
    p.add_argument(
        "--prune",
        action="store_true",
        help="forget entries whose repository or database was deleted (not an unmounted one)",
    )
    p.add_argument(
        "--remove", action="append", metavar="ROOT", help="forget this repository's entry"
    )
    p.set_defaults(func=cmd_projects)

    p = sub.add_parser(
        "hook",
        parents=[repo, as_json],
        help="record shell commands as you type them; precheck and sync from git's hooks",
        description="`hook install|remove|status [--shell SHELL]`: the shell hook. "
        "`hook git install|remove|status`: git's pre-commit runs `precheck`. "
        "`hook git-post install|remove|status`: git's post-commit starts `sync --auto`.",
    )
    p.add_argument(
        "action",
        metavar="ACTION",
        choices=("install", "remove", "status", "git", "git-post"),
        help="install, remove or status (the shell hook), or git / git-post",
    )
    p.add_argument(
        "git_action",
        nargs="?",
        metavar="GIT_ACTION",
        choices=("install", "remove", "status"),
        help="after git / git-post: install, remove or status",
    )
    p.add_argument(
        "--shell",
        choices=("bash", "zsh", "fish", "pwsh"),
        help="which shell (default: from $SHELL)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="git hooks: add NexusMem's block to a hook another tool wrote (keeping it)",
    )
    p.set_defaults(func=cmd_hook, sync=True)

    p = sub.add_parser(
        "agent",
        parents=[repo, as_json],
        help="record coding agents' work: hooks for Claude Code, Codex, Gemini, Cursor, opencode",
        description="Put NexusMem's hooks in each coding agent's own settings, take them out, or "
        "show them. Without --agent: every agent found on this machine (its configuration "
        "directory exists or its executable is on PATH), and Claude Code always.",
    )
    p.add_argument("action", choices=("install", "remove", "status"))
    p.add_argument(
        "--agent",
        action="append",
        choices=("claude", "codex", "gemini", "cursor", "opencode"),
        metavar="NAME",
        help="claude, codex, gemini, cursor or opencode (repeat for more; default: those found)",
    )
    p.add_argument(
        "--project",
        action="store_true",
        help="install/remove in the repository's own file (.claude/settings.local.json, "
        ".codex/hooks.json, ...), which install makes git ignore (default: the user's)",
    )
    p.add_argument(
        "--yes",
        action="store_true",
        help="install: also turn on a setting an agent needs for any hook to run (Codex's "
        "[features] codex_hooks), without asking",
    )
    p.set_defaults(func=cmd_agent, sync=True)

    p = sub.add_parser(
        "ui",
        parents=[repo],
        help="open the local web viewer: timeline, search with why, review, agents, status",
        description="Serve a web app on this machine (loopback only) for the registered "
        "projects, this repository first, and open it in the browser. The printed address "
        "carries a key made for this launch; without it every request is refused.",
    )
    p.add_argument(
        "--port", type=_port, default=None, help="port (default 7377 or the next free; 0: any)"
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="127.0.0.1 (and ::1), or ::1; nothing else is served"
    )
    p.add_argument("--no-browser", action="store_true", help="print the address only")
    p.set_defaults(func=cmd_ui, sync=False)

    p = sub.add_parser("mcp", help="serve MCP over stdio")
    p.set_defaults(func=cmd_mcp)


def _scan_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    repo: argparse.ArgumentParser,
    as_json: argparse.ArgumentParser,
) -> None:
    """Dry runs: what a sync would write for one source."""
    scans = (
        ("git", "commits"),
        ("diff", "file diffs"),
        ("docs", "doc sections"),
        ("shell", "shell commands"),
    )
    for source, what in scans:
        p = sub.add_parser(
            f"scan-{source}",
            parents=[repo, as_json],
            help=f"dry run: the {what} a sync would write",
        )
        p.add_argument("--limit", type=int, metavar="N", help="show at most N nodes")
        p.set_defaults(func=_scan(source))

    p = sub.add_parser(
        "scan-session",
        parents=[repo, as_json],
        help="the prompts session summaries come from (--dry-run), or what the model makes of one",
        description="For each settled session whose summary is missing or out of date, newest "
        "first: with --dry-run, the exact prompt a sync would send, without calling the model; "
        "without it, the chat model (sources.session.model) is asked about the first one "
        "(--limit N for more) and its title and summary are shown. Nothing is written.",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the prompts; do not call the model"
    )
    p.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="at most N sessions (default: every due one with --dry-run, else 1)",
    )
    p.set_defaults(func=cmd_scan_session)

    p = sub.add_parser(
        "scan-conversation",
        parents=[repo, as_json],
        help="dry run: the conversation turns and agent commands a sync would write, per agent",
        description="Read this repository's Claude Code transcripts and Codex CLI, Gemini CLI "
        "and opencode sessions as a sync with --conversation would, and show the turns and the "
        "shell commands (all but Claude Code's) it would write, the secrets redacted in each, "
        "and per agent the files read, failures found and lines passed over. Nothing is "
        "written.",
    )
    p.add_argument("--limit", type=int, metavar="N", help="show at most N nodes")
    p.set_defaults(func=cmd_scan_conversation)

    p = sub.add_parser(
        "scan-github",
        parents=[repo, as_json],
        help="dry run: the issue and pull-request threads a first sync would write, through gh",
        description="Read this repository's GitHub issues and pull requests through the gh CLI "
        "as a first sync with --github would (oldest change first, up to "
        "sources.github.maxThreads) and show the nodes it would write. Nothing is written; "
        "when gh cannot answer, says why.",
    )
    p.add_argument("--limit", type=int, metavar="N", help="read at most N threads")
    p.set_defaults(func=cmd_scan_github)

    p = sub.add_parser(
        "scan-structure",
        parents=[repo, as_json],
        help="dry run: the file-to-file import edges a sync would store",
        description="Read the Python, JavaScript/TypeScript, Go, Rust and Java files git lists "
        "and print which repository file each one imports, as `src -> dst (lang)`. Nothing is "
        "written, not even .nexusmem/.",
    )
    p.add_argument("--limit", type=int, metavar="N", help="show at most N edges")
    p.set_defaults(func=cmd_scan_structure)


class _Version(argparse.Action):
    """``--version``: read from the installed package only when asked (start-up stays cheap)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from importlib.metadata import version

        print(f"nexusmem {version('nexusmem')}")
        parser.exit()


def _commands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port: a number from 1 to 65535 (0: any free port)"
        )
    return int(text)


def _repository(args: argparse.Namespace) -> str | None:
    """The repository path of ``-C`` given before and after the command, into ``args.C``; as
    with git, a relative one after is taken from the one before. None when one is empty:
    argparse takes ``-C ""`` (an unset variable) as a path, and Path("") is the current
    directory, which would run the command on whatever repository the shell is in."""
    outer, inner = args.outer_C, getattr(args, "C", None)
    if outer == "" or inner == "":
        return None
    if outer and inner:
        return os.path.join(outer, inner)  # an absolute inner one wins, as in git
    return inner or outer or "."


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if args.command is None:  # bare `nexusmem`: what it can do, not an error
        parser.print_help()
        return 0
    if unknown:  # the usage of the command they belong to, not the top level's
        _commands(parser).choices[args.command].error(
            f"unrecognized arguments: {' '.join(unknown)}"
        )
    args.C = _repository(args)
    if args.C is None:
        print("error: -C: the path is empty; give the repository's path (or -C .)", file=sys.stderr)
        return 2
    if args.func is cmd_mcp:  # stdout belongs to the protocol
        return run(args.func, args)
    from nexusmem_core.textguard import TerminalStream

    # Stored text (a commit message, a command) reaches the terminal only through these: no
    # escape sequence or control character of it is printed, whichever command prints it.
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalStream(out), TerminalStream(err, keep_cr=True)
    try:
        if getattr(args, "sync", False):
            return run_light(args.func, args)
        if args.func is cmd_sync:
            return _sync_with_walker(args)
        return run(args.func, args)
    except BrokenPipeError:
        # `nexusmem status | head`: the reader left, which is not an error. Point stdout at
        # nothing so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command a closed pipe stopped
    finally:
        sys.stdout, sys.stderr = out, err


if __name__ == "__main__":
    sys.exit(main())
