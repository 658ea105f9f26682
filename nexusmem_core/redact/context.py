"""Context rules: secrets recognised by what surrounds them (a header, an option, an assignment).

Every pattern starts with a literal or a character class (``:``, ``=``, ``--``, ``curl``), which
lets ``re`` jump between candidate positions in C. Context that would otherwise come first (the
header name before ``:``, the variable name before ``=``) is checked with fixed-width
lookbehinds from the anchor instead. Every pattern is linear-time: no nested quantifiers that
can backtrack (the one loop over shell-word pieces is possessive), and every run of characters
is preceded by a check that it is not the middle of a longer run.

Standard library only: the shell hook imports this on every command typed.
"""

from __future__ import annotations

import re

from .entropy import looks_random
from .rule import Rule, context_rule
from .tokens import TOKEN_RULES
from .values import ordinary

__all__ = ["CONTEXT_RULES"]

# --- Shared fragments -----------------------------------------------------------------------

# A secret never starts with the placeholder (optionally quoted): this keeps redaction idempotent
# and stops a rule from "finding" a secret in its own output.
_FRESH = r"""(?!["']?\[REDACTED\])"""

# A variable reference or command substitution is not a secret value: `$TOKEN`, `"${TOKEN}"`,
# `"$(gh auth token)"`. Single quotes do not expand, so `'$abc'` is a literal and is redacted.
_NOT_REF = r"""(?!\$|"\$)"""

# One shell word: single-quoted strings, double-quoted strings (with backslash escapes) and
# unquoted runs, concatenated (`abc'def ghi'`), with escaped characters and backslash-newlines
# among them: the shell joins `abc\<newline>def` into one word, so its second half is the
# secret's too (the engine keeps that newline, see `_hide`; in a patch the next line starts with
# its `+` or `-`). Quotes are part of the secret, so
# a quoted value with spaces is redacted whole. A quote joins the word only if it is closed on
# the same line, so in `-e 'DB_PASSWORD=x' -p 80` the value stops before the closing quote; a
# value that itself starts with an unclosed quote runs to the end of the line (a truncated
# secret is still a secret). The quantifiers are possessive (Python 3.11+), and the pieces start
# with different characters: the loop over them cannot backtrack, so this nesting cannot blow
# up.
_WORD = (
    r"""(?:(?:'[^'\n]++'|"(?:[^"\\\n]|\\.)++"|[^\s'"`;|&<>()\\]++|"""
    + r"""\\\n[+-]?[ \t]*+|\\[^\n])++"""
    r"""|'[^'\n]++|"(?:[^"\\\n]|\\.)++)"""
)

# The value of an assignment (`NAME=value`), and of an option (`--token value`), which also must
# not look like the next option (`--no-password -h host`).
_VALUE = _FRESH + _NOT_REF + _WORD

# An assignment's value may hold a `&` that joins two non-space characters: in chat text and
# config values `password=Tr0ub4dor&3xyz` is one password, where a shell word would end at the
# `&` and leave `&3xyz` behind. (A URL's `?password=x&user=y` is the query rule's, which runs
# first and stops at the `&`.)
_ASSIGNED = (
    _FRESH
    + _NOT_REF
    + r"""(?:(?:'[^'\n]++'|"(?:[^"\\\n]|\\.)++"|(?:[^\s'"`;|&<>()\\]|&(?=[^\s&;|<>()]))++"""
    r"""|\\\n[+-]?[ \t]*+|\\[^\n])++"""
    r"""|'[^'\n]++|"(?:[^"\\\n]|\\.)++)"""
)
_ARG = _FRESH + _NOT_REF + r"(?!-)" + _WORD


def _alternation(words: list[str]) -> str:
    """A regex matching any of ``words``, as a trie (``p(?:ass|wd)``): ``re`` tries the
    alternatives of a flat list one after another, of a trie only those sharing the letter at
    hand. In a folded rule (see ``Rule.folded``) the first letters are literals, so ``re`` scans
    for them in C and tries the pattern only where one is."""
    tree: dict[str, dict] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return "(?:" + emit(tree) + ")"


# The words `keyword_value` takes as a secret's name.
_KEYWORDS = [
    "password", "passwd", "passphrase", "_pwd", "_pass", "secret", "token", "credential",
    "credentials", "auth", "apikey", "client_secret", "clientsecret",
    *(
        stem + glue + "key"
        for stem in ("access", "private", "secret", "auth", "encryption", "signing", "master")
        for glue in ("", "_")
    ),
    *("api" + glue + "key" for glue in (" ", "_", "-", "")),
]  # fmt: skip

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


def _credential_like(value: str) -> bool:
    """A header-ish value that could be a credential: a digit in it, 20+ characters, or random
    letters, and not a placeholder or a version (see :mod:`.values`). Keeps YAML such as
    GitHub Actions' ``id-token: write`` and ``path-key: 4.0.0`` readable."""
    return (
        len(value) >= 20 or any(char.isdigit() for char in value) or looks_random(value)
    ) and not ordinary(value)


def _a_value(value: str) -> bool:
    """A value next to a secret's name that may be one: not a placeholder, a boolean, a call, a
    reference or a version (``SECRET_KEY='dev'``, ``auth=True``, ``token=make_token()``)."""
    return not ordinary(value)


# Where two string literals meet (`"abc" "def"`: Python and C join them into one).
_JOINT = re.compile(r"""["'`][ \t]*["'`]""")


def _generated(value: str) -> bool:
    """A value written with spaces or a colon (code, config) that looks generated, and is not
    one of the values :func:`_a_value` refuses; literals written one after another count as
    the one string they make."""
    value = _JOINT.sub("", value)
    return looks_random(value) and not ordinary(value)


# The token formats' prefixes, by length: a value named in prose that starts with one is left
# to its format, which knows where it ends and names it.
_TOKEN_PREFIXES = frozenset(prefix for rule in TOKEN_RULES for prefix in rule.prefixes)
_PREFIX_LENGTHS = tuple(sorted({len(prefix) for prefix in _TOKEN_PREFIXES}))


def _said(value: str) -> bool:
    """A value named in prose (``the previous key was X``) that is a secret: it looks generated,
    holds a digit (``Token De/Serializer`` does not), and is not a commit sha or a digest, which
    prose names far more often, nor a token of a known format (``token ghp_...``: that format's
    own)."""
    bare = value.strip("'\"`")
    if len(bare) in (40, 64) and all(char in "0123456789abcdef" for char in bare):
        return False
    if any(bare[:n] in _TOKEN_PREFIXES for n in _PREFIX_LENGTHS):
        return False
    return any(char.isdigit() for char in bare) and _generated(bare)


CONTEXT_RULES: tuple[Rule, ...] = (
    # --- Multi-line blocks first: a key body may contain anything the later rules would match.
    # The markers stay (they say what was pasted); the body goes. Without an END marker the rest
    # of the text is the body: a truncated key is still a key.
    context_rule(
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
    context_rule(
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
    context_rule(
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
        accept=_credential_like,
    ),
    # A bare `Bearer <token>` outside a header (logs, scripts). The token must be token-shaped
    # (8+ characters with a digit) so "Bearer tokens expire" stays readable. `%` is part of it:
    # URL-encoded tokens (Twitter's) would otherwise lose only their first piece.
    context_rule(
        "bearer_token",
        r"[Bb](?<![\w-][Bb])(?i:earer)[ \t]+"
        r"(?P<secret>" + _FRESH + r"(?=[a-zA-Z._~+/%-]*\d)[\w.~+/%-]{8,}=*)",
        "echo Bearer eyJ0eXAi0iJKV1Q",
        "echo Bearer [REDACTED]",
        ("bearer",),
        group="secret",
    ),
    # --- URLs. The password of `scheme://user:pass@host`; user and host stay. The password
    # cannot contain `/` or `@`, which keeps `host:8080/path` out and the scan short.
    context_rule(
        "url_credentials",
        r"""://(?<=[a-z0-9]://)[^\s:/?#@'"]*:(?P<secret>""" + _FRESH + r"""(?!\$)[^\s/@'"]+)@""",
        "git clone https://alice:s3cr3t@git.example.com/repo.git",
        "git clone https://alice:[REDACTED]@git.example.com/repo.git",
        ("://",),
        group="secret",
        flags=_I,
        accept=_a_value,
    ),
    context_rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9/_+-]+)",
        "curl -X POST https://hooks.slack.com/services/T000/B000/XXXXXXXX -d '{}'",
        "curl -X POST https://hooks.slack.com/services/[REDACTED] -d '{}'",
        ("hooks.slack.com",),
        group="secret",
    ),
    context_rule(
        "discord_webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/(?P<secret>[\w-]+)",
        "curl https://discord.com/api/webhooks/123456/abcDEF-ghi_789",
        "curl https://discord.com/api/webhooks/123456/[REDACTED]",
        ("discord",),
        group="secret",
    ),
    # Microsoft Teams incoming webhooks, and the Office 365 connectors before them: the path
    # after the host is the credential.
    context_rule(
        "teams_webhook",
        r"https://(?:[a-z0-9-]+\.webhook\.office\.com/webhookb2"
        r"|outlook\.office(?:365)?\.com/webhook)/(?P<secret>[A-Za-z0-9@/_-]+)",
        'curl -d \'{"text":"deployed"}\' https://acme.webhook.office.com/webhookb2/'
        "82c5eaeb-b0dd-a26c-f40e-2d3b343660f1@28dfc44d-2487-5060-7372-5ec81cf1143d/IncomingWebhook/"
        "c858ac58669a963f847191e9acd00685/843507b0-10ab-1b96-d6d5-55b0e18b301c/"
        "V24zk_M3ruzVqgioLQ0GvalF0MGP_tf0gTz2kypwPCfjx",
        'curl -d \'{"text":"deployed"}\' https://acme.webhook.office.com/webhookb2/[REDACTED]',
        (".office",),
        group="secret",
    ),
    # --- Token formats the token table cannot find, looking only where a run of token
    # characters starts with a prefix: their literal is inside them, or not made of token
    # characters. Line rules: each runs only over the lines holding its literal. Where the
    # literal sits in a long run of token characters (`run=`), only the long runs of a text are
    # searched for it: a text has few, and a substring search of a whole text costs more.
    # Terraform Cloud / HCP Terraform API tokens: 14 characters, `.atlasv1.`, 60-70 more.
    context_rule(
        "terraform_api_token",
        r"(?<![A-Za-z0-9_.-])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}(?![A-Za-z0-9_=-])",
        "terraform login app.terraform.io <<< xknr26gn4aZ9g5.atlasv1.Cn3itnvkbGt318VtEshb8hxXhDe"
        "cWSrzlb4mbesRlff2obvEV7WIctGUVmUUknhr3gs",
        "terraform login app.terraform.io <<< [REDACTED]",
        ("atlasv1",),
        run=23,  # 14 + `.atlasv1.`, then the body up to its first `=`
    ),
    # Telegram bot tokens: the bot's numeric id, `:AA`, 33 characters.
    context_rule(
        "telegram_bot_token",
        r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])",
        "curl https://api.telegram.org/bot3982597919:AAb8HDy88YtDtXbiufMdI8X2Y4rUmer-BH3/getMe",
        "curl https://api.telegram.org/bot[REDACTED]/getMe",
        ("aa",),
        run=35,  # `AA` and 33 more, after the `:`
    ),
    # Mailchimp API keys: 32 hex digits, then the data centre (`-us14`).
    context_rule(
        "mailchimp_key",
        r"(?<![0-9a-f])[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9_-])",
        "mailchimp-cli --key 9dcbd7a085a368932ff2b2d409dd311c-us14 lists",
        "mailchimp-cli --key [REDACTED] lists",
        ("-us",),
        run=36,
    ),
    # Azure AD (Entra) client secrets: 3 characters, a digit, `Q~`, 31-34 more (then maybe a
    # file name's `.txt`).
    context_rule(
        "azure_client_secret",
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~-])",
        "az login -u app -p TLv8Q~J~EeNajnez0LHtfROUrWW6Xn~I3EM3HMRb --tenant t",
        "az login -u app -p [REDACTED] --tenant t",
        ("q~",),
    ),
    # Dropbox long-lived tokens: 11 characters, ten `A`s, 43 more, not all upper case (a run
    # of base64 zeros is not one).
    context_rule(
        "dropbox_long_lived_token",
        r"(?<![A-Za-z0-9])[A-Za-z0-9]{11}AAAAAAAAAA(?=[A-Za-z0-9_-]{0,42}[a-z0-9])"
        r"[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])",
        "dbxcli --token 0ubyidv3wwrAAAAAAAAAA_chcVG6MOwUxOVHMWndqNCIEPx3mnPQC4vkRB5ICpey ls",
        "dbxcli --token [REDACTED] ls",
        ("aaaaaaaaaa",),
        run=64,
    ),
    # OpenShift OAuth access tokens: `sha256~` (not a token character) and 43 characters. The
    # prefix stays: it says what was there.
    context_rule(
        "openshift_user_token",
        r"sha256~(?<![A-Za-z0-9_.-]sha256~)(?P<secret>[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])",
        "oc whoami -t  # sha256~pJPWKIDdVxjGMkIZYsaH5c7FXlDjP2N-Qs9_6NbgpII",
        "oc whoami -t  # sha256~[REDACTED]",
        ("sha256~",),
        group="secret",
    ),
    # MaxMind license keys: 6 characters, `_`, 29 more and `_mmk`.
    context_rule(
        "maxmind_license_key",
        r"(?<![A-Za-z0-9_.-])[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk(?![A-Za-z0-9_-])",
        "geoipupdate -v  # LicenseKey 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",
        "geoipupdate -v  # LicenseKey [REDACTED]",
        ("_mmk",),
        run=40,
    ),
    # Query parameters: `?password=`, `&access_token=`, `&api_key=`, Google's `?key=`, signed
    # URLs' `sig=` / `X-Amz-Signature=`. A prefix must end in a separator, so `&monkey=` and
    # `&bypass=` are not secrets.
    context_rule(
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
        accept=_a_value,
    ),
    # --- Structured payloads: `{"password": "..."}` in `curl -d`, also with the backslash-escaped
    # quotes of a double-quoted shell argument. The key must end with a secret word, so
    # `"token_type"` and `"max_tokens"` are kept. The first lookahead cheaply rejects the many
    # quotes that do not open a `"key":`.
    context_rule(
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
        accept=_a_value,
    ),
    # --- Command-specific forms. `aws configure set aws_secret_access_key VALUE` and the
    # credentials file's `aws_secret_access_key = VALUE` (spaces around `=`). The separator is
    # atomic: once `= [REDACTED]` is refused, the `=` must not be retried as the value.
    context_rule(
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
        accept=_a_value,
    ),
    # The MySQL family takes its password glued to `-p` (`-p secret` would prompt, then select
    # database "secret"). Only these clients: `mkdir -p`, `cp -p`, `ssh -p` mean something else.
    context_rule(
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
    context_rule(
        "sshpass_password",
        r"sshpass(?<![\w.-]sshpass)(?:[ \t]+-[a-oq-zA-Z]\S*)*+[ \t]+-p[ \t]*"
        r"(?P<secret>" + _VALUE + ")",
        "sshpass -p 'pa ss' ssh -p 2222 deploy@host",
        "sshpass -p [REDACTED] ssh -p 2222 deploy@host",
        ("sshpass",),
        group="secret",
    ),
    # `docker login -u user -p pw` and its siblings.
    context_rule(
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
    context_rule(
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
    context_rule(
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
    context_rule(
        "openssl_pass",
        r"-pass(?<!\S-pass)(?:in|out)?[ \t]+pass:(?P<secret>" + _VALUE + ")",
        "openssl pkcs12 -in cert.p12 -passin pass:hunter2 -nokeys",
        "openssl pkcs12 -in cert.p12 -passin pass:[REDACTED] -nokeys",
        ("pass:",),
        group="secret",
    ),
    # `keytool -storepass pw -keypass pw`.
    context_rule(
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
    context_rule(
        "secret_option",
        r"--(?<![\w-]--)(?!no-)(?=[a-z0-9_-]*?"
        r"(?:password|passwd|passphrase|secret|token|auth|bearer|api[_-]?key|apikey"
        r"|access[_-]?key|secret[_-]?key|credentials?)(?:=|[ \t]))"
        r"[a-z0-9_-]++(?:=|[ \t]+)(?P<secret>" + _ARG + ")",
        "gh auth login --hostname ghe.example.com --token abc123",
        "gh auth login --hostname ghe.example.com --token [REDACTED]",
        ("pass", "secret", "token", "auth", "bearer", "key", "credential"),
        group="secret",
        flags=_I,
        accept=_a_value,
    ),
    # --- `NAME=value` / `export NAME=value` / `-Dname=value` where the name ends with a secret
    # word (any case). Anchored on `=`, the name checked by lookbehind.
    context_rule(
        "secret_assignment",
        "=(?<="
        + _NAME_LAST_LETTERS
        + "=)"
        + _preceded_by(*(word + "=" for word in _NAME_ENDINGS))
        + r"(?P<secret>"
        + _ASSIGNED
        + ")",
        "export DB_PASSWORD='p@ss w0rd' && ./migrate",
        "export DB_PASSWORD=[REDACTED] && ./migrate",
        _NAME_TRIGGERS,
        group="secret",
        flags=_I,
        accept=_a_value,
    ),
    # fish has no `NAME=value`: `set -gx DB_PASSWORD hunter2`. The name is bounded (64) and
    # must end in a secret word, as for assignments; the first value after it is the secret.
    context_rule(
        "fish_set_secret",
        r"set(?<![\w-]set)(?:[ \t]++-[a-zA-Z]{1,8}+){0,4}+[ \t]++[A-Za-z0-9_]{0,64}?(?:"
        + "|".join(_NAME_ENDINGS)
        + r")(?![A-Za-z0-9_])[ \t]++(?P<secret>"
        + _ARG
        + ")",
        "set -gx OPENAI_API_KEY sk-live-0123; and make",
        "set -gx OPENAI_API_KEY [REDACTED]; and make",
        _NAME_TRIGGERS,
        group="secret",
        flags=_I,
        accept=_a_value,
    ),
    # Upper-case environment names whose secret word is followed by `_`: `SECRET_KEY_BASE`,
    # `TOKEN_FILE`. Anchored on that `_`; case-sensitive, so lowercase code is left alone. The
    # rest of the name is bounded: every `_` of a long `TOKEN_TOKEN_...` run is a candidate, and
    # an unbounded scan to the `=` from each would be quadratic.
    context_rule(
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
        accept=_a_value,
    ),
    # A `.netrc` line: `machine host login user password VALUE`. The word `password` alone is
    # prose as often, so it must follow `login <user>`.
    context_rule(
        "netrc_password",
        r"""(?<![\w-])login[ \t]+[^\s'"]+[ \t]+(?:password|passwd)[ \t]+"""
        r"""(?P<secret>""" + _VALUE + r""")""",
        "machine api.example.com login deploy password 9f8e7d6c5b4a",
        "machine api.example.com login deploy password [REDACTED]",
        ("login",),
        group="secret",
        accept=_a_value,
    ),
    # XML settings that name the secret in one attribute and hold it in the next:
    # `<add key="ClearTextPassword" value="..." />` (NuGet), `<entry key="db.password" value=`.
    context_rule(
        "xml_key_value",
        r"""key=(?P<q>["'])[\w.:-]{0,60}?"""
        r"""(?:password|passwd|secret|token|api_?key|apikey|credential)(?P=q)[ \t]+value="""
        r"""(?P<v>["'])(?P<secret>""" + _FRESH + r"""(?!\$)[^"'\n]+)(?P=v)""",
        '<add key="ClearTextPassword" value="9f8e7d6c5b4a" />',
        '<add key="ClearTextPassword" value="[REDACTED]" />',
        ("pass", "secret", "token", "key", "credential"),
        group="secret",
        flags=_I,
        accept=_a_value,
    ),
    # --- Written as code and config files write it: `api_key = "..."`, `token: ...` (YAML),
    # `secret := "..."` (Go), `:password => '...'` (Ruby), TOML and INI; a YAML block scalar,
    # whose value is the next line (`password: |`, then the value indented; in a patch after
    # the line's `+`: line gathering takes that line too, see scan.line_spans); Python's
    # literals written one after another (`("abc" "def")`), one string. The name must end with a
    # secret word, as for assignments, and since a space or a colon is just as often code
    # (`token = next_token(s)`, `password: str`), the value must also look generated: see
    # `entropy.looks_random`. A quoted value runs to its closing quote; an unquoted one must end
    # at a space or a delimiter, so a call or an index (`secret = vault.read(...)`) is refused
    # whole.
    context_rule(
        "keyword_value",
        _alternation(_KEYWORDS) + r"""(?![A-Za-z0-9_])["']?"""
        r"""(?::[ \t]*[|>][-+0-9]{0,2}[ \t]*\n[+-]?[ \t]++"""
        r"""|[ \t]*(?::=|=>|\?=|[:=])[ \t]*+\(?[ \t]*|[ \t]+is[ \t]+)"""
        r"""(?P<q>["'`])?(?P<secret>"""
        + _FRESH
        + r"""(?(q)[^"'`\n]{1,200}+(?:(?P=q)[ \t]*+(?P=q)[^"'`\n]{1,200}+){0,8}+"""
        r"""|[A-Za-z0-9_.=+/~!@#$%^&*?:-]{8,200}+))"""
        r"""(?(q)(?P=q)|(?![^\s,;)\]}]))""",
        'client = Client(api_key = "9f8e7d6c5b4a3f2e1d0c", retries=3)',
        'client = Client(api_key = "[REDACTED]", retries=3)',
        _NAME_TRIGGERS,
        group="secret",
        flags=_I,
        accept=_generated,
    ),
    # A value handed to a login on stdin: `echo X | gh auth login --with-token`, `printf %s X |
    # docker login --password-stdin`. Whatever is piped into a login is its secret.
    context_rule(
        "piped_login_secret",
        r"""(?:echo(?<![\w-]echo)|printf(?<![\w-]printf))(?:[ \t]++-[neE]{1,3}+)?"""
        r"""(?:[ \t]++["']?%s(?:\\n)?["']?)?"""
        r"""[ \t]++(?P<secret>""" + _VALUE + r""")[ \t]*+\|[^\n|;&]{0,120}?(?<![\w-])login"""
        r"""(?![\w-])""",
        "echo 9f8e7d6c5b4a3f2e1d0c | gh auth login --with-token",
        "echo [REDACTED] | gh auth login --with-token",
        ("login",),
        group="secret",
        flags=_I,
        accept=_a_value,
    ),
    # Prose: a secret's name, maybe `was` or `is`, then a value that looks generated, with no
    # `=` or `:` between (`the previous key was X`, `failed for key X`, `secret X`).
    context_rule(
        "prose_secret",
        r"""(?:key(?<![\w-]key)|token(?<![\w-]token)|password(?<![\w-]password)|passwd(?<![\w-]passwd)"""
        r"""|passphrase(?<![\w-]passphrase)|secret(?<![\w-]secret)"""
        r"""|credential(?<![\w-]credential))(?![\w-])[ \t]++(?:(?:was|is|were|are)[ \t]++)?"""
        r"""(?P<q>["'`])?(?P<secret>""" + _FRESH + r"""(?(q)[^"'`\s]{12,200}+"""
        r"""|[A-Za-z0-9_=+/~!@#$%^&*?-][A-Za-z0-9_.=+/~!@#$%^&*?-]{10,198}"""
        r"""[A-Za-z0-9_=+/~!@#$%^&*?-]))(?(q)(?P=q)|(?![^\s,;:.)\]}]))""",
        "Rotated it: the previous key was 9f8e7d6c5b4a3f2e1d0c, do not reuse it.",
        "Rotated it: the previous key was [REDACTED], do not reuse it.",
        ("key", "token", "pass", "secret", "credential"),
        group="secret",
        flags=_I,
        accept=_said,
    ),
)
