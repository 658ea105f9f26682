"""The handlers package's names are its use cases, whatever was imported before."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from types import ModuleType


def test_no_use_case_is_shadowed_by_a_module_of_its_name() -> None:
    # In a fresh interpreter: a module imported first must not take a function's name.
    script = (
        "import importlib, pkgutil, types\n"
        "import nexusmem_core.handlers.search, nexusmem_core.handlers.status\n"
        "import nexusmem_core.handlers as h\n"
        "for m in pkgutil.iter_modules(h.__path__):\n"
        "    importlib.import_module(f'nexusmem_core.handlers.{m.name}')\n"
        "bad = [n for n in h.__all__ if isinstance(getattr(h, n), types.ModuleType)]\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_module_of_the_package_stays_importable() -> None:
    import nexusmem_core.handlers as handlers

    for found in pkgutil.iter_modules(handlers.__path__):
        module = importlib.import_module(f"nexusmem_core.handlers.{found.name}")
        assert isinstance(module, ModuleType)
        assert sys.modules[f"nexusmem_core.handlers.{found.name}"] is module
    assert callable(handlers.search) and callable(handlers.status)
