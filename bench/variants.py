"""The ways NexusMem is run in ``python -m bench``: an editable or a ``pip install .`` install,
with or without ``PYTHONDONTWRITEBYTECODE=1``; each gives the interpreter, the console script
and the environment its processes get.

Bytecode *on* writes and reads it under ``bench/out/pycache/<install>/`` (``PYTHONPYCACHEPREFIX``),
never next to the sources, so it cannot leak into the *off* runs. *Off* is
``PYTHONDONTWRITEBYTECODE=1`` with whatever bytecode the install left: the standard library's
and pip's compiled site-packages (``pip install .`` compiles NexusMem's too), and for an
editable install what the README's set-up leaves: NexusMem's modules compiled beside their
sources (that set-up's ``compileall`` step, run again before each such run: it compiles what
changed since). Set ``BENCH_UNCOMPILED=1`` to remove that bytecode instead, as a fresh
checkout has before the step (or every module edited since).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from _common import OUT, ROOT, VENV_BIN

__all__ = ["Variant", "variants"]

# What a non-editable install is built from; the digest of these decides when to rebuild it.
SOURCES = ("pyproject.toml", "cli.py", "nexusmem_core", "nexusmem_mcp")
DISCARD = "127.0.0.1:9"  # OLLAMA_HOST nothing listens on: the embedder fails at once


@dataclass(frozen=True)
class Variant:
    install: str  # "editable" or "wheel"
    bytecode: str  # "on" or "off"
    bin: Path  # the virtualenv's bin directory

    @property
    def label(self) -> str:
        return f"{self.install}, bytecode {self.bytecode}"

    @property
    def python(self) -> str:
        return str(self.bin / "python")

    @property
    def nexusmem(self) -> str:
        return str(self.bin / "nexusmem")

    def env(self, base: dict[str, str], home: Path, ollama: bool = False) -> dict[str, str]:
        """``base`` with a throwaway NEXUSMEM_HOME (and agent transcript folders inside it),
        Ollama unreachable unless ``ollama``, and this variant's bytecode settings."""
        env = {**base, "NEXUSMEM_HOME": str(home)}
        env |= {"CLAUDE_CONFIG_DIR": str(home / "claude"), "CODEX_HOME": str(home / "codex")}
        for name in ("NEXUSMEM_LOG_LEVEL", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
            env.pop(name, None)
        if not ollama:
            env["OLLAMA_HOST"] = DISCARD
            env.pop("NEXUSMEM_EMBED_MODEL", None)
        return env | self.bytecode_env()

    def bytecode_env(self) -> dict[str, str]:
        """The variable that gives this variant's bytecode behaviour."""
        if self.bytecode == "on":
            return {"PYTHONPYCACHEPREFIX": str(OUT / "pycache" / self.install)}
        return {"PYTHONDONTWRITEBYTECODE": "1"}

    def ready(self) -> None:
        """Before a timed run: an editable install without bytecode has the bytecode of its
        set-up's ``compileall`` alone (none with ``BENCH_UNCOMPILED=1``)."""
        if self.install == "editable" and self.bytecode == "off":
            if os.environ.get("BENCH_UNCOMPILED"):
                drop_tree_bytecode()
            else:
                compile_tree(self.python)  # what is compiled and current already is kept


def compile_tree(python: str) -> None:
    """What the README's test command does after the editable install: NexusMem's modules
    compiled beside their sources."""
    sources = [str(ROOT / name) for name in ("nexusmem_core", "nexusmem_mcp", "cli.py")]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX",)}
    subprocess.run([python, "-m", "compileall", "-q", *sources], check=True, env=env)


def drop_tree_bytecode() -> None:
    """Remove the bytecode Python wrote beside NexusMem's sources (a build artefact)."""
    for package in ("nexusmem_core", "nexusmem_mcp"):
        for cache in (ROOT / package).rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)
    for pyc in (ROOT / "__pycache__").glob("cli.*.pyc"):
        pyc.unlink(missing_ok=True)


def source_digest() -> str:
    digest = hashlib.sha256()
    for name in SOURCES:
        path = ROOT / name
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(ROOT)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:12]


def ensure_wheel_venv() -> Path:
    """A virtualenv with ``pip install .`` of the current sources, built once per source
    digest under bench/out/; its bin directory. The sources are copied first, so the build
    leaves nothing in the tree."""
    venv = OUT / f"wheel-venv-{source_digest()}"
    if (venv / "bin" / "nexusmem").exists():
        return venv / "bin"
    for old in OUT.glob("wheel-venv-*"):
        shutil.rmtree(old, ignore_errors=True)
    print(f"building {venv.name} (pip install .) ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="nexusmem-bench-src-") as tmp:
        src = Path(tmp)
        for name in (*SOURCES, "README.md"):  # pyproject.toml names README.md as the readme
            path = ROOT / name
            if path.is_dir():
                shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(path, src / name)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(src)]
        proc = subprocess.run(pip, capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            raise SystemExit(f"pip install . failed: {proc.stderr.strip()[-2000:]}")
    return venv / "bin"


def variants(installs: list[str], bytecodes: list[str]) -> list[Variant]:
    """Every (install, bytecode) pair, in the order the runs interleave them."""
    bins = {"editable": VENV_BIN} | ({"wheel": ensure_wheel_venv()} if "wheel" in installs else {})
    return [Variant(i, b, bins[i]) for i in installs for b in bytecodes]
