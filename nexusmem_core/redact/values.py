"""Values that stand where a secret would, and are not one.

``SECRET_KEY='dev'``, ``local_auth=True``, ``token=generate_token(user)``, ``api_key =
settings.API_KEY`` and ``path-key: 4.0.0`` name a secret and hold a placeholder, a boolean, a
call, a reference to somewhere else, or a version. A rule that finds a value by its name asks
:func:`ordinary` before redacting it: redacted, these would hide what the code does and say
nothing about a secret, since none is there.

Standard library only: the shell hook imports this on every command typed.
"""

from __future__ import annotations

import re

__all__ = ["ordinary", "ordinary_kind"]

# Words written where a real value goes later: in fixtures, examples and templates.
_PLACEHOLDERS = frozenset(
    {
        "changeme", "change-me", "change_me", "changeit", "dev", "development", "test",
        "testing", "example", "sample", "dummy", "fake", "placeholder", "secret", "password",
        "passwd", "token", "apikey", "api_key", "key", "todo", "tbd", "fixme", "redacted",
        "hidden", "none", "null", "nil", "undefined", "empty", "default", "local", "localhost",
        "foo", "bar", "baz", "foobar", "pass", "required", "value", "xyz", "auth",
        "credential", "credentials", "passphrase", "password123", "secret123", "token123",
        "mypassword", "mysecret", "topsecret",
        "optional", "string", "str", "bytes", "int", "bool", "any", "unset", "notset", "...",
    }
)  # fmt: skip
_BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "0", "1", "enabled", "disabled"})

# What a placeholder looks like beyond a word: `xxx`, `***`, `<token>`, `${VAR}`, `{{ var }}`,
# `%(name)s`, `{env.X}`, `your_api_key`, `os.environ[...]`, `process.env.X`, and a letter or
# two (`p`, `n`: a minified or a test's variable).
_PLACEHOLDER_SHAPE = (
    r"(?:([x*.#?_-])\1{2,}|<[^<>]{0,80}>|\$\{[^}]{0,80}\}|\{\{.{0,80}\}\}|%\([^)]{0,40}\)s"
    r"|(?:your|my|the|some|insert|enter)[_-][\w-]{0,60}|\$\w{1,60}|\{[^{}]{0,80}\}"
    r"|[A-Za-z]{1,2}"
    r"|(?:os\.environ|os\.getenv|process\.env|env|getenv|environ)\b.{0,120})",
    re.IGNORECASE | re.ASCII,
)
# A call or a subscript, closed: `generate_token(...)`, `self.make_key()`, `config["token"]`.
_CALL = (r"[A-Za-z_][\w.]{0,120}(?:\(.{0,400}\)|\[.{0,400}\])", re.ASCII)
# A reference to a name: a dotted path (`settings.SECRET_KEY`, `self.token`), a snake_case or
# camelCase identifier (`auth_header`, `DEFAULT_TOKEN`, `withCredentials`), a negation of one
# (`!!config.withCredentials`) or a file path of two parts or more: what code assigns from, not
# a value. Digits only at the end of a part (`v2`): a random value has them anywhere.
_REFERENCE = (
    r"!{0,2}(?:[A-Za-z_]{1,60}[0-9]{0,2}(?:\.[A-Za-z_]{1,60}[0-9]{0,2}){1,8}"
    r"|_{0,2}[a-z]{2,30}(?:_[a-z]{2,30}){1,6}_{0,2}"
    r"|[A-Z]{2,30}(?:_[A-Z]{2,30}){1,6}"
    r"|[a-z]{1,30}(?:[A-Z][a-z]{1,30}){1,6}[0-9]{0,2}|(?:[A-Z][a-z]{1,30}){2,6}"
    r"|(?:~|\.{1,2})?(?:/[A-Za-z_.-]{1,80}[0-9]{0,4}){2,12})",
    re.ASCII,
)
# A version or a range of them: `4.0.0`, `^1.2`, `~> 2.0`, `>=3.11`, `v1.2.3-rc.1`.
_VERSION = (
    r"(?:[~^=<>!]=?|~>)?[ \t]?v?\d{1,6}(?:\.\d{1,6}){1,4}(?:[-+.][0-9A-Za-z.-]{1,40})?",
    re.ASCII,
)
_QUOTES = "'\"` \t"
# Compiled on first use (re keeps them): compiling all four at import cost every process that
# imports redaction, the hooks among them, ~1.7 ms, though few texts ever ask.
_SHAPES = (
    ("placeholder", _PLACEHOLDER_SHAPE),
    ("version", _VERSION),
    ("call", _CALL),
    ("reference", _REFERENCE),
)


def ordinary_kind(value: str) -> str | None:
    """What kind of non-secret ``value`` is: ``placeholder``, ``boolean``, ``call``,
    ``reference`` or ``version``; None when it may be a secret."""
    bare = value.strip(_QUOTES).rstrip(",;")
    lowered = bare.lower()
    if not bare or lowered in _PLACEHOLDERS or bare.startswith("[REDACTED]"):
        return "placeholder"
    if lowered in _BOOLEANS or lowered in ("!0", "!1"):
        return "boolean"
    for kind, (regex, flags) in _SHAPES:
        if re.fullmatch(regex, bare, flags):
            return kind
    return None


def ordinary(value: str) -> bool:
    """Whether ``value`` is a placeholder, a boolean, a call, a reference or a version."""
    return ordinary_kind(value) is not None
