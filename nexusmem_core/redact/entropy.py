"""Does a value next to a secret keyword look like a credential, or like code and prose?

``api_key = "9f8e7d6c5b4a3f2e"`` is a secret; ``password = "changeme"`` in a test fixture,
``token = next_token(stream)`` and ``secret: ${{ secrets.DEPLOY }}`` are not. Without a prefix
to go by, what tells them apart is what a generated credential looks like: long enough, letters
mixed with digits, and characters spread evenly (high Shannon entropy per character), where a
word, an identifier or a reference to somewhere else is not.

Standard library only: the shell hook imports this on every command typed.
"""

from __future__ import annotations

import math

__all__ = ["looks_random", "shannon"]

# Parts of a value that make it a reference to a secret kept elsewhere, or a template.
_REFERENCES = ("${", "$(", "{{", "%(", "<", "os.environ", "process.env", "env(", "getenv")

MIN_LENGTH = 8


def shannon(value: str) -> float:
    """Bits of entropy per character of ``value``, from its own character frequencies."""
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def looks_random(value: str) -> bool:
    """True when ``value`` looks like a generated secret rather than a word or a reference.

    It must be at least 8 characters, hold both a letter and a digit, not be a reference
    (``$VAR``, ``${{ ... }}``, ``os.environ[...]``), and have entropy above what its length
    allows by chance for text: 3.0 bits per character up to 15 characters, 3.3 from 16 (16
    random hex digits average about 3.5; an English word of that length about 3.0).
    """
    value = value.strip()
    if len(value) < MIN_LENGTH or value.startswith("$"):
        return False
    if any(marker in value for marker in _REFERENCES):
        return False
    if not any(char.isdigit() for char in value) or not any(char.isalpha() for char in value):
        return False
    return shannon(value) >= (3.0 if len(value) < 16 else 3.3)
