"""The file a shell hook runs after each command: ``<python> -S -P <this file> --home ...``.

``nexusmem hook install`` writes that command with absolute paths, as the agent hook's. ``-S``
skips site-packages (the recorder needs only the standard library and this package: its
process took 32 ms with them and 22 ms without, here, once for every command typed), ``-P``
keeps this directory off ``sys.path`` (nor is the current directory, where ``-m`` would put
it: a repository's own ``nexusmem_core`` folder is never imported); the package's parent goes
there instead. A script written before this file runs ``python -m`` on the recorder, which
still works. A failure to import ends in silence and exit 0, as the recorder's own do.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    try:
        here = os.path.realpath(__file__)
        for _ in range(4):  # shell/ -> collectors/ -> nexusmem_core/ -> the package's parent
            here = os.path.dirname(here)
        sys.path.insert(0, here)
        from nexusmem_core.collectors.shell.record import main
    except Exception:
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
