"""Secrets that only their context gives away: a random value with no prefix, next to a word
that says what it is, written the many ways people write it.

Each style is a line with ``{v}`` where the value goes (replaced, not ``str.format``-ed), and
says where such a line lives (``kind``): typed at a shell (``shell``), in a config file of some
``fmt`` (``config``), in source code (``code``), or in prose (``prose``: a commit message, a
chat, a README). Values are
what generators and people make: hex, base64 and alphanumeric runs of 16-48 characters, and
human passwords like ``Tr0ub4dor&3xyz``, of which every character is the secret.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass

from .formats import ALNUM, HEX, pick

__all__ = ["STYLES", "Style", "value"]

_BASE64 = ALNUM + "+/"
_WORDS = [
    "troubadour", "correct", "horse", "battery", "staple", "sunflower", "marmalade", "lantern",
    "pelican", "granite", "harbour", "quantum", "velvet", "orchid", "thunder", "juniper",
]  # fmt: skip
_LEET = str.maketrans({"o": "0", "a": "4", "e": "3", "i": "1", "s": "5"})
_SYMBOLS = "!#%&*+-.=?@^_~"


def _human(r: random.Random) -> str:
    """A password a person chose: a capitalised word, leet-speak, a symbol, a short tail."""
    word = r.choice(_WORDS)
    word = word[0].upper() + word[1:].translate(_LEET) if r.random() < 0.7 else word.title()
    tail = r.choice([str(r.randint(1, 99)), pick(r, "xyzqk", 3), r.choice(_WORDS)[:4]])
    return f"{word}{r.choice(_SYMBOLS)}{r.randint(0, 9)}{tail}"


def value(r: random.Random, shape: str) -> str:
    """A fresh value: ``hex``, ``base64``, ``alnum`` (16-48 characters), ``basic`` (base64 of
    ``user:password``) or ``human``."""
    if shape == "human":
        return _human(r)
    if shape == "basic":
        pair = f"{r.choice(['deploy', 'ci', 'admin'])}:{pick(r, ALNUM, r.randint(16, 32))}"
        return base64.b64encode(pair.encode()).decode()
    n = r.randint(16, 48)
    if shape == "hex":
        return pick(r, HEX, n)
    if shape == "base64":
        body = pick(r, _BASE64, n - n % 4)
        return body if r.random() < 0.5 else body[:-2] + "=="
    return pick(r, ALNUM, n)


@dataclass(frozen=True)
class Style:
    """A way of writing a secret: ``template`` holds ``{v}``, or ``{v1}`` and ``{v2}`` for a
    value written in two pieces (two string literals, a word continued on the next line)."""

    name: str
    kind: str  # shell | config | code | prose
    fmt: str  # config: the file format it belongs in; otherwise the language
    template: str
    shapes: tuple[str, ...] = ("hex", "base64", "alnum")

    @property
    def split(self) -> bool:
        """Whether the value is written in two pieces."""
        return "{v1}" in self.template


S = Style
STYLES: list[Style] = [
    # At a shell prompt, or in a script.
    S("env-prefix", "shell", "sh", "DB_PASSWORD={v} ./manage.py migrate"),
    S("env-prefix-token", "shell", "sh", "API_TOKEN={v} npm run deploy:staging"),
    S("export", "shell", "sh", "export X_API_KEY={v}"),
    S("export-quoted", "shell", "sh", 'export STRIPE_SECRET_KEY="{v}"'),
    S("export-client-secret", "shell", "sh", "export OAUTH_CLIENT_SECRET={v}"),
    S("pgpassword", "shell", "sh", "PGPASSWORD={v} psql -h db.internal -U app app"),
    S("fish-set", "shell", "fish", "set -x GITLAB_TOKEN {v}"),
    S("password-option", "shell", "sh", "x-cli login --username deploy --password {v}"),
    S("password-equals", "shell", "sh", "x-cli login --username deploy --password={v}"),
    S("token-equals", "shell", "sh", "x-cli deploy --env prod --token={v}"),
    S("token-option", "shell", "sh", "x-cli releases list --token {v}"),
    S("api-key-option", "shell", "sh", "x-cli --api-key {v} status"),
    S("client-secret-option", "shell", "sh", "x-cli auth --client-id web --client-secret {v}"),
    S("mysql-p", "shell", "sh", "mysql -u root -p{v} -h db.internal shop"),
    S("curl-user", "shell", "sh", "curl -u deploy:{v} https://ci.example.com/api/json"),
    S("curl-bearer", "shell", "sh", 'curl -H "Authorization: Bearer {v}" https://api.example.com/v1/me'),
    S("curl-basic", "shell", "sh",
      'curl -H "Authorization: Basic {v}" https://registry.example.com/v2/', ("basic",)),
    S("curl-token", "shell", "sh", 'curl -H "Authorization: token {v}" https://api.github.com/user'),
    S("curl-api-key-header", "shell", "sh",
      "curl -H 'X-API-Key: {v}' https://api.example.com/v2/orders"),
    S("sshpass", "shell", "sh", "sshpass -p '{v}' ssh deploy@10.0.4.12", ("alnum", "human")),
    S("docker-login", "shell", "sh", "docker login -u deploy -p {v} registry.example.com"),
    S("kubectl-literal", "shell", "sh",
      "kubectl create secret generic db --from-literal=password={v}"),
    S("aws-configure", "shell", "sh", "aws configure set aws_secret_access_key {v}", ("base64",)),
    S("heroku-config", "shell", "sh", "heroku config:set SECRET_KEY_BASE={v} -a shop"),
    S("git-url-token", "shell", "sh",
      "git clone https://oauth2:{v}@gitlab.example.com/shop/api.git", ("alnum", "hex")),
    S("piped-login", "shell", "sh", "echo {v} | x-cli login --with-token"),
    S("printf-login", "shell", "sh", "printf %s {v} | docker login -u ci --password-stdin"),
    # A word the shell joins across a backslash-newline: its second half is on the next line.
    S("export-continued", "shell", "sh", "export DEPLOY_TOKEN={v1}\\\n  {v2} && ./deploy.sh"),
    # In config files.
    S("yaml", "config", "yaml", "api_key: {v}"),
    S("yaml-quoted", "config", "yaml", 'password: "{v}"', ("alnum", "human")),
    S("yaml-nested", "config", "yaml", "  client_secret: '{v}'"),
    S("toml", "config", "toml", 'token = "{v}"'),
    S("toml-secret-key", "config", "toml", 'secret_key = "{v}"'),
    S("ini", "config", "ini", "password = {v}", ("alnum", "human")),
    S("json", "config", "json", '"api_key": "{v}"'),
    S("json-camel", "config", "json", '"clientSecret": "{v}"'),
    S("json-docker-auth", "config", "json", '"auth": "{v}"', ("basic",)),
    S("dotenv", "config", "env", "SECRET_KEY={v}"),
    S("dotenv-quoted", "config", "env", 'DATABASE_PASSWORD="{v}"', ("alnum", "human")),
    S("dotenv-single", "config", "env", "AUTH_TOKEN='{v}'"),
    S("npmrc", "config", "npmrc", "//registry.npmjs.org/:_authToken={v}", ("alnum",)),
    S("netrc", "config", "netrc", "machine api.example.com login deploy password {v}"),
    S("properties", "config", "properties", "spring.datasource.password={v}", ("alnum", "human")),
    S("nuget", "config", "xml", '<add key="ClearTextPassword" value="{v}" />'),
    S("terraform", "config", "tf", '  password = "{v}"', ("alnum", "human")),
    S("yaml-block", "config", "yaml", "password: |\n  {v}"),
    # In source code.
    S("python-assign", "code", "py", 'x_api_token = "{v}"'),
    S("python-kwarg", "code", "py", 'client = Client(api_key="{v}", timeout=10)'),
    S("python-header", "code", "py", 'headers = {"Authorization": "Bearer {v}"}'),
    S("js-const", "code", "js", "const apiSecret = '{v}';"),
    S("js-object", "code", "js", '  password: "{v}",', ("alnum", "human")),
    S("go-const", "code", "go", 'const authToken = "{v}"'),
    S("ruby-config", "code", "rb", 'config.secret_key = "{v}"'),
    S("java-constant", "code", "java", 'private static final String API_KEY = "{v}";'),
    # Implicit string concatenation: two literals that Python joins into one.
    S("python-concat", "code", "py", 'API_KEY = ("{v1}" "{v2}")'),
    # In prose: a commit message, a chat, a README.
    S("prose-password-equals", "prose", "text",
      "For staging log in as admin with password={v} until SSO lands.", ("human",)),
    S("prose-password-colon", "prose", "text",
      "The shared test account is qa@example.com, password: {v}", ("human",)),
    S("prose-api-key", "prose", "text", "I set the api key: {v} in the dashboard."),
    S("prose-token-is", "prose", "text", "the deploy token is {v} if you need it", ("alnum",)),
    S("prose-previous-key", "prose", "text",
      "Rotated the staging credentials; the previous key was {v}, do not reuse it."),
    S("prose-failed-for-key", "prose", "text", "The upload failed for key {v} after the rotation."),
    S("prose-secret-bare", "prose", "text", "Use secret {v} for the staging webhook until Friday."),
]  # fmt: skip
