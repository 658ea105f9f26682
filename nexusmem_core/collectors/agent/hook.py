"""The file a coding agent runs for each hook event: ``<python> -S -P <this file> <agent>``.

``<agent>`` is a key of ``AGENTS`` (claude, codex, gemini, cursor, opencode); none means
claude, as installs before the other agents wrote it.

``nexusmem agent install`` writes that command with absolute paths, so it runs this copy of
NexusMem with this interpreter whatever the agent's environment. ``-S`` skips site-packages
(the hook needs only the standard library and this package: that saves a third of its
start-up), ``-P`` keeps this directory off ``sys.path``; the package's parent goes there
instead. Any failure, even to import, ends in silence and exit 0.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    try:
        here = os.path.realpath(__file__)
        for _ in range(4):  # agent/ -> collectors/ -> nexusmem_core/ -> the package's parent
            here = os.path.dirname(here)
        sys.path.insert(0, here)
        from nexusmem_core.collectors.agent.runner import main
    except Exception:
        sys.exit(0)
    sys.exit(main())
