"""The token formats providers issue, as generators: prefix, length and alphabet as issued.

The shapes were learnt from gitleaks' default rule set (``config/gitleaks.toml`` and its rule
generators), and for a dozen formats it lacks from the providers' documentation and public
examples; the generators are written here, and no token or pattern is copied. Where gitleaks'
pattern is narrower than what providers issue, the provider wins: Mailchimp's data centres run
from ``us1`` (gitleaks wants two digits), and a Mapbox token's middle is base64 JSON whose length
follows the user name (gitleaks wants exactly 60 characters).
Where a provider builds its token from parts (GitHub's CRC32 checksum, a JWT's JSON header, an
OpenSSH key's binary layout, a Grafana Cloud token's base64 JSON) the parts are built, so a
detector cannot lean on a shape no real token has. Only formats that are recognisable on their
own belong here (a prefix, a fixed marker, a distinctive layout); a bare UUID or 32 hex digits
that only a nearby keyword makes secret are the keyword corpus's business (``keywords.py``).
"""

from __future__ import annotations

import base64
import json
import random
import string
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["FORMATS", "KINDS", "Format"]

DIGITS = string.digits
HEX = "0123456789abcdef"
HEX_UPPER = HEX.upper()
LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
ALNUM = DIGITS + UPPER + LOWER
LOWER_ALNUM = DIGITS + LOWER
UPPER_ALNUM = DIGITS + UPPER
WORD = ALNUM + "_"  # \w
URLSAFE = ALNUM + "-_"  # base64url, and the [\w-] of many formats
BASE32 = UPPER + "234567"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
ONEPASSWORD = "23456789ABCDEFGHJKLMNPQRSTVWXYZ"  # capitals and digits, look-alikes left out


def pick(r: random.Random, alphabet: str, n: int) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def b64(data: bytes, url: bool = False, pad: bool = False) -> str:
    text = (base64.urlsafe_b64encode if url else base64.b64encode)(data).decode()
    return text if pad else text.rstrip("=")


def b64json(value: object, url: bool = True) -> str:
    return b64(json.dumps(value, separators=(",", ":")).encode(), url=url)


def uuid(r: random.Random) -> str:
    h = pick(r, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{r.choice('89ab')}{h[17:20]}-{h[20:]}"


@dataclass(frozen=True)
class Format:
    """One provider's token format: ``make`` issues a token, ``part`` picks out what is secret
    in it (the password of a connection string, the path of a webhook; the whole by default).
    ``kind`` says how it is carried: ``token`` (one word), ``url`` or ``pem`` (several lines)."""

    provider: str
    family: str
    make: Callable[[random.Random], str]
    part: Callable[[str], str] = lambda value: value
    kind: str = "token"


# --- Builders for tokens with inner structure ------------------------------------------------

_BASE62 = DIGITS + UPPER + LOWER


def _checksummed(r: random.Random, prefix: str) -> str:
    """GitHub's (and npm's) layout: 30 random base62 characters, then the CRC32 of them in
    base62, padded to 6."""
    body = pick(r, ALNUM, 30)
    crc, digits = zlib.crc32(body.encode()), ""
    while crc:
        crc, rem = divmod(crc, 62)
        digits = _BASE62[rem] + digits
    return prefix + body + digits.rjust(6, "0")


def _jwt(r: random.Random) -> str:
    alg = r.choice(["HS256", "RS256", "ES256"])
    header = {"alg": alg, "typ": "JWT"} | ({"kid": pick(r, URLSAFE, 16)} if alg != "HS256" else {})
    now = 1_760_000_000 + r.randrange(10_000_000)
    claims = {
        "sub": str(r.randrange(10**6, 10**9)),
        "name": r.choice(["deploy-bot", "ci", "Ada Lovelace", "svc-billing"]),
        "iat": now,
        "exp": now + r.choice([900, 3600, 86400]),
        "iss": r.choice(["https://auth.example.com/", "accounts", "api"]),
    }
    signature = {"HS256": 32, "RS256": 256, "ES256": 64}[alg]
    return f"{b64json(header)}.{b64json(claims)}.{b64(r.randbytes(signature), url=True)}"


def _pem(label: str, der_prefix: bytes, size: int, width: int = 64) -> Callable[..., str]:
    def make(r: random.Random) -> str:
        der = der_prefix + r.randbytes(size - len(der_prefix))
        text = b64(der, pad=True)
        body = "\n".join(text[i : i + width] for i in range(0, len(text), width))
        return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"

    return make


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _openssh_ed25519(r: random.Random) -> str:
    """An unencrypted OpenSSH private key in its real binary layout (PROTOCOL.key)."""
    public = r.randbytes(32)
    blob = _ssh_string(b"ssh-ed25519") + _ssh_string(public)
    check = r.randbytes(4)
    private = check + check + blob + _ssh_string(r.randbytes(32) + public)
    private += _ssh_string(f"{pick(r, LOWER, 6)}@{pick(r, LOWER, 5)}".encode())
    private += bytes(range(1, 1 + (-len(private) % 8)))
    key = b"openssh-key-v1\0" + _ssh_string(b"none") + _ssh_string(b"none") + _ssh_string(b"")
    key += struct.pack(">I", 1) + _ssh_string(blob) + _ssh_string(private)
    text = b64(key, pad=True)
    body = "\n".join(text[i : i + 70] for i in range(0, len(text), 70))
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"


def _pgp(r: random.Random) -> str:
    text = b64(b"\x95\x03\x98\x04" + r.randbytes(900), pad=True)
    body = "\n".join(text[i : i + 64] for i in range(0, len(text), 64))
    crc = b64(r.randbytes(3))
    return (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        f"{body}\n={crc}\n-----END PGP PRIVATE KEY BLOCK-----"
    )


def _password(r: random.Random) -> str:
    return pick(r, ALNUM, r.randint(16, 32)) if r.random() < 0.7 else pick(r, URLSAFE + ".~", 24)


def _url_password(value: str) -> str:
    return urlsplit(value).password or ""


def _grafana_cloud(r: random.Random) -> str:
    org = str(r.randrange(100_000, 999_999))
    token = {"o": org, "n": f"stack-{org}-hm-read", "k": pick(r, ALNUM, 24), "m": {"r": "us"}}
    return "glc_" + b64json(token, url=False)


def _grafana_legacy(r: random.Random) -> str:
    return b64json({"k": pick(r, ALNUM, 32), "n": pick(r, LOWER, 8), "id": r.randrange(1, 99)})


def _onepassword_service(r: random.Random) -> str:
    account = {
        "signInAddress": "my.1password.com",
        "userAuth": {"method": "SRPg-4096", "alg": "PBES2g-HS256", "iterations": 650000,
                     "salt": pick(r, URLSAFE, 22)},
        "email": f"{pick(r, LOWER_ALNUM, 13)}@1passwordserviceaccounts.com",
        "srpX": pick(r, HEX, 64),
        "muk": {"alg": "A256GCM", "ext": True, "k": pick(r, URLSAFE, 43),
                "key_ops": ["encrypt", "decrypt"], "kty": "oct", "kid": "mp"},
        "secretKey": _onepassword_secret(r),
        "throttleSecret": {"seed": pick(r, HEX, 64), "uuid": pick(r, UPPER_ALNUM, 26)},
        "deviceUuid": pick(r, LOWER_ALNUM, 26),
    }  # fmt: skip
    return "ops_" + b64json(account, url=False)


def _onepassword_secret(r: random.Random) -> str:
    groups = [pick(r, ONEPASSWORD, n) for n in (6, 6, 5, 5, 5, 5)]
    return "A3-" + "-".join(groups)


def _sentry_org(r: random.Random) -> str:
    org = pick(r, LOWER, 8)
    claims = {
        "iat": round(1_760_000_000 + r.random() * 1e7, 6),
        "url": "https://sentry.io",
        "region_url": "https://us.sentry.io",
        "org": org,
    }
    return f"sntrys_{b64json(claims, url=False)}_{pick(r, ALNUM + '+/', 43)}"


def _mapbox(prefix: str) -> Callable[[random.Random], str]:
    def make(r: random.Random) -> str:
        claims = {"u": pick(r, LOWER, r.randint(5, 12)), "a": pick(r, LOWER_ALNUM, 25)}
        return f"{prefix}.{b64json(claims)}.{pick(r, URLSAFE, 22)}"

    return make


def _bedrock_long(r: random.Random) -> str:
    account = "".join(r.choice(DIGITS) for _ in range(12))
    inner = f"BedrockAPIKey-{pick(r, LOWER_ALNUM, 4)}-at-{account}:{b64(r.randbytes(45))}"
    return "ABSK" + b64(inner.encode(), pad=True)


def _bedrock_short(r: random.Random) -> str:
    query = (
        "bedrock.amazonaws.com/?Action=CallWithBearerToken&X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential=ASIA{pick(r, BASE32, 16)}%2F20260101%2Fus-east-1%2Fbedrock"
        f"&X-Amz-Date=20260101T000000Z&X-Amz-Expires=43200&X-Amz-Signature={pick(r, HEX, 64)}"
    )
    return "bedrock-api-key-" + b64(query.encode(), pad=True) + "&Version=1"


def _teams_webhook(r: random.Random) -> str:
    tenant = pick(r, LOWER, r.randint(5, 10))
    return (
        f"https://{tenant}.webhook.office.com/webhookb2/{uuid(r)}@{uuid(r)}"
        f"/IncomingWebhook/{pick(r, HEX, 32)}/{uuid(r)}"
    )


def _pem_body(value: str) -> str:
    return "\n".join(value.splitlines()[1:-1]).strip()


def _key(provider: str, label: str, der_prefix: str, size: int) -> Format:
    return Format(provider, "pem", _pem(label, bytes.fromhex(der_prefix), size), _pem_body, "pem")


def _after(marker: str) -> Callable[[str], str]:
    return lambda value: value.split(marker, 1)[1]


def _slack_webhook(r: random.Random) -> str:
    team, channel = "T" + pick(r, UPPER_ALNUM, 8), "B" + pick(r, UPPER_ALNUM, r.choice([8, 10]))
    return f"https://hooks.slack.com/services/{team}/{channel}/{pick(r, ALNUM, 24)}"


def _digits(r: random.Random, n: int) -> str:
    return r.choice("123456789") + pick(r, DIGITS, n - 1)


def _openai(kind: str, side: int) -> Callable[[random.Random], str]:
    def make(r: random.Random) -> str:
        tail = pick(r, URLSAFE, side - 1) + r.choice(ALNUM)
        return f"sk-{kind}-{pick(r, URLSAFE, side)}T3BlbkFJ{tail}"

    return make


def _discord(r: random.Random) -> str:
    """A bot token: the bot's snowflake id in base64, a timestamp part, an HMAC part."""
    snowflake = str(r.randrange(10**17, 2 * 10**18)).encode()
    return f"{b64(snowflake, url=True)}.{pick(r, URLSAFE, 6)}.{pick(r, URLSAFE, 38)}"


def _twitter_bearer(r: random.Random) -> str:
    return "A" * 22 + pick(r, ALNUM, 30) + "%2B" + pick(r, ALNUM, 20) + "%3D" + pick(r, ALNUM, 35)


def _t(prefix: str, alphabet: str, n: int, suffix: str = "") -> Callable[[random.Random], str]:
    return lambda r: prefix + pick(r, alphabet, n) + suffix


def _u(*parts: str | tuple[str, int]) -> Callable[[random.Random], str]:
    """A token of literal parts and ``(alphabet, length)`` runs."""
    return lambda r: "".join(p if isinstance(p, str) else pick(r, p[0], p[1]) for p in parts)


# Families that are kinds of secret rather than providers: private keys and database URLs.
KINDS = frozenset({"pem", "postgres", "mongodb", "redis", "mysql", "rabbitmq"})

# --- The table --------------------------------------------------------------------------------

F = Format
FORMATS: list[Format] = [
    F("github-pat", "github", lambda r: _checksummed(r, "ghp_")),
    F("github-oauth", "github", lambda r: _checksummed(r, "gho_")),
    F("github-user-to-server", "github", lambda r: _checksummed(r, "ghu_")),
    F("github-server-to-server", "github", lambda r: _checksummed(r, "ghs_")),
    F("github-refresh", "github", lambda r: _checksummed(r, "ghr_")),
    F("github-fine-grained-pat", "github", _u("github_pat_", (ALNUM, 22), "_", (ALNUM, 59))),
    F("gitlab-pat", "gitlab", _t("glpat-", URLSAFE, 20)),
    F("gitlab-pat-routable", "gitlab", _u("glpat-", (URLSAFE, 36), ".01", (LOWER_ALNUM, 7))),
    F("gitlab-deploy", "gitlab", _t("gldt-", URLSAFE, 20)),
    F("gitlab-feed", "gitlab", _t("glft-", URLSAFE, 20)),
    F("gitlab-incoming-mail", "gitlab", _t("glimt-", URLSAFE, 25)),
    F("gitlab-agent", "gitlab", _t("glagent-", URLSAFE, 50)),
    F("gitlab-oauth-secret", "gitlab", _t("gloas-", URLSAFE, 64)),
    F("gitlab-pipeline-trigger", "gitlab", _t("glptt-", HEX, 40)),
    F("gitlab-runner-registration", "gitlab", _t("GR1348941", URLSAFE, 20)),
    F("gitlab-runner-auth", "gitlab", _t("glrt-", URLSAFE, 20)),
    F("gitlab-runner-routable", "gitlab", _u("glrt-t1_", (URLSAFE, 27), ".01", (LOWER_ALNUM, 7))),
    F("gitlab-scim", "gitlab", _t("glsoat-", URLSAFE, 20)),
    F("gitlab-cicd-job", "gitlab", _u("glcbt-", (ALNUM, 2), "_", (URLSAFE, 20))),
    F("gitlab-feature-flag", "gitlab", _t("glffct-", URLSAFE, 20)),
    F("gitlab-session-cookie", "gitlab", _t("_gitlab_session=", LOWER_ALNUM, 32), _after("=")),
    F("slack-bot", "slack",
      lambda r: f"xoxb-{_digits(r, 12)}-{_digits(r, 13)}-{pick(r, ALNUM, 24)}"),
    F("slack-bot-legacy", "slack", lambda r: f"xoxb-{_digits(r, 11)}-{pick(r, ALNUM, 24)}"),
    F("slack-user", "slack",
      lambda r: f"xoxp-{_digits(r, 11)}-{_digits(r, 11)}-{_digits(r, 12)}-{pick(r, HEX, 32)}"),
    F("slack-app", "slack",
      lambda r: f"xapp-1-A{pick(r, UPPER_ALNUM, 10)}-{_digits(r, 13)}-{pick(r, HEX, 64)}"),
    F("slack-config-access", "slack", _t("xoxe.xoxp-1-", ALNUM, 164)),
    F("slack-config-refresh", "slack", _t("xoxe-1-", ALNUM, 146)),
    F("slack-legacy", "slack",
      lambda r: f"xoxs-{_digits(r, 10)}-{_digits(r, 11)}-{_digits(r, 12)}-{pick(r, HEX, 64)}"),
    F("slack-legacy-workspace", "slack", _t("xoxa-2-", ALNUM, 40)),
    F("slack-webhook", "slack", _slack_webhook, _after("/services/"), "url"),
    F("teams-webhook", "teams", _teams_webhook, _after("/webhookb2/"), "url"),
    F("shopify-access", "shopify", _t("shpat_", HEX, 32)),
    F("shopify-shared-secret", "shopify", _t("shpss_", HEX, 32)),
    F("shopify-custom-app", "shopify", _t("shpca_", HEX, 32)),
    F("shopify-private-app", "shopify", _t("shppa_", HEX, 32)),
    F("digitalocean-pat", "digitalocean", _t("dop_v1_", HEX, 64)),
    F("digitalocean-oauth", "digitalocean", _t("doo_v1_", HEX, 64)),
    F("digitalocean-refresh", "digitalocean", _t("dor_v1_", HEX, 64)),
    F("sendgrid", "sendgrid", _u("SG.", (URLSAFE, 22), ".", (URLSAFE, 43))),
    F("sendinblue", "brevo", _u("xkeysib-", (HEX, 64), "-", (ALNUM, 16))),
    F("linear", "linear", _t("lin_api_", ALNUM, 40)),
    F("planetscale-token", "planetscale", _t("pscale_tkn_", URLSAFE, 43)),
    F("planetscale-password", "planetscale", _t("pscale_pw_", URLSAFE, 43)),
    F("planetscale-oauth", "planetscale", _t("pscale_oauth_", URLSAFE, 43)),
    F("grafana-service-account", "grafana", _u("glsa_", (ALNUM, 32), "_", (HEX, 8))),
    F("grafana-cloud", "grafana", _grafana_cloud),
    F("grafana-api-key", "grafana", _grafana_legacy),
    F("anthropic-api", "anthropic", _u("sk-ant-api03-", (URLSAFE, 93), "AA")),
    F("anthropic-admin", "anthropic", _u("sk-ant-admin01-", (URLSAFE, 93), "AA")),
    F("openai-project", "openai", _openai("proj", 74)),
    F("openai-service-account", "openai", _openai("svcacct", 74)),
    F("openai-admin", "openai", _openai("admin", 58)),
    F("openai-legacy", "openai", _u("sk-", (ALNUM, 20), "T3BlbkFJ", (ALNUM, 20))),
    F("aws-access-key", "aws", _t("AKIA", BASE32, 16)),
    F("aws-temporary-key", "aws", _t("ASIA", BASE32, 16)),
    F("aws-bedrock-long-lived", "aws", _bedrock_long),
    F("aws-bedrock-short-lived", "aws", _bedrock_short),
    F("gcp-api-key", "gcloud", _t("AIza", URLSAFE, 35)),
    F("huggingface", "huggingface", _t("hf_", LOWER + UPPER, 34)),
    F("huggingface-org", "huggingface", _t("api_org_", LOWER + UPPER, 34)),
    F("npm", "npm", lambda r: _checksummed(r, "npm_")),
    F("pypi", "pypi", lambda r: "pypi-AgEIcHlwaS5vcmc" + b64(r.randbytes(120), url=True)),
    # A token scoped to projects carries its caveats: a longer macaroon. TestPyPI's location.
    F("pypi-scoped", "pypi",
      lambda r: "pypi-AgEIcHlwaS5vcmc" + b64(r.randbytes(r.randint(400, 1500)), url=True)),
    F("testpypi", "pypi",
      lambda r: "pypi-AgENdGVzdC5weXBpLm9yZw" + b64(r.randbytes(150), url=True)),
    F("jwt", "jwt", _jwt),
    F("jwt-base64", "jwt", lambda r: b64(_jwt(r).encode())),
    F("stripe-secret", "stripe", _t("sk_live_", ALNUM, 24)),
    F("stripe-secret-v2", "stripe", _t("sk_live_51", ALNUM, 97)),
    F("stripe-restricted", "stripe", _t("rk_live_51", ALNUM, 97)),
    F("stripe-test", "stripe", _t("sk_test_51", ALNUM, 97)),
    F("twilio-api-key", "twilio", _t("SK", HEX, 32)),
    F("mailgun-private", "mailgun", _t("key-", HEX, 32)),
    F("mailgun-public", "mailgun", _t("pubkey-", HEX, 32)),
    F("mailgun-signing", "mailgun", _u((HEX, 32), "-", (HEX, 8), "-", (HEX, 8))),
    F("mailchimp", "mailchimp", lambda r: f"{pick(r, HEX, 32)}-us{r.randint(1, 21)}"),
    F("doppler", "doppler", _t("dp.pt.", ALNUM, 43)),
    F("databricks", "databricks", _t("dapi", HEX, 32)),
    F("age", "age", _t("AGE-SECRET-KEY-1", BECH32.upper(), 58)),
    F("1password-secret-key", "1password", _onepassword_secret),
    F("1password-service-account", "1password", _onepassword_service),
    F("atlassian", "atlassian", _u("ATATT3xFfGF0", (URLSAFE, 171), "=", (HEX_UPPER, 8))),
    F("postman", "postman", _u("PMAK-", (HEX, 24), "-", (HEX, 34))),
    F("pulumi", "pulumi", _t("pul-", HEX, 40)),
    F("flyio-token", "fly", _t("fo1_", URLSAFE, 43)),
    F("flyio-macaroon", "fly", lambda r: "fm2_" + b64(r.randbytes(r.randint(150, 300)))),
    F("heroku-v2", "heroku", _t("HRKU-AA", URLSAFE, 58)),
    F("sentry-user", "sentry", _t("sntryu_", HEX, 64)),
    F("sentry-org", "sentry", _sentry_org),
    F("square-access", "square", _t("EAAA", URLSAFE, 60)),
    F("square-access-short", "square", lambda r: "EAAA" + pick(r, URLSAFE, r.randint(22, 59))),
    F("square-sandbox", "square", _t("sq0atp-", URLSAFE, 22)),
    F("dynatrace", "dynatrace", _u("dt0c01.", (UPPER_ALNUM, 24), ".", (UPPER_ALNUM, 64))),
    F("shippo-live", "shippo", _t("shippo_live_", HEX, 40)),
    F("shippo-test", "shippo", _t("shippo_test_", HEX, 40)),
    F("vault-service", "vault", _t("hvs.CAESI", URLSAFE, 86)),
    F("vault-batch", "vault", _t("hvb.AAAAAQ", URLSAFE, 150)),
    F("vault-legacy", "vault", _t("s.", ALNUM, 24)),
    F("alibaba", "alibaba", _t("LTAI", ALNUM, 20)),
    F("adafruit", "adafruit", _t("aio_", ALNUM, 28)),
    F("clojars", "clojars", _t("CLOJARS_", HEX, 60)),
    F("duffel-test", "duffel", _t("duffel_test_", URLSAFE, 43)),
    F("duffel-live", "duffel", _t("duffel_live_", URLSAFE, 43)),
    F("easypost", "easypost", _t("EZAK", ALNUM, 54)),
    F("easypost-test", "easypost", _t("EZTK", ALNUM, 54)),
    F("flutterwave-secret", "flutterwave", _t("FLWSECK_TEST-", HEX, 32, "-X")),
    F("flutterwave-public", "flutterwave", _t("FLWPUBK_TEST-", HEX, 32, "-X")),
    F("frameio", "frameio", _t("fio-u-", URLSAFE, 64)),
    F("gocardless", "gocardless", _t("live_", URLSAFE, 40)),
    F("gocardless-sandbox", "gocardless", _t("sandbox_", URLSAFE, 40)),
    F("gocardless-lower", "gocardless", _t("live_", LOWER_ALNUM + "_-", 40)),
    F("beamer", "beamer", _t("b_", URLSAFE, 43, "=")),
    F("beamer-lower", "beamer", _t("b_", LOWER_ALNUM + "_-", 43, "=")),
    F("prefect", "prefect", _t("pnu_", ALNUM, 36)),
    F("readme", "readme", _t("rdme_", LOWER_ALNUM, 70)),
    F("rubygems", "rubygems", _t("rubygems_", HEX, 48)),
    F("scalingo", "scalingo", _t("tk-us-", URLSAFE, 48)),
    F("typeform", "typeform", _u("tfp_", (ALNUM, 44), "_", (ALNUM, 14))),
    F("yandex-iam", "yandex", _u("t1.9euelZ", (URLSAFE, 110), ".", (URLSAFE, 86))),
    F("yandex-iam-rsa", "yandex", _u("t1.9euelZ", (URLSAFE, 140), ".", (URLSAFE, 342))),
    F("yandex-api-key", "yandex", _t("AQVN", URLSAFE, 36)),
    F("yandex-static-key", "yandex", _t("YC", URLSAFE, 38)),
    F("artifactory-api-key", "artifactory", _t("AKCp8", ALNUM, 68)),
    F("artifactory-reference", "artifactory", _t("cmVmdGtuOjAxOj", ALNUM, 50)),
    F("azure-ad-client-secret", "azure", _u((ALNUM, 3), (DIGITS, 1), "Q~", (URLSAFE + "~.", 34))),
    F("clickhouse", "clickhouse", _t("4b1d", ALNUM, 38)),
    F("cloudflare-origin-ca", "cloudflare", _u("v1.0-", (HEX, 24), "-", (HEX, 146))),
    F("defined-networking", "dnctl", _u("dnkey-", (UPPER_ALNUM, 26), "-", (UPPER_ALNUM, 52))),
    F("harness", "harness", _u("pat.", (URLSAFE, 22), ".", (ALNUM, 24), ".", (ALNUM, 20))),
    F("terraform-cloud", "terraform", _u((LOWER_ALNUM, 14), ".atlasv1.", (URLSAFE, 67))),
    F("infracost", "infracost", _t("ico-", ALNUM, 32)),
    F("intra42", "intra42", _t("s-s4t2ud-", HEX, 64)),
    F("maxmind", "maxmind", _u((ALNUM, 6), "_", (ALNUM, 29), "_mmk")),
    F("notion", "notion", _u("ntn_", (DIGITS, 11), (ALNUM, 35))),
    F("octopus-deploy", "octopus", _t("API-", UPPER_ALNUM, 26)),
    F("openshift", "oc", _t("sha256~", URLSAFE, 43)),
    F("perplexity", "perplexity", _t("pplx-", ALNUM, 48)),
    F("settlemint-personal", "settlemint", _t("sm_pat_", ALNUM, 16)),
    F("settlemint-application", "settlemint", _t("sm_aat_", ALNUM, 16)),
    F("settlemint-service", "settlemint", _t("sm_sat_", ALNUM, 16)),
    F("sourcegraph", "sourcegraph", _u("sgp_", (HEX, 16), "_", (HEX, 40))),
    F("authress", "authress",
      _u("sc_", (LOWER_ALNUM, 10), ".", (LOWER_ALNUM, 5), ".acc_", (LOWER_ALNUM, 20), ".",
         (ALNUM + "+/", 60))),
    F("airtable-pat", "airtable", _u("pat", (ALNUM, 14), ".", (HEX, 64))),
    F("adobe-client-secret", "adobe", _t("p8e-", ALNUM, 32)),
    F("dropbox-short-lived", "dropbox", _t("sl.", URLSAFE, 135)),
    F("dropbox-long-lived", "dropbox", _u((ALNUM, 11), "AAAAAAAAAA", (URLSAFE, 43))),
    F("facebook-page", "facebook", _t("EAAC", ALNUM, 150)),
    F("facebook-app", "facebook", lambda r: f"{_digits(r, 15)}|{pick(r, URLSAFE, 27)}"),
    F("twitter-bearer", "twitter", _twitter_bearer),
    F("mapbox-secret", "mapbox", _mapbox("sk")),
    F("mapbox-public", "mapbox", _mapbox("pk")),
    F("newrelic-user", "newrelic", _t("NRAK-", UPPER_ALNUM, 27)),
    F("newrelic-browser", "newrelic", _t("NRJS-", HEX, 19)),
    F("newrelic-insert", "newrelic", _t("NRII-", ALNUM + "-", 32)),
    F("sonarqube-user", "sonar", _t("squ_", HEX, 40)),
    F("sonarqube-project", "sonar", _t("sqp_", HEX, 40)),
    F("telegram-bot", "telegram", lambda r: f"{_digits(r, 10)}:AA{pick(r, URLSAFE, 33)}"),
    F("plaid-access", "plaid", lambda r: f"access-production-{uuid(r)}"),
    F("lob", "lob", _t("live_", HEX, 35)),
    F("sidekiq-url", "sidekiq",
      lambda r: f"https://{pick(r, HEX, 8)}:{pick(r, HEX, 8)}@gems.contribsys.com/",
      _url_password, "url"),
    # Beyond gitleaks' default set: common formats with a prefix of their own.
    F("docker-hub-pat", "docker", _t("dckr_pat_", URLSAFE, 27)),
    F("google-oauth-client-secret", "gcloud", _t("GOCSPX-", URLSAFE, 28)),
    F("stripe-webhook-secret", "stripe", _t("whsec_", ALNUM, 32)),
    F("langsmith", "langsmith", _u("lsv2_pt_", (HEX, 32), "_", (HEX, 10))),
    F("supabase", "supabase", _t("sbp_", HEX, 40)),
    F("groq", "groq", _t("gsk_", ALNUM, 52)),
    F("buildkite", "buildkite", _t("bkua_", HEX, 40)),
    F("replicate", "replicate", _t("r8_", ALNUM, 37)),
    F("tailscale", "tailscale", _u("tskey-auth-k", (ALNUM, 9), "11CNTRL-", (ALNUM, 33))),
    F("xai", "xai", _t("xai-", ALNUM, 80)),
    F("openrouter", "openrouter", _t("sk-or-v1-", HEX, 64)),
    F("discord-bot", "discord", _discord),
    # Private keys: real DER (or OpenSSH) headers, random key material, the usual line width.
    _key("private-key-rsa", "RSA PRIVATE KEY", "308204a40201000282010100", 1192),
    _key("private-key-pkcs8", "PRIVATE KEY",
         "308204be020100300d06092a864886f70d0101010500048204a8", 1218),
    _key("private-key-ec", "EC PRIVATE KEY", "30770201010420", 121),
    _key("private-key-ed25519", "PRIVATE KEY", "302e020100300506032b657004220420", 48),
    _key("private-key-encrypted", "ENCRYPTED PRIVATE KEY", "3082051c304e06092a864886f70d01050d",
         1312),
    _key("private-key-dsa", "DSA PRIVATE KEY", "308201bb02010002818100", 447),
    F("private-key-openssh", "pem", _openssh_ed25519, _pem_body, "pem"),
    F("private-key-pgp", "pem", _pgp, _pem_body, "pem"),
    # Connection strings: what is secret is the password; the rest is context worth keeping.
    F("postgres-url", "postgres",
      lambda r: f"postgres://app:{_password(r)}@db.internal:5432/app", _url_password, "url"),
    F("postgresql-url", "postgres",
      lambda r: f"postgresql://{pick(r, LOWER, 6)}:{_password(r)}@{pick(r, LOWER, 8)}"
      f".cluster-{pick(r, LOWER_ALNUM, 12)}.eu-west-1.rds.amazonaws.com:5432/prod?sslmode=require",
      _url_password, "url"),
    F("mongodb-srv-url", "mongodb",
      lambda r: f"mongodb+srv://{pick(r, LOWER, 7)}:{_password(r)}@cluster0."
      f"{pick(r, LOWER_ALNUM, 5)}.mongodb.net/app?retryWrites=true&w=majority",
      _url_password, "url"),
    F("mongodb-url", "mongodb",
      lambda r: f"mongodb://admin:{_password(r)}@mongo-0.internal:27017/app?authSource=admin",
      _url_password, "url"),
    F("redis-url", "redis",
      lambda r: f"redis://:{_password(r)}@redis.internal:6379/0", _url_password, "url"),
    F("rediss-url", "redis",
      lambda r: f"rediss://default:{pick(r, ALNUM, 32)}@{pick(r, LOWER, 6)}-{pick(r, LOWER, 6)}"
      f"-{_digits(r, 5)}.upstash.io:6379", _url_password, "url"),
    F("mysql-url", "mysql",
      lambda r: f"mysql://root:{_password(r)}@mysql.internal:3306/shop", _url_password, "url"),
    F("amqp-url", "rabbitmq",
      lambda r: f"amqp://{pick(r, LOWER, 6)}:{_password(r)}@rabbitmq.internal:5672/%2F",
      _url_password, "url"),
    F("amqps-url", "rabbitmq",
      lambda r: f"amqps://{pick(r, LOWER, 8)}:{pick(r, URLSAFE, 32)}@"
      f"{r.choice(['cow', 'moose', 'goose'])}.rmq.cloudamqp.com/{pick(r, LOWER, 8)}",
      _url_password, "url"),
]  # fmt: skip
