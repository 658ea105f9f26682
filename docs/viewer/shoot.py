"""The screenshots of docs/viewer.md, taken by the browser the viewer's tests use.

    .venv/bin/python docs/viewer/shoot.py [--keep DIR]

Clones cobra from ../shared/corpora, records what a day of work leaves (a failing test run and
its retry through the shell recorder; a Claude Code session, through the agent hook, that fails,
is told so before it tries again, and passes), syncs, serves ``nexusmem ui`` and photographs
each page into docs/viewer/*.png with the system's Chromium. Everything happens in a temporary
directory with its own NEXUSMEM_HOME; run it again after a page changes, so the pictures stay
true.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
NEXUSMEM = str(Path(sys.executable).with_name("nexusmem"))
RECORDER = ROOT / "nexusmem_core" / "collectors" / "shell" / "hook.py"
AGENT_HOOK = ROOT / "nexusmem_core" / "collectors" / "agent" / "hook.py"
CORPORA = next(
    p
    for p in (
        Path(os.environ.get("NEXUSMEM_CORPORA", "/nonexistent")),
        ROOT.parent / "shared" / "corpora",
        Path("/work/shared/corpora"),
    )
    if (p / "cobra.bundle").exists()
)
WIDTH, HEIGHT = 1280, 860


def run(*argv: str, env: dict[str, str], data: bytes | None = None) -> str:
    done = subprocess.run(argv, env=env, input=data, capture_output=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: {done.stderr.decode()}")
    return done.stdout.decode()


def shell(env: dict[str, str], repo: Path, command: str, code: int, start: float) -> None:
    run(
        sys.executable, "-S", "-P", str(RECORDER), "--home", env["NEXUSMEM_HOME"],
        "--shell", "zsh", "--exit", str(code), "--start", str(start),
        "--end", str(start + 41.3), "--cwd", str(repo), "--session", "z1",
        env=env, data=command.encode(),
    )  # fmt: skip


def agent(env: dict[str, str], repo: Path, event: dict[str, object]) -> None:
    payload = {
        "session_id": "demo-session",
        "transcript_path": "/dev/null",
        "cwd": str(repo),
        "permission_mode": "default",
        **event,
    }
    run(sys.executable, "-S", "-P", str(AGENT_HOOK), "claude", env=env,
        data=json.dumps(payload).encode())  # fmt: skip


def record_a_day(env: dict[str, str], repo: Path) -> None:
    now = time.time()
    shell(env, repo, "go test ./doc -run TestGenManDoc", 1, now - 3600)
    shell(env, repo, "go generate ./...", 0, now - 3300)
    shell(env, repo, "go test ./doc -run TestGenManDoc", 0, now - 3200)
    test = {"command": "go test ./... -count=1", "description": "Run the tests"}
    agent(env, repo, {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                      "tool_input": test, "tool_use_id": "t1",
                      "error": "Exit code 1\n--- FAIL: TestZshCompletion (0.00s)\n"
                               "    zsh_completions_test.go:41: unexpected output"})  # fmt: skip
    agent(env, repo, {"hook_event_name": "PostToolUse", "tool_name": "Edit",
                      "tool_input": {"file_path": str(repo / "zsh_completions.go")},
                      "tool_use_id": "t2", "tool_response": {"success": True}})  # fmt: skip
    agent(env, repo, {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                      "tool_input": test, "tool_use_id": "t3"})  # fmt: skip
    agent(env, repo, {"hook_event_name": "PostToolUse", "tool_name": "Bash",
                      "tool_input": test, "tool_use_id": "t3",
                      "tool_response": {"stdout": "ok  github.com/spf13/cobra 0.412s",
                                        "stderr": "", "interrupted": False}})  # fmt: skip


def serve(env: dict[str, str], repo: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [NEXUSMEM, "ui", "-C", str(repo), "--no-browser", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    for line in server.stdout:
        if "http://" in line:
            return server, line.split(": ", 1)[1].strip()
    raise SystemExit("nexusmem ui printed no address")


async def shoot(url: str, chromium: str) -> None:
    from playwright.async_api import async_playwright

    base = url.split("/?")[0]
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        await page.goto(url)
        slug = page.url.split("/p/")[1].split("/")[0]
        here = f"{base}/p/{slug}"

        async def snap(name: str) -> None:
            await page.screenshot(path=str(OUT / f"{name}.png"))
            print(f"docs/viewer/{name}.png", file=sys.stderr)

        await snap("timeline")
        await page.goto(f"{here}/timeline?outcome=failed")
        await snap("failures")
        await page.click("ol.timeline li.row.failed a.title")
        await page.wait_for_selector("h1.node-title")
        await snap("node")
        await page.goto(f"{here}/search?q=why+does+zsh+completion+need+a+no+space+directive")
        await page.locator("details.why").first.locator("summary").click()
        await page.locator("details.why").first.scroll_into_view_if_needed()
        await page.evaluate("window.scrollBy(0, -80)")
        await snap("why")
        await page.goto(f"{here}/review")
        await snap("review")
        await page.goto(f"{here}/agents")
        await snap("agents")
        await page.goto(f"{here}/status")
        await snap("status")
        await browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.viewer.browser import HOW, chromium

    found = chromium()
    if found is None:
        raise SystemExit(HOW)
    work = args.keep or Path(tempfile.mkdtemp(prefix="nexusmem-shots-"))
    repo = work / "cobra"
    env = {
        **os.environ,
        "NEXUSMEM_HOME": str(work / "home"),
        "NEXUSMEM_VECTOR": "off",
        "OLLAMA_HOST": "127.0.0.1:9",
        "CLAUDE_CONFIG_DIR": str(work / "claude"),
    }
    try:
        if not repo.exists():
            run("git", "clone", "-q", str(CORPORA / "cobra.bundle"), str(repo), env=env)
            run("git", "-C", str(repo), "remote", "set-url", "origin",
                "https://github.com/spf13/cobra.git", env=env)  # fmt: skip
            run(NEXUSMEM, "init", "-C", str(repo), env=env)
            run(NEXUSMEM, "sync", "-q", "-C", str(repo), env=env)  # the hooks need a memory
            record_a_day(env, repo)
            run(NEXUSMEM, "sync", "-q", "--link-failures", "-C", str(repo), env=env)
        server, url = serve(env, repo)
        try:
            asyncio.run(shoot(url, found))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=20)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
