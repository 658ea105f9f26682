"""The hook scripts, one per shell, as ``nexusmem hook install`` writes them.

Each one: captures the exit status first, before anything can change it; hands the command to
the recorder in the background (text on stdin, never in argv); never prints; leaves ``$?`` as
it found it; and does nothing at all if the recorder's interpreter is gone. ``{python}`` is
the absolute path of the interpreter NexusMem is installed in, so the hook works outside its
virtual environment; ``{recorder}`` the file it runs, ``-S -P``, without site-packages
(hook.py). The version line lets ``hook status`` tell an outdated script.
"""

from __future__ import annotations

import os

__all__ = ["SCRIPTS", "VERSION", "render"]

# 2: fish reads the clock when a command starts; PowerShell 5.1 runs it too. 3: the recorder
# runs without site-packages (``-S -P`` on hook.py: 10 ms less of a core per command). 4: the
# directory is the one the command started in (`cd elsewhere && make` ran here, not there).
VERSION = 4
RECORDER = os.path.join(os.path.dirname(os.path.realpath(__file__)), "hook.py")

BASH = r"""# NexusMem shell hook for bash, version {version}. Written by `nexusmem hook install`;
# `nexusmem hook remove` takes it out again. Records each command's text (redacted), working
# directory, exit code and duration into $NEXUSMEM_HOME/shell-history.jsonl, in the background.
[[ $- == *i* ]] || return 0
[[ -n "${{__nexusmem_loaded:-}}" ]] && return 0
__nexusmem_loaded=1
__nexusmem_py='{python}'
__nexusmem_session="$$-$RANDOM$RANDOM"
__nexusmem_armed=
__nexusmem_start=
__nexusmem_cmd=
__nexusmem_cwd=
__nexusmem_histno=
__nexusmem_ready=

# The recorder runs niced: its start-up must not compete with the prompt for the CPU.
__nexusmem_send() {{  # $1 exit code, $2 start, $3 end, $4 directory; the text is on stdin
    [[ -x "$__nexusmem_py" ]] || return 0
    (nice -n 10 "$__nexusmem_py" -S -P '{recorder}' --home '{home}' --shell bash --exit "$1" \
        --start "$2" --end "$3" --cwd "$4" --session "$__nexusmem_session" >/dev/null 2>&1 <&0 &) \
        2>/dev/null
}}

__nexusmem_preexec() {{
    [[ -n "$__nexusmem_armed" && "$BASH_COMMAND" != __nexusmem_* ]] || return 0
    __nexusmem_armed=
    [[ -n "${{COMP_LINE:-}}" ]] && return 0
    local line
    line=$(HISTTIMEFORMAT= builtin history 1)
    # `history 1` prints the number, '*' or ' ', a space, then the line (all of a multi-line one).
    [[ $line =~ ^[[:space:]]*([0-9]+)[*\ ]\ (.*)$ ]] || return 0
    if [[ ${{BASH_REMATCH[1]}} == "$__nexusmem_histno" ]]; then
        # The line did not enter history: typed with a leading space (HISTCONTROL=ignorespace,
        # not to be recorded), or an immediate repeat (ignoredups), whose text is the same.
        [[ ${{BASH_REMATCH[2]}} == *"$BASH_COMMAND"* ]] || return 0
    fi
    __nexusmem_histno=${{BASH_REMATCH[1]}}
    __nexusmem_cmd=${{BASH_REMATCH[2]}}
    __nexusmem_cwd=$PWD  # where it starts: `cd elsewhere && make` ran here
    __nexusmem_start=${{EPOCHREALTIME:-$SECONDS}}
}}

__nexusmem_precmd() {{
    local code=$?
    if [[ -n "$__nexusmem_start" ]]; then
        builtin printf '%s' "$__nexusmem_cmd" \
            | __nexusmem_send "$code" "$__nexusmem_start" "${{EPOCHREALTIME:-$SECONDS}}" \
                "$__nexusmem_cwd"
        __nexusmem_start=
    elif [[ -n "$__nexusmem_armed" || -z "$__nexusmem_ready" ]]; then
        # No DEBUG trap fired since the last prompt: nothing ran, or only a subshell did,
        # like `(make)` (the trap is not inherited there). History tells which. The first
        # prompt only learns where history stands. A subshell cannot move this shell: $PWD
        # is where it started.
        local line
        line=$(HISTTIMEFORMAT= builtin history 1)
        if [[ $line =~ ^[[:space:]]*([0-9]+)[*\ ]\ (.*)$ ]]; then
            if [[ -n "$__nexusmem_ready" && ${{BASH_REMATCH[1]}} != "$__nexusmem_histno" ]]; then
                builtin printf '%s' "${{BASH_REMATCH[2]}}" \
                    | __nexusmem_send "$code" "" "${{EPOCHREALTIME:-$SECONDS}}" "$PWD"
            fi
            __nexusmem_histno=${{BASH_REMATCH[1]}}
        fi
    fi
    __nexusmem_ready=1
    return $code
}}

__nexusmem_arm() {{ __nexusmem_armed=1; }}

if [[ -n "${{bash_preexec_imported:-}}${{__bp_imported:-}}" ]]; then
    # bash-preexec owns the DEBUG trap and PROMPT_COMMAND: join its hook arrays instead.
    __nexusmem_bp_preexec() {{
        __nexusmem_cmd=$1 __nexusmem_cwd=$PWD __nexusmem_start=${{EPOCHREALTIME:-$SECONDS}}
    }}
    preexec_functions+=(__nexusmem_bp_preexec)
    precmd_functions=(__nexusmem_precmd "${{precmd_functions[@]}}")
elif [[ -n "$(trap -p DEBUG)" ]]; then
    # Another tool owns the DEBUG trap: without it there is no reliable start of a command.
    # Say so where `nexusmem hook status` looks, and record nothing rather than guess.
    builtin printf 'debug-trap-owned\n' 2>/dev/null >| '{home}/hooks/bash.state'
else
    trap '__nexusmem_preexec' DEBUG
    if [[ "$(declare -p PROMPT_COMMAND 2>/dev/null)" == "declare -a"* ]]; then
        PROMPT_COMMAND=(__nexusmem_precmd "${{PROMPT_COMMAND[@]}}" __nexusmem_arm)
    else
        PROMPT_COMMAND="__nexusmem_precmd${{PROMPT_COMMAND:+;$PROMPT_COMMAND}};__nexusmem_arm"
    fi
fi
"""

ZSH = r"""# NexusMem shell hook for zsh, version {version}. Written by `nexusmem hook install`;
# `nexusmem hook remove` takes it out again. Records each command's text (redacted), working
# directory, exit code and duration into $NEXUSMEM_HOME/shell-history.jsonl, in the background.
[[ -o interactive ]] || return 0
(( ${{+__nexusmem_loaded}} )) && return 0
typeset -g __nexusmem_loaded=1
zmodload zsh/datetime 2>/dev/null
typeset -g __nexusmem_py='{python}'
typeset -g __nexusmem_session="$$-$RANDOM$RANDOM"
typeset -g __nexusmem_cmd= __nexusmem_start= __nexusmem_cwd=

__nexusmem_preexec() {{
    __nexusmem_cmd=$1  # the line as typed, all of it, with a leading space if it had one
    __nexusmem_cwd=$PWD  # where it starts: `cd elsewhere && make` ran here
    __nexusmem_start=${{EPOCHREALTIME:-$EPOCHSECONDS}}
}}

__nexusmem_precmd() {{
    local code=$?
    if [[ -n $__nexusmem_start && -x $__nexusmem_py ]]; then
        print -rn -- "$__nexusmem_cmd" | (nice -n 10 "$__nexusmem_py" -S -P '{recorder}' --home '{home}' \
            --shell zsh --exit $code --start $__nexusmem_start --end ${{EPOCHREALTIME:-$EPOCHSECONDS}} \
            --cwd "$__nexusmem_cwd" --session $__nexusmem_session &>/dev/null <&0 &!) 2>/dev/null
    fi
    __nexusmem_start=
    return $code
}}

autoload -Uz add-zsh-hook
add-zsh-hook preexec __nexusmem_preexec
# First among the precmd hooks, so $? is still the command's own.
precmd_functions=(__nexusmem_precmd ${{precmd_functions:#__nexusmem_precmd}})
"""

FISH = r"""# NexusMem shell hook for fish, version {version}. Written by `nexusmem hook install`;
# `nexusmem hook remove` deletes this file. Records each command's text (redacted), working
# directory, exit status, start and duration into $NEXUSMEM_HOME/shell-history.jsonl, in the
# background.
status is-interactive; or exit 0
set -q __nexusmem_loaded; and exit 0
set -g __nexusmem_loaded 1
set -g __nexusmem_py '{python}'
set -g __nexusmem_session $fish_pid-(random)(random)
set -g __nexusmem_start
set -g __nexusmem_cwd

# fish has no clock of its own and gives only a duration afterwards: without a start read
# here, the recorder (its start-up later) would put every command 0.3 s late, or after the
# next one. A BSD date prints no %N: the recorder then falls back to its own clock.
function __nexusmem_preexec --on-event fish_preexec
    set -g __nexusmem_cwd $PWD  # where it starts: `cd elsewhere; and make` ran here
    set -g __nexusmem_start (command date +%s.%N 2>/dev/null)
end

function __nexusmem_postexec --on-event fish_postexec
    set -l code $status  # first, before anything can change it
    set -l start "$__nexusmem_start"
    set -l cwd "$__nexusmem_cwd"
    set -g __nexusmem_start
    test -n "$cwd"; or set cwd $PWD
    test -x $__nexusmem_py; or return 0
    string length -q -- $argv[1]; or return 0
    # sh starts the recorder in the background and exits at once: no fish job, no job notice.
    # POSIX gives a background command /dev/null as stdin unless it is redirected explicitly,
    # and `<&0` would copy that /dev/null: the pipe is kept on fd 3 first. `nice`: the
    # recorder's start-up must not compete with fish redrawing the prompt (measured: +8 ms
    # at p50 on a busy 2-core machine without it, +3 ms with it).
    printf '%s' $argv[1] | /bin/sh -c 'exec 3<&0; nice -n 10 "$0" -S -P "$@" >/dev/null 2>&1 <&3 3<&- &' \
        $__nexusmem_py '{recorder}' --home '{home}' --shell fish --exit $code --start "$start" \
        --duration (math "$CMD_DURATION / 1000") --cwd $cwd --session $__nexusmem_session 2>/dev/null
end
"""

PWSH = r"""# NexusMem shell hook for PowerShell 7 and Windows PowerShell 5.1, version {version}.
# Written by `nexusmem hook install`; `nexusmem hook remove` takes it out again. Wraps the
# existing prompt function and records each command's text (redacted), the directory it started
# in, exit code and duration into $env:NEXUSMEM_HOME/shell-history.jsonl, in the background. Only what .NET
# Framework has too: no ProcessStartInfo.ArgumentList, no StandardInputEncoding.
if (-not $global:__NexusMemLoaded) {{
    $global:__NexusMemLoaded = $true
    $global:__NexusMemPy = '{python}'
    $global:__NexusMemSession = "$PID-$(Get-Random)"
    $global:__NexusMemLastId = -1
    $global:__NexusMemPrompt = $function:prompt
    # History keeps no directory: each prompt notes where the command typed at it starts.
    $global:__NexusMemCwd = "$PWD"
    # One argument as the C runtime splits a command line (and .NET does on Linux and macOS):
    # in quotes, backslashes doubled where a quote follows them, the quote itself escaped.
    function global:__NexusMemQuote([string]$s) {{
        '"' + (($s -replace '(\\*)"', '$1$1\"') -replace '(\\+)$', '$1$1') + '"'
    }}
    function global:prompt {{
        $ok = $?  # first, before anything can change it
        $code = $global:LASTEXITCODE
        try {{
            $h = Get-History -Count 1
            if ($h -and $h.Id -ne $global:__NexusMemLastId -and
                    (Test-Path -LiteralPath $global:__NexusMemPy)) {{
                $global:__NexusMemLastId = $h.Id
                $exit = if ($ok) {{ 0 }} elseif ($code) {{ $code }} else {{ 1 }}
                $start = ([DateTimeOffset]$h.StartExecutionTime).ToUnixTimeMilliseconds() / 1000
                $end = ([DateTimeOffset]$h.EndExecutionTime).ToUnixTimeMilliseconds() / 1000
                $argv = @('-S', '-P', '{recorder}', '--home', '{home}', '--shell', 'pwsh', '--exit', "$exit",
                    '--start', "$start", '--end', "$end", '--cwd', $global:__NexusMemCwd,
                    '--session', $global:__NexusMemSession)
                $psi = [System.Diagnostics.ProcessStartInfo]::new($global:__NexusMemPy)
                $psi.Arguments = ($argv | ForEach-Object {{ __NexusMemQuote $_ }}) -join ' '
                $psi.UseShellExecute = $false
                $psi.RedirectStandardInput = $true
                $psi.RedirectStandardOutput = $true
                $psi.RedirectStandardError = $true
                $psi.CreateNoWindow = $true
                $p = [System.Diagnostics.Process]::Start($psi)
                # UTF-8 bytes, not the writer: its encoding is the console's code page.
                $bytes = [System.Text.Encoding]::UTF8.GetBytes([string]$h.CommandLine)
                $p.StandardInput.BaseStream.Write($bytes, 0, $bytes.Length)
                $p.StandardInput.Close()
            }}
        }} catch {{ }}
        $global:__NexusMemCwd = "$PWD"
        $global:LASTEXITCODE = $code
        & $global:__NexusMemPrompt
    }}
}}
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH, "pwsh": PWSH}


def _single_quoted(shell: str, text: str) -> str:
    """``text`` made safe inside single quotes in ``shell``."""
    if shell == "pwsh":
        return text.replace("'", "''")
    if shell == "fish":
        return text.replace("\\", "\\\\").replace("'", "\\'")
    return text.replace("'", "'\\''")


def render(shell: str, python: str, home: str) -> str:
    """The script for ``shell``: it runs the recorder with ``python`` and logs into ``home``."""
    return SCRIPTS[shell].format(
        version=VERSION,
        recorder=_single_quoted(shell, RECORDER),
        python=_single_quoted(shell, python),
        home=_single_quoted(shell, home),
    )
