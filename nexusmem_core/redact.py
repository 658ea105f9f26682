"""Secret redaction for shell commands, applied before anything reaches disk.

Every captured command passes through :func:`redact` on the shell hook's hot path, so the module
uses the standard library only, and is built for speed:

* Importing it compiles nothing: each rule's pattern is compiled once, on first use (see
  :class:`Rule`), so a hook process pays only for the rules its commands can match.

* Every rule lists *triggers*, lowercase substrings of which at least one must occur for its
  pattern to match. A rule whose triggers are all absent is skipped with a substring test, so a
  typical command runs only a few patterns.
* Every pattern starts with a literal or a character class (``:``, ``=``, ``--``, ``curl``,
  ``eyJ``...), which lets ``re`` jump between candidate positions in C. Context that would
  otherwise come first (the header name before ``:``, the variable name before ``=``) is checked
  with fixed-width lookbehinds from the anchor instead.
* Every pattern is linear-time: no nested quantifiers that can backtrack (the one loop over
  shell-word pieces is possessive), and every run of characters is preceded by a check that it
  is not the middle of a longer run, so ``eyJeyJeyJ...`` is scanned once, not once per position.

A secret is replaced by the literal ``[REDACTED]`` while the non-secret context is kept, so the
stored command still says what was done: ``DB_PASSWORD=[REDACTED]``,
``Authorization: Bearer [REDACTED]``, ``https://user:[REDACTED]@host``,
``mysql -u root -p[REDACTED]``, ``--token [REDACTED]``. A quoted value is replaced whole, quotes
included.

The rules live in one table, :data:`RULES`, and each carries an example and its expected
redaction, so the table tests itself. Rules run in order: context rules (a header, an option, an
assignment), which redact a whole value including its quotes, come before the token-format rules
(``ghp_...``, ``AKIA...``), which would otherwise redact only part of a quoted value.

Secret names. ``NAME=value`` is redacted when the name *ends* with a secret word, in any case:
PASSWORD, PASSWD, PASSPHRASE, SECRET, TOKEN, CREDENTIAL(S), AUTH, API_KEY/APIKEY, ACCESS_KEY,
PRIVATE_KEY, SECRET_KEY and a few other ``*_KEY`` names; PWD and PASS only after an underscore
(``DB_PWD``, ``SMTP_PASS``), so the shell's own ``PWD``/``OLDPWD`` stay visible. An upper-case
environment name whose secret word is followed by ``_`` (``SECRET_KEY_BASE``, ``TOKEN_FILE``)
is redacted too. So ``GITHUB_TOKEN``, ``PGPASSWORD`` and ``BASIC_AUTH`` are secret names, while
``TOKENIZER``, ``AUTHOR`` and ``MAX_TOKENS`` are not.

Guarantees: ``redact(redact(x)) == redact(x)``, and an existing ``[REDACTED]`` is never matched
again or swallowed (every secret group refuses to start with it, optionally after a quote, and a
match that spans one keeps it). Values that are variable references (``$TOKEN``, ``"${TOKEN}"``,
``"$(gh auth token)"``) are left alone: they are not secrets, and the reference is useful context.

Known limits, by design: a lowercase ``secret_key_base=x`` (secret word followed by ``_``) is not
a secret name; ``${TOKEN=default}`` and ``sed 's/token=x/'`` are redacted (the ``=`` anchor cannot
see what starts the name); command-scoped rules (``mysql -p``, ``docker login -p``, ``curl -u``)
take the first such option of a command only; an Authorization value is cut at the first quote
(``Digest username="..."``); a private key without an END marker is redacted to the end of the
text.
"""

from __future__ import annotations

import re

__all__ = ["PLACEHOLDER", "RULES", "Rule", "redact", "redact_count", "redact_tally"]

PLACEHOLDER = "[REDACTED]"


class Rule:
    """One kind of secret: a pattern, the group in it that is the secret, and a worked example.

    ``group`` names the part of the match that is replaced (``0``, the default, is the whole
    match); the rest of the match is context that stays. ``triggers`` are lowercase substrings
    of which one must occur in the lowercased text for the pattern to be able to match; they are
    a prefilter only. ``example`` must redact to ``expected``, both by this rule alone and through
    the whole table, which the test suite checks.

    ``pattern`` is compiled from ``regex`` and ``flags`` on first use, then kept. Python's regex
    compiler costs about 2 microseconds per pattern character, ~10 ms for the whole table, which
    would be most of a shell hook's import; lazily, a process pays only for the rules its
    commands trigger. (A plain class, not a dataclass: importing ``dataclasses`` alone costs
    a hook 17 ms.)
    """

    __slots__ = ("_pattern", "example", "expected", "flags", "group", "name", "regex", "triggers")

    def __init__(
        self,
        name: str,
        regex: str,
        example: str,
        expected: str,
        triggers: tuple[str, ...],
        group: int | str = 0,
        flags: int = 0,
    ) -> None:
        self.name, self.regex, self.example, self.expected = name, regex, example, expected
        self.triggers, self.group, self.flags = triggers, group, flags
        self._pattern: re.Pattern[str] | None = None

    def __repr__(self) -> str:
        return f"Rule({self.name!r})"

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled :attr:`regex`."""
        if self._pattern is None:
            self._pattern = re.compile(self.regex, self.flags)
        return self._pattern


# --- Shared fragments -----------------------------------------------------------------------

# A secret never starts with the placeholder (optionally quoted): this keeps redaction idempotent
# and stops a rule from "finding" a secret in its own output.
_FRESH = r"""(?!["']?\[REDACTED\])"""

# A variable reference or command substitution is not a secret value: `$TOKEN`, `"${TOKEN}"`,
# `"$(gh auth token)"`. Single quotes do not expand, so `'$abc'` is a literal and is redacted.
_NOT_REF = r"""(?!\$|"\$)"""

# One shell word: single-quoted strings, double-quoted strings (with backslash escapes) and
# unquoted runs, concatenated (`abc'def ghi'`). Quotes are part of the secret, so a quoted value
# with spaces is redacted whole. A quote joins the word only if it is closed on the same line,
# so in `-e 'DB_PASSWORD=x' -p 80` the value stops before the closing quote; a value that itself
# starts with an unclosed quote runs to the end of the line (a truncated secret is still a
# secret). The quantifiers are possessive (Python 3.11+): the loop over pieces cannot
# backtrack, so this nesting cannot blow up.
_WORD = (
    r"""(?:(?:'[^'\n]++'|"(?:[^"\\\n]|\\.)++"|[^\s'"`;|&<>()]++)++"""
    r"""|'[^'\n]++|"(?:[^"\\\n]|\\.)++)"""
)

# The value of an assignment (`NAME=value`), and of an option (`--token value`), which also must
# not look like the next option (`--no-password -h host`).
_VALUE = _FRESH + _NOT_REF + _WORD
_ARG = _FRESH + _NOT_REF + r"(?!-)" + _WORD

# How a secret name may end (see the module docstring). Used as fixed-width lookbehinds from the
# `=` or `:` that follows the name, so the name itself never has to be scanned from its start.
_NAME_ENDINGS = (
    "password", "passwd", "passphrase", "_pwd", "_pass", "secret", "token", "credential",
    "credentials", "auth", "apikey", "api_key", "accesskey", "access_key", "privatekey",
    "private_key", "secretkey", "secret_key", "encryption_key", "signing_key", "master_key",
)  # fmt: skip
# Their last letters: a one-character lookbehind rejects most `=` before trying them all.
_NAME_LAST_LETTERS = "[" + "".join(sorted({word[-1] for word in _NAME_ENDINGS})) + "]"


def _preceded_by(*texts: str) -> str:
    """Assert that the text just before this point matches one of ``texts`` (regex snippets).

    Python lookbehinds need a fixed width, so each snippet gets its own.
    """
    return "(?:" + "|".join(f"(?<={text})" for text in texts) + ")"


# A private key body: runs of non-space characters separated by whitespace, stopping before the
# whitespace and END marker that close it, or at the end of the text. The bulk of the body goes
# through the tight `[^\s-]++` loop; only a `-` needs a closer look (a lazy `.*?` would try the
# END marker at every character).
_KEY_END = "-----END[ A-Z0-9]*PRIVATE KEY"
_KEY_BODY_RUN = r"(?:[^\s-]++|-(?!" + _KEY_END[1:] + r"))++"

# Known Authorization schemes; after one of these, whatever follows is the credential.
_AUTH_SCHEMES = (
    r"(?:basic|bearer|token|digest|negotiate|ntlm|oauth|jwt|apikey|api-key|key|ssws"
    r"|aws4-hmac-sha256|dpop|privatetoken|gitlab-token)"
)


def _first_option(client: str, option: str, command_char: str = r"[^\n;|&]") -> str:
    """From just after a client's name, skip to the first ``option`` word of the same command.

    The skip stops at the end of the command (``mysql db; mkdir -p x`` never reads ``-p`` as
    mysql's) and at the next ``client`` name, so a line of repeated client names is scanned once.
    Only the *first* such option is a candidate: that is where the password goes, and one match
    per command means one pass over the table is enough (with "any later option", every pass
    would reach one option further once the previous one reads ``[REDACTED]``).
    """
    word = r"(?<!\S)" + option
    return rf"(?:(?!{client}|{word}){command_char})*?{word}"


# Lowercase fragments of secret names, for triggers of the name-based rules.
_NAME_TRIGGERS = ("pass", "pwd", "secret", "token", "credential", "auth", "key")

# How vendor header names end (`X-Api-Key:`, `PRIVATE-TOKEN:`), as lookbehinds from the colon.
_HEADER_ENDINGS = (
    "-token:", "-key:", "-secret:", "-password:", "-passwd:", "-auth:",
    r"""[\s'"]apikey:""", r"""[\s'"]api-key:""",
)  # fmt: skip

# Upper-case secret words that may be followed by `_` in an environment name (`SECRET_KEY_BASE`).
_UPPER_SECRET_WORDS = (
    "PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "CREDENTIAL", "CREDENTIALS", "AUTH",
    "APIKEY", "API_KEY", "ACCESSKEY", "ACCESS_KEY", "PRIVATEKEY", "PRIVATE_KEY",
)  # fmt: skip

# Container-registry clients whose `login` takes `-p password`.
_REGISTRY_LOGINS = tuple(
    f"{tool} login"
    for tool in ("docker", "podman", "buildah", "skopeo", "nerdctl", "oras", "registry")
)

# keytool's password options.
_KEYTOOL_OPTIONS = (
    "-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass", "-destkeypass",
)  # fmt: skip

_I = re.IGNORECASE


def _rule(
    name: str,
    pattern: str,
    example: str,
    expected: str,
    triggers: tuple[str, ...],
    *,
    group: int | str = 0,
    flags: int = 0,
) -> Rule:
    # ASCII: shell syntax is ASCII, ASCII-only \w/\s/\d are faster, and case-insensitive matching
    # stays ASCII so the lowercase-substring triggers are exact prefilters.
    return Rule(name, pattern, example, expected, triggers, group, flags | re.ASCII)


RULES: tuple[Rule, ...] = (
    # --- Multi-line blocks first: a key body may contain anything the later rules would match.
    # The markers stay (they say what was pasted); the body goes. Without an END marker the rest
    # of the text is the body: a truncated key is still a key.
    _rule(
        "private_key_block",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----\s*"
        r"(?P<secret>" + _KEY_BODY_RUN + r"(?:\s++" + _KEY_BODY_RUN + r")*+)",
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBa2\nq1w2e3r4\n-----END EC PRIVATE KEY-----",
        "-----BEGIN EC PRIVATE KEY-----\n[REDACTED]\n-----END EC PRIVATE KEY-----",
        ("-----begin",),
        group="secret",
    ),
    # --- HTTP headers, anchored on the colon. The whole value after the scheme is the
    # credential, up to the quote that closes the argument or the end of the line. Without a
    # known scheme the credential must contain a digit, so prose such as "fix authorization:
    # handle empty header" is kept; the search for that digit is bounded, or a long run of
    # `authorization:authorization:...` would be scanned to its end once per colon. The atomic
    # group stops a fallback from taking the scheme word itself as the secret once the
    # credential is already `[REDACTED]`.
    _rule(
        "authorization_header",
        r""":(?:(?<=authorization:)|(?<=authorization["' \t]:))[ \t]*["']?"""
        r"""(?>""" + _AUTH_SCHEMES + r"""[ \t]+"""
        r"""|[a-z][\w.-]*[ \t]+(?=[^\s'"]{0,64}\d)|(?=[^\s'"]{0,64}\d))"""
        r"""(?P<secret>""" + _FRESH + r"""(?!\$)[^\n'"]*[^\s'"])""",
        "curl -H 'Authorization: Bearer abc.def-123' https://api.example.com",
        "curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com",
        ("authorization",),
        group="secret",
        flags=_I,
    ),
    # Vendor headers such as `X-Api-Key`, `PRIVATE-TOKEN`, `X-Vault-Token`, `apikey`: a hyphenated
    # name ending in a secret word (so prose like "token: ..." is not a header).
    _rule(
        "secret_header",
        ":"
        + _preceded_by(*_HEADER_ENDINGS)
        + r"""[ \t]*(?P<secret>"""
        + _FRESH
        + r"""(?!\$)[^\s'"]+)""",
        'curl -H "X-Api-Key: 0a1b2c3d4e" https://api.example.com',
        'curl -H "X-Api-Key: [REDACTED]" https://api.example.com',
        ("-token", "-key", "-secret", "-password", "-passwd", "-auth", "apikey", "api-key"),
        group="secret",
        flags=_I,
    ),
    # A bare `Bearer <token>` outside a header (logs, scripts). The token must be token-shaped
    # (8+ characters with a digit) so "Bearer tokens expire" stays readable.
    _rule(
        "bearer_token",
        r"[Bb](?<![\w-][Bb])(?i:earer)[ \t]+"
        r"(?P<secret>" + _FRESH + r"(?=[a-zA-Z._~+/-]*\d)[\w.~+/-]{8,}=*)",
        "echo Bearer eyJ0eXAi0iJKV1Q",
        "echo Bearer [REDACTED]",
        ("bearer",),
        group="secret",
    ),
    # --- URLs. The password of `scheme://user:pass@host`; user and host stay. The password
    # cannot contain `/` or `@`, which keeps `host:8080/path` out and the scan short.
    _rule(
        "url_credentials",
        r"""://(?<=[a-z0-9]://)[^\s:/?#@'"]*:(?P<secret>""" + _FRESH + r"""(?!\$)[^\s/@'"]+)@""",
        "git clone https://alice:s3cr3t@git.example.com/repo.git",
        "git clone https://alice:[REDACTED]@git.example.com/repo.git",
        ("://",),
        group="secret",
        flags=_I,
    ),
    _rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9/_+-]+)",
        "curl -X POST https://hooks.slack.com/services/T000/B000/XXXXXXXX -d '{}'",
        "curl -X POST https://hooks.slack.com/services/[REDACTED] -d '{}'",
        ("hooks.slack.com",),
        group="secret",
    ),
    _rule(
        "discord_webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/(?P<secret>[\w-]+)",
        "curl https://discord.com/api/webhooks/123456/abcDEF-ghi_789",
        "curl https://discord.com/api/webhooks/123456/[REDACTED]",
        ("discord",),
        group="secret",
    ),
    # Query parameters: `?password=`, `&access_token=`, `&api_key=`, Google's `?key=`, signed
    # URLs' `sig=` / `X-Amz-Signature=`. A prefix must end in a separator, so `&monkey=` and
    # `&bypass=` are not secrets.
    _rule(
        "url_query_secret",
        r"""[?&;](?:[a-z0-9_.-]*[_.-])?"""
        r"""(?:password|passwd|pwd|pass|token|secret|api_?key|apikey|access_?key|key|sig"""
        r"""|signature|auth|credentials?)"""
        r"""=(?P<secret>""" + _FRESH + r"""(?!\$)[^&#\s'"]+)""",
        "curl 'https://api.example.com/v1/items?user=bob&password=hunter2&page=1'",
        "curl 'https://api.example.com/v1/items?user=bob&password=[REDACTED]&page=1'",
        ("pass", "pwd", "token", "secret", "key", "sig", "auth", "credential"),
        group="secret",
        flags=_I,
    ),
    # --- Structured payloads: `{"password": "..."}` in `curl -d`, also with the backslash-escaped
    # quotes of a double-quoted shell argument. The key must end with a secret word, so
    # `"token_type"` and `"max_tokens"` are kept. The first lookahead cheaply rejects the many
    # quotes that do not open a `"key":`.
    _rule(
        "json_secret_field",
        r""""(?=[a-z0-9_.-]*+\\?"[ \t]*:)(?=[a-z0-9_.-]*?"""
        r"""(?:pass(?:word|wd|phrase)|_pwd|_pass|secret|token|credentials?|auth"""
        r"""|(?:api|access|private|secret)_?key)\\?")"""
        r"""[a-z0-9_.-]*+\\?"[ \t]*:[ \t]*\\?["']"""
        r"""(?P<secret>""" + _FRESH + r"""(?!\$)[^"'\\\n]+)""",
        """curl -d '{"user":"bob","password":"hunter2"}' https://example.com/login""",
        """curl -d '{"user":"bob","password":"[REDACTED]"}' https://example.com/login""",
        _NAME_TRIGGERS,
        group="secret",
        flags=_I,
    ),
    # --- Command-specific forms. `aws configure set aws_secret_access_key VALUE` and the
    # credentials file's `aws_secret_access_key = VALUE` (spaces around `=`). The separator is
    # atomic: once `= [REDACTED]` is refused, the `=` must not be retried as the value.
    _rule(
        "aws_secret_access_key",
        r"[Yy](?i:"
        + _preceded_by("aws_secret_access_key", "aws-secret-access-key", "aws_secret_key")
        + r")[\"']?(?>[ \t]*[:=][ \t]*|[ \t]+)(?P<secret>"
        + _VALUE
        + ")",
        "aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws configure set aws_secret_access_key [REDACTED]",
        ("aws_secret", "aws-secret"),
        group="secret",
    ),
    # The MySQL family takes its password glued to `-p` (`-p secret` would prompt, then select
    # database "secret"). Only these clients: `mkdir -p`, `cp -p`, `ssh -p` mean something else.
    _rule(
        "mysql_password",
        r"(?:mysql|mariadb)(?<![\w.-]mysql)(?<![\w.-]mariadb)"
        r"(?:admin|dump|import|show|check|pump|slap|sh|-dump|-admin)?(?![\w.-])"
        + _first_option("mysql|mariadb", "-p")
        + r"(?P<secret>"
        + _VALUE
        + ")",
        "mysql -h db.internal -u root -pS3cr3t! app",
        "mysql -h db.internal -u root -p[REDACTED] app",
        ("mysql", "mariadb"),
        group="secret",
    ),
    # `sshpass -p pw ssh ...`: only sshpass's own options before `-p` (none of them is `-p`), so
    # the wrapped command's `ssh -p 2222` is never taken for the password.
    _rule(
        "sshpass_password",
        r"sshpass(?<![\w.-]sshpass)(?:[ \t]+-[a-oq-zA-Z]\S*)*+[ \t]+-p[ \t]*"
        r"(?P<secret>" + _VALUE + ")",
        "sshpass -p 'pa ss' ssh -p 2222 deploy@host",
        "sshpass -p [REDACTED] ssh -p 2222 deploy@host",
        ("sshpass",),
        group="secret",
    ),
    # `docker login -u user -p pw` and its siblings.
    _rule(
        "registry_login_password",
        "login"
        + _preceded_by(*_REGISTRY_LOGINS)
        + _first_option("login", r"(?:-p|--password)(?=[ \t=])")
        + r"(?:[ \t]+|=)(?P<secret>"
        + _ARG
        + ")",
        "docker login -u bob -p hunter2 registry.example.com",
        "docker login -u bob -p [REDACTED] registry.example.com",
        ("login",),
        group="secret",
    ),
    # `redis-cli -a pw` (also `--pass pw`).
    _rule(
        "redis_cli_password",
        r"redis-cli(?<![\w.-]redis-cli)"
        + _first_option("redis-cli", r"(?:-a|--pass)(?=[ \t])")
        + r"[ \t]+(?P<secret>"
        + _ARG
        + ")",
        "redis-cli -h cache.internal -a hunter2 ping",
        "redis-cli -h cache.internal -a [REDACTED] ping",
        ("redis-cli",),
        group="secret",
    ),
    # `curl -u user:pass`, `--user user:pass`, `--proxy-user`: only the password part. Scoped to
    # curl because `docker run -u 1000:1000` is a uid:gid. A quoted argument is redacted up to
    # its closing quote, spaces included. `&` does not end the scan: URLs have it.
    _rule(
        "curl_user_password",
        r"curl(?<![\w.-]curl)(?![\w.-])"
        + _first_option("curl", r"(?:--user(?=[ \t=])|--proxy-user(?=[ \t=])|-[uU])", r"[^\n;|]")
        + r"""(?:=|[ \t]*)"""
        r"""(?P<q>['"])?[^\s:'"]*:"""
        r"""(?P<secret>""" + _FRESH + r"""(?!\$)(?(q)(?:(?!(?P=q))[^\n])+|[^\s'"]+))""",
        "curl -u alice:hunter2 https://api.example.com",
        "curl -u alice:[REDACTED] https://api.example.com",
        ("curl",),
        group="secret",
    ),
    # `openssl ... -passin pass:pw` (`env:VAR` and `file:path` are references and stay).
    _rule(
        "openssl_pass",
        r"-pass(?<!\S-pass)(?:in|out)?[ \t]+pass:(?P<secret>" + _VALUE + ")",
        "openssl pkcs12 -in cert.p12 -passin pass:hunter2 -nokeys",
        "openssl pkcs12 -in cert.p12 -passin pass:[REDACTED] -nokeys",
        ("pass:",),
        group="secret",
    ),
    # `keytool -storepass pw -keypass pw`.
    _rule(
        "keytool_pass",
        "pass" + _preceded_by(*_KEYTOOL_OPTIONS) + r"[ \t]+(?P<secret>" + _ARG + ")",
        "keytool -list -keystore ks.jks -storepass changeit",
        "keytool -list -keystore ks.jks -storepass [REDACTED]",
        ("storepass", "keypass"),
        group="secret",
    ),
    # --- Generic options: `--password x`, `--token=x`, `--db-password x`, `--api_key x`,
    # `--oauth2-bearer x`. The secret word must end the option name: `--password-stdin` and
    # `--token-file` take no secret, and `--no-password` is a flag.
    _rule(
        "secret_option",
        r"--(?<![\w-]--)(?!no-)(?=[a-z0-9_-]*?"
        r"(?:password|passwd|passphrase|secret|token|auth|bearer|api[_-]?key|apikey"
        r"|access[_-]?key|secret[_-]?key|credentials?)(?:=|[ \t]))"
        r"[a-z0-9_-]++(?:=|[ \t]+)(?P<secret>" + _ARG + ")",
        "gh auth login --hostname ghe.example.com --token abc123",
        "gh auth login --hostname ghe.example.com --token [REDACTED]",
        ("--",),
        group="secret",
        flags=_I,
    ),
    # --- `NAME=value` / `export NAME=value` / `-Dname=value` where the name ends with a secret
    # word (any case). Anchored on `=`, the name checked by lookbehind.
    _rule(
        "secret_assignment",
        "=(?<="
        + _NAME_LAST_LETTERS
        + "=)"
        + _preceded_by(*(word + "=" for word in _NAME_ENDINGS))
        + r"(?P<secret>"
        + _VALUE
        + ")",
        "export DB_PASSWORD='p@ss w0rd' && ./migrate",
        "export DB_PASSWORD=[REDACTED] && ./migrate",
        _NAME_TRIGGERS,
        group="secret",
        flags=_I,
    ),
    # fish has no `NAME=value`: `set -gx DB_PASSWORD hunter2`. The name is bounded (64) and
    # must end in a secret word, as for assignments; the first value after it is the secret.
    _rule(
        "fish_set_secret",
        r"(?<![\w-])set(?:[ \t]++-[a-zA-Z]{1,8}+){0,4}+[ \t]++[A-Za-z0-9_]{0,64}?(?:"
        + "|".join(_NAME_ENDINGS)
        + r")(?![A-Za-z0-9_])[ \t]++(?P<secret>"
        + _ARG
        + ")",
        "set -gx OPENAI_API_KEY sk-live-0123; and make",
        "set -gx OPENAI_API_KEY [REDACTED]; and make",
        _NAME_TRIGGERS,
        group="secret",
        flags=_I,
    ),
    # Upper-case environment names whose secret word is followed by `_`: `SECRET_KEY_BASE`,
    # `TOKEN_FILE`. Anchored on that `_`; case-sensitive, so lowercase code is left alone. The
    # rest of the name is bounded: every `_` of a long `TOKEN_TOKEN_...` run is a candidate, and
    # an unbounded scan to the `=` from each would be quadratic.
    _rule(
        "secret_prefixed_assignment",
        "_"
        + _preceded_by(*(word + "_" for word in _UPPER_SECRET_WORDS))
        + r"[A-Z0-9_]{0,64}+=(?P<secret>"
        + _VALUE
        + ")",
        "SECRET_KEY_BASE=9f86d081884c7d65 bin/rails server",
        "SECRET_KEY_BASE=[REDACTED] bin/rails server",
        ("pass", "secret", "token", "credential", "auth", "key"),
        group="secret",
    ),
    # --- Token formats, recognised anywhere. Each starts with its literal prefix, then a
    # lookbehind makes sure the prefix does not continue a longer run of its own characters.
    _rule(
        "aws_access_key_id",
        r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])(?<![A-Za-z0-9]....)[A-Z0-9]{16}(?![A-Za-z0-9])",
        "aws sts get-caller-identity # key AKIAIOSFODNN7EXAMPLE",
        "aws sts get-caller-identity # key [REDACTED]",
        ("akia", "asia", "abia", "acca", "a3t"),
    ),
    _rule(
        "github_token",
        r"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{30,255}|ithub_pat_[A-Za-z0-9_]{30,255})"
        r"(?![A-Za-z0-9_])",
        "git push https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/a/b.git",
        "git push https://[REDACTED]@github.com/a/b.git",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _rule(
        "gitlab_token",
        r"gl(?<![A-Za-z0-9_-]gl)(?:pat|dt|ptt|rt|oas)-[A-Za-z0-9_-]{20,255}(?![A-Za-z0-9_-])",
        "glab auth login --stdin <<< glpat-xxxxxxxxxxxxxxxxxxxx",
        "glab auth login --stdin <<< [REDACTED]",
        ("glpat-", "gldt-", "glptt-", "glrt-", "gloas-"),
    ),
    _rule(
        "slack_token",
        r"x(?<![A-Za-z0-9-]x)(?:ox[abprse]|app)-[A-Za-z0-9-]{10,250}(?![A-Za-z0-9-])",
        "slack-cli --bot xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
        "slack-cli --bot [REDACTED]",
        ("xox", "xapp-"),
    ),
    _rule(
        "jwt",
        r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*",
        "echo eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
        "echo [REDACTED]",
        ("eyj",),
    ),
    # OpenAI (`sk-`, `sk-proj-`) and Anthropic (`sk-ant-`) keys. Mixed case and a digit are
    # required so branch names like `sk-123-fix-login-redirect` are not keys.
    _rule(
        "openai_anthropic_key",
        r"sk-(?<![A-Za-z0-9_-]sk-)(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Z])"
        r"[A-Za-z0-9_-]{32,}",
        "llm -k sk-ant-api03-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv 'hi'",
        "llm -k [REDACTED] 'hi'",
        ("sk-",),
    ),
    _rule(
        "google_api_key",
        r"AIza(?<![A-Za-z0-9_-]AIza)[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])",
        "gcloud ml vision detect-labels img.png --key AIzaSyD-1234567890abcdefghijklmnopqrstu",
        "gcloud ml vision detect-labels img.png --key [REDACTED]",
        ("aiza",),
    ),
    _rule(
        "stripe_key",
        r"(?:sk_(?<![\w]sk_)|rk_(?<![\w]rk_))(?:live|test)_[0-9A-Za-z]{10,255}(?!\w)",
        "stripe listen --api-key-file k; echo sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "stripe listen --api-key-file k; echo [REDACTED]",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
    ),
    _rule(
        "stripe_webhook_secret",
        r"whsec_(?<!\wwhsec_)[0-9A-Za-z]{20,255}(?!\w)",
        "stripe listen --forward-to localhost:4242 # whsec_abcdefghijklmnopqrstuvwxyz012345",
        "stripe listen --forward-to localhost:4242 # [REDACTED]",
        ("whsec_",),
    ),
    _rule(
        "npm_token",
        r"npm_(?<![\w-]npm_)[A-Za-z0-9]{36}(?![\w-])",
        "npm config set //registry.npmjs.org/:_authToken npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "npm config set //registry.npmjs.org/:_authToken [REDACTED]",
        ("npm_",),
    ),
    _rule(
        "pypi_token",
        r"pypi-AgE(?<![\w-]pypi-AgE)[A-Za-z0-9_-]{50,}",
        "twine upload -p pypi-AgEIcHlwaS5vcmcCJGE4ZjA2YjBjLTk3MjctNDNkNy1hMjAyLTM0YjEyNGM3 dist/*",
        "twine upload -p [REDACTED] dist/*",
        ("pypi-age",),
    ),
    _rule(
        "huggingface_token",
        r"hf_(?<![\w-]hf_)[A-Za-z]{34}(?![\w-])",
        "echo hf_abcdefghijklmnopqrstuvwxyzABCDEFGH | huggingface-cli login",
        "echo [REDACTED] | huggingface-cli login",
        ("hf_",),
    ),
    _rule(
        "vault_token",
        r"hv[sbr]\.(?<![\w-]hv[sbr]\.)[A-Za-z0-9_-]{24,}",
        "VAULT_ADDR=https://vault:8200 vault kv get -address x hvs.CAESIabcdefghijklmnopqrstuv",
        "VAULT_ADDR=https://vault:8200 vault kv get -address x [REDACTED]",
        ("hvs.", "hvb.", "hvr."),
    ),
)

# A pass over the table can expose a secret an earlier rule would have matched: a redacted value
# that swallowed the next client name (`--token=abcmysql -pX`) no longer stops mysql's scan.
# Repeating until a pass changes nothing makes the output a fixed point, i.e. idempotent. A pass
# repeats only when it replaced something (commands without secrets take one pass), real
# commands settle in one, and the bound only guards against a rule bug turning into a hang.
_MAX_PASSES = 4


# Characters that alone are not a secret (an empty quoted value, the space around a key body).
_NOT_SECRET = "'\" \t\r\n"


def _hide(secret: str) -> str:
    """The replacement for a secret: ``[REDACTED]``, keeping any placeholder already inside it.

    A match can span an earlier redaction (``TOKEN=abc[REDACTED]``); swallowing it would make
    ``[REDACTED]`` disappear, so only the pieces between placeholders are hidden. Pieces that are
    only quotes or whitespace are not secrets and stay, so ``"[REDACTED]"`` is left as it is.
    """
    if PLACEHOLDER not in secret:
        return PLACEHOLDER if secret.strip(_NOT_SECRET) else secret
    pieces = secret.split(PLACEHOLDER)
    return PLACEHOLDER.join(PLACEHOLDER if piece.strip(_NOT_SECRET) else piece for piece in pieces)


def _apply(rule: Rule, text: str) -> tuple[str, int]:
    """Replace the secret group of every match of one rule; return the text and the count."""
    count = 0
    group = rule.group

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        start, end = match.span(group)
        secret = text[start:end]
        hidden = _hide(secret)
        if hidden == secret:  # nothing left to hide (empty, quotes, placeholders)
            return match.group(0)
        count += 1
        whole_start, whole_end = match.span()
        return text[whole_start:start] + hidden + text[end:whole_end]

    return rule.pattern.sub(replace, text), count


def redact_tally(text: str) -> tuple[str, dict[str, int]]:
    """Return ``text`` with every secret replaced by ``[REDACTED]``, and how many secrets each
    rule replaced (by rule name; never the secrets themselves)."""
    tally: dict[str, int] = {}
    for _ in range(_MAX_PASSES):
        lowered = text.lower()
        found = 0
        for rule in RULES:
            for trigger in rule.triggers:
                if trigger in lowered:
                    break
            else:
                continue  # no trigger: the pattern cannot match
            text, count = _apply(rule, text)
            if count:
                tally[rule.name] = tally.get(rule.name, 0) + count
                found += count
        if not found:
            break
    return text, tally


def redact_count(text: str) -> tuple[str, int]:
    """Return ``text`` with every secret replaced by ``[REDACTED]``, and how many were replaced."""
    text, tally = redact_tally(text)
    return text, sum(tally.values())


def redact(text: str) -> str:
    """Return ``text`` with every secret replaced by ``[REDACTED]``; see the module docstring."""
    return redact_count(text)[0]
