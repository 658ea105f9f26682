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


# Characters that make a value look chosen as a password: not the ones identifiers are made of.
_SYMBOLS = frozenset("!#$%&*+=?@^~/")
_HEX = frozenset("0123456789abcdef")


def looks_random(value: str) -> bool:
    """True when ``value`` looks like a generated or chosen secret rather than a word, an
    identifier or a reference.

    It must be at least 8 characters and not a reference (``$VAR``, ``${{ ... }}``,
    ``os.environ[...]``). Then any of:

    * a password a person chose: three of lowercase, uppercase, digits and symbols
      (``Tr0ub4dor&3xyz``; ``_`` and ``-`` are identifier characters, not symbols);
    * 16 or more hex digits, letters among them;
    * letters and digits spread evenly: entropy of 3.0 bits per character (16 random hex
      digits average about 3.5, and one in twenty falls below 3.3; ``release2`` has 2.75);
    * letters only, 16 or more, in mixed case throughout (a quarter to three quarters upper
      case, where ``CamelCaseNames`` have a fifth) and entropy of 3.5.
    """
    value = value.strip()
    if len(value) < MIN_LENGTH or value.startswith("$"):
        return False
    if any(marker in value for marker in _REFERENCES):
        return False
    lower = any(char.islower() for char in value)
    upper = sum(char.isupper() for char in value)
    digit = any(char.isdigit() for char in value)
    symbol = any(char in _SYMBOLS for char in value)
    if lower + bool(upper) + digit + symbol >= 3:
        return True
    if digit and (lower or upper):
        if len(value) >= 16 and all(char in _HEX for char in value.lower()):
            return True  # a hex key: evenly spread by construction, whatever this sample shows
        return shannon(value) >= 3.0
    if len(value) >= 16 and lower and 0.25 <= upper / len(value) <= 0.75:
        return shannon(value) >= 3.5
    return False
