"""Token formats: credentials recognisable by their own shape, wherever they appear.

Each format starts with a distinctive literal (``ghp_``, ``AKIA``, ``xoxb-``), so the engine
tries a format only where a run of token characters starts with one of its prefixes (see
:func:`nexusmem_core.redact.redact_tally`). The table therefore costs about the same with 12
formats as with 200. The shapes follow what each provider documents and what public secret
scanners recognise; the patterns are our own. Bodies are bounded above, so a token glued to a
longer run (``ghp_`` followed by 300 letters) is still refused as a whole rather than scanned
without end, and each body refuses to be followed by more token characters.

Standard library only: the shell hook imports this on every command typed.
"""

from __future__ import annotations

from .rule import Rule, token_rule

__all__ = ["TOKEN_RULES"]

# What may not follow a token: more of the characters tokens are made of.
_END = r"(?![A-Za-z0-9_-])"

TOKEN_RULES: tuple[Rule, ...] = (
    token_rule(
        "aws_access_key_id",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        r"[A-Z0-9]{16,17}(?![A-Za-z0-9])",
        "aws sts get-caller-identity # key AKIAIOSFODNN7EXAMPLE",
        "aws sts get-caller-identity # key [REDACTED]",
    ),
    token_rule(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        r"[A-Za-z0-9]{30,255}" + _END,
        "git push https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/a/b.git",
        "git push https://[REDACTED]@github.com/a/b.git",
    ),
    token_rule(
        "github_fine_grained_token",
        ("github_pat_",),
        r"[A-Za-z0-9_]{30,255}" + _END,
        "echo github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF | gh auth login",
        "echo [REDACTED] | gh auth login",
    ),
    token_rule(
        "gitlab_token",
        ("glpat-", "gldt-", "glptt-", "glrt-", "gloas-"),
        r"[A-Za-z0-9_-]{20,255}" + _END,
        "glab auth login --stdin <<< glpat-xxxxxxxxxxxxxxxxxxxx",
        "glab auth login --stdin <<< [REDACTED]",
    ),
    token_rule(
        "slack_token",
        ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xoxe-", "xapp-"),
        r"[A-Za-z0-9-]{10,250}" + _END,
        "slack-cli --bot xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
        "slack-cli --bot [REDACTED]",
    ),
    token_rule(
        "jwt",
        ("eyJ",),
        r"[A-Za-z0-9_-]{10,4096}\.eyJ[A-Za-z0-9_-]{7,8192}\.[A-Za-z0-9_-]{0,4096}" + _END,
        "echo eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
        "echo [REDACTED]",
    ),
    # OpenAI (`sk-`, `sk-proj-`) and Anthropic (`sk-ant-`) keys. Mixed case and a digit are
    # required so branch names like `sk-123-fix-login-redirect` are not keys.
    token_rule(
        "openai_anthropic_key",
        ("sk-",),
        r"(?=[A-Za-z0-9_-]{0,255}[0-9])(?=[A-Za-z0-9_-]{0,255}[A-Z])[A-Za-z0-9_-]{32,255}" + _END,
        "llm -k sk-ant-api03-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv 'hi'",
        "llm -k [REDACTED] 'hi'",
    ),
    token_rule(
        "google_api_key",
        ("AIza",),
        r"[0-9A-Za-z_-]{35}" + _END,
        "gcloud ml vision detect-labels img.png --key AIzaSyD-1234567890abcdefghijklmnopqrstu",
        "gcloud ml vision detect-labels img.png --key [REDACTED]",
    ),
    token_rule(
        "stripe_key",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_"),
        r"[0-9A-Za-z]{10,255}" + _END,
        "stripe listen --api-key-file k; echo sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "stripe listen --api-key-file k; echo [REDACTED]",
    ),
    token_rule(
        "stripe_webhook_secret",
        ("whsec_",),
        r"[0-9A-Za-z]{20,255}" + _END,
        "stripe listen --forward-to localhost:4242 # whsec_abcdefghijklmnopqrstuvwxyz012345",
        "stripe listen --forward-to localhost:4242 # [REDACTED]",
    ),
    token_rule(
        "npm_token",
        ("npm_",),
        r"[A-Za-z0-9]{36}" + _END,
        "npm config set //registry.npmjs.org/:_authToken npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "npm config set //registry.npmjs.org/:_authToken [REDACTED]",
    ),
    token_rule(
        "pypi_token",
        ("pypi-AgE",),
        r"[A-Za-z0-9_-]{50,1000}" + _END,
        "twine upload -p pypi-AgEIcHlwaS5vcmcCJGE4ZjA2YjBjLTk3MjctNDNkNy1hMjAyLTM0YjEyNGM3 dist/*",
        "twine upload -p [REDACTED] dist/*",
    ),
    token_rule(
        "huggingface_token",
        ("hf_",),
        r"[A-Za-z]{34}" + _END,
        "echo hf_abcdefghijklmnopqrstuvwxyzABCDEFGH | huggingface-cli login",
        "echo [REDACTED] | huggingface-cli login",
    ),
    token_rule(
        "vault_token",
        ("hvs.", "hvb.", "hvr."),
        r"[A-Za-z0-9_-]{24,255}" + _END,
        "VAULT_ADDR=https://vault:8200 vault kv get -address x hvs.CAESIabcdefghijklmnopqrstuv",
        "VAULT_ADDR=https://vault:8200 vault kv get -address x [REDACTED]",
    ),
)
