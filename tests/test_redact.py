"""Secret redaction: the rule table checks itself, real commands lose their secrets, ordinary
commands pass through untouched, and redaction is idempotent on any text."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexusmem_core.redact import PLACEHOLDER, RULES, Rule, redact, redact_count, redact_tally

_TOP = Path(__file__).resolve().parents[1]

# (command, the secret substring that must not survive); each command holds exactly one secret.
SECRET_COMMANDS: list[tuple[str, str]] = [
    ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    (
        "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE",
    ),
    ("echo 'aws_secret_access_key = Zm9vYmFyYmF6cXV4' >> ~/.aws/credentials", "Zm9vYmFyYmF6cXV4"),
    (
        "AWS_SESSION_TOKEN=FwoGZXIvYXdzEBYaDHRva2VuX3ZhbHVl aws s3 ls",
        "FwoGZXIvYXdzEBYaDHRva2VuX3ZhbHVl",
    ),
    (
        "git clone https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/a/b.git",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "echo github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF | gh auth login",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
    ),
    ("export GITHUB_TOKEN=gho_abcdefghijklmnopqrstuvwxyz0123456789", "gho_abcdefghijkl"),
    (
        "curl -H 'Authorization: token ghs_abcdefghijklmnopqrstuvwxyz0123456789' api.github.com",
        "ghs_abcdefghijkl",
    ),
    ("SLACK_BOT=xoxb-123456789012-1234567890123-AbCdEfGhIjKl node bot.js", "xoxb-1234567890"),
    ("slackcat --token xoxp-2222222222-333333333-abcdefabcdef", "xoxp-2222222222"),
    (
        'curl -X POST -d \'{"text":"hi"}\' https://hooks.slack.com/services/T0AAA/B0BBB/ZZZZZZZZ',
        "T0AAA/B0BBB/ZZZZZZZZ",
    ),
    (
        "http GET api.local 'Authorization:Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln'",
        "eyJhbGciOiJIUzI1NiJ9",
    ),
    ("jwt decode eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlMTIz", "eyJzdWIiOiIxIn0"),
    (
        "printf '%s' '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAEbm9uZQ\n"
        "-----END OPENSSH PRIVATE KEY-----' > key",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    ("cat <<EOF\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBa2\nEOF", "MHcCAQEEIBa2"),
    ("curl -H 'Authorization: Basic YWxpY2U6aHVudGVyMg==' https://x.example.com", "YWxpY2U6"),
    ('curl -H "authorization: Bearer abc123def456" https://x.example.com', "abc123def456"),
    ("wget --header='Proxy-Authorization: Negotiate YIIGhgYJKoZI' http://x", "YIIGhgYJKoZI"),
    ("curl --oauth2-bearer 9f8e7d6c5b4a https://x.example.com", "9f8e7d6c5b4a"),
    ('curl -H "X-Api-Key: 0a1b2c3d4e5f" https://api.example.com', "0a1b2c3d4e5f"),
    ("curl --header 'PRIVATE-TOKEN: abcdEFGH1234' https://gitlab.example.com", "abcdEFGH1234"),
    ("psql postgres://app:Sup3rSecret@db.internal:5432/app", "Sup3rSecret"),
    (
        "pip install --index-url https://__token__:pypi-tok3n@pypi.example.com/simple x",
        "pypi-tok3n",
    ),
    ("mysql -h db -u root -ptopsecret -e 'show databases'", "topsecret"),
    ("mysqldump -uroot -p'my pass' app > dump.sql", "my pass"),
    ("mariadb --user=root -pHunter2 app", "Hunter2"),
    ("sshpass -p hunter2 ssh -p 2222 deploy@host uptime", "hunter2"),
    ("curl -u alice:wonderland https://api.example.com/me", "wonderland"),
    ("curl --user 'bob:pass with spaces' https://api.example.com", "pass with spaces"),
    ("psql --password s3cret -h db", "s3cret"),
    ("vault login --token=hvs.CAESIabcdefghijklmnopqrstuvwxyz", "hvs.CAESI"),
    ("mc alias set s3 https://s3.example.com admin --secret-key=0p3nS3same", "0p3nS3same"),
    ("az login --service-principal -u app --client-secret 'Xy8~abc.def' --tenant t", "Xy8~abc.def"),
    ('DB_PASSWORD="correct horse battery" ./manage.py migrate', "correct horse battery"),
    ("export OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7c", "sk-proj-Ab3dEf6"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-Xy9Zw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe claude", "Xy9Zw8Vu7Ts6Rq5"),
    ("llm -m gpt-4o --key sk-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWxYz 'hi'", "Ab1Cd2Ef3Gh4Ij5"),
    ("curl 'https://maps.example.com/api?q=x&key=AIzaSyD-1234567890abcdefghijklmnopqrstu'", "AIza"),
    ("stripe charges list --api-key sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39"),
    ("echo rk_live_51H8abcdefGHIJKLmnop >> .env", "rk_live_51H8"),
    ("curl 'https://example.com/login?user=bob&password=hunter2&next=/'", "hunter2"),
    ("PGPASSWORD=pgs3cret psql -h db -U app", "pgs3cret"),
    ("MYSQL_PWD=mys3cret mysql -u root", "mys3cret"),
    ("docker run -e POSTGRES_PASSWORD=dbpass123 postgres:16", "dbpass123"),
    ("docker login -u bob -p dockerpass registry.example.com", "dockerpass"),
    ("redis-cli -h cache -a r3disPass ping", "r3disPass"),
    ("terraform apply -var 'db_password=tfs3cret'", "tfs3cret"),
    ("java -Dspring.datasource.password=j4vaPass -jar app.jar", "j4vaPass"),
    ("export GITHUB_TOKEN='ghp_short but quoted'", "ghp_short but quoted"),
    ("npm config set //registry.npmjs.org/:_authToken=npm_t0kenValue9", "npm_t0kenValue9"),
    (
        'curl -X POST -d "{\\"username\\":\\"bob\\",\\"password\\":\\"pa55word\\"}" http://x',
        "pa55word",
    ),
    ("openssl pkcs12 -export -out c.p12 -passout pass:exp0rtpw", "exp0rtpw"),
    ("keytool -importcert -keystore ks.jks -storepass st0repw -file c.crt", "st0repw"),
    ("ansible-playbook site.yml -e ansible_become_pass=b3come", "b3come"),
]

ORDINARY_COMMANDS: list[str] = [
    "mkdir -p build",
    "cp -p a b",
    "cp -rp src dst",
    'git commit -m "fix token parsing"',
    'git commit -m "refactor authorization: split the module"',
    "grep -r password src/",
    'grep -rn "Authorization" src/',
    "export PATH=/usr/bin:$PATH",
    "echo $GITHUB_TOKEN",
    'echo "${GITHUB_TOKEN}"',
    "export GITHUB_TOKEN=$(gh auth token)",
    'TOKEN="$TOKEN" ./run.sh',
    "unset GITHUB_TOKEN",
    "env | grep -i token",
    "ssh user@host",
    "ssh -p 2222 user@host",
    "scp -P 2222 file.txt user@host:/tmp/",
    "git clone https://github.com/a/b.git",
    "git remote add origin git@github.com:a/b.git",
    "pytest -k token",
    "TOKENIZER=bert python x.py",
    "python train.py --max-tokens 512 --tokenizer gpt2",
    "MAX_TOKENS=4096 python run.py",
    "git log --author=alice",
    "export GIT_AUTHOR_NAME=alice",
    "export PWD=/tmp OLDPWD=/home/me",
    "curl 'https://example.com/api?page=2&limit=10'",
    "curl -u alice https://example.com",
    "mysql -u root -p",
    "mysql -u root -p mydb",
    "docker login -u alice --password-stdin registry.example.com",
    "docker run -p 8080:80 -u 1000:1000 nginx",
    "kubectl get secrets -n prod",
    "rg 'sk-' src",
    "git checkout -b sk-123-fix-login-redirect-bug",
    "npm install jsonwebtoken",
    'echo "Bearer tokens are cool"',
    "openssl genrsa -out key.pem 2048",
    'ssh-keygen -t ed25519 -C "me@example.com"',
    "psql -h localhost -U postgres --no-password app",
    "tar -xzf archive.tar.gz -C /tmp",
    'rsync -avz -e "ssh -p 2222" src/ host:dst/',
    "find . -name '*.key' -newer stamp",
    "aws s3 ls s3://bucket/prefix",
    "cat ~/.ssh/id_ed25519.pub",
    "gh secret list",
]

# Prose near a secret's name that names no secret: a sha, a word, a path.
ORDINARY_TEXT_NEAR_A_NAME = [
    "the secret sauce is ready",
    "fixed key 4b1df7a23ba1ffd4df4fc35c3284f15b82c2ed5e lookup in the cache",
    "token was refreshed by the middleware",
    "password is required for this endpoint",
    "echo $GITHUB_TOKEN | gh auth login --with-token",
]

# Ordinary text from commits, lockfiles, code and prose that comes close to a token prefix
# (`4b1d`, `live_`, `api_org_`, `EAAA`, `key-`, `pat.`, `SK`, `sk-`, `AGE-SECRET-KEY-1`): the
# token formats' exact lengths and alphabets must keep all of it.
ORDINARY_TEXT: list[str] = [
    "This reverts commit 4b1df7a23ba1ffd4df4fc35c3284f15b82c2ed5e.",
    "git cherry-pick -x 4b1df7a23ba1ffd4df4fc35c3284f15b82c2ed5e",
    "FROM python:3.11-slim@sha256:4b1d54f943b1f8c7f70f69f2ec9652f76fc73043fdbd07fdec66b7c79f1c3f60",
    "  integrity sha512-5M53BsOqcReBM10CEzSaGC4lddbxUMy9v+iLQ8GPQl2d27nb8yuN8GHr8JhtKZe3H3AIIBvsdZ"
    "DfCqO8lqGa6Q==",
    '"integrity": "sha512-2+1d312Gv/F0ka3L+WanxnvPQ93+m+j2HLOWk54rzWk/lAPxKcimaVSC+kRml1k+lqAEalc'
    'c0tQie4/Wubz/Zg=="',
    "request e4633107-7967-4513-b721-970867913fef failed after 3 retries",
    "bump version to v1.2.3-rc.1",
    "release v1.0-rc.1, then v1.0-beta.2+build.5",
    "color: #4b1d2c; background: #EAAA00;",
    "live_reload_enabled = true",
    "settings.live_reload_interval_ms = 250",
    "SELECT api_org_name, api_org_plan FROM tenants",
    "EAAA is the prefix of Square access tokens",
    "EAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAAAAA==",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGnN1N3rXXQ6fWq5rN1nM0Yb8vZc9xH2uQ3kL7pT4sA me@laptop",
    "a key-value store, keyed by key-0123456789abcdef",
    "see pat. 4,123,456 and sat. solver notes",
    "sat.solver.timeout_seconds = 30",
    "SKIP_INTEGRATION_TESTS=1 make test",
    "pip install scikit-learn  # the sk-learn-compatible-estimator-wrapper",
    "age keys start with AGE-SECRET-KEY-1 and public keys with age1",
    "def test_redaction_is_idempotent_on_arbitrary_text():",
    "config.secret_key_base_for_development_environment = nil",
    "b_tree_node_allocation_strategy_for_large_pages_v2",
    "xoxo-hugs-and-kisses-from-the-whole-team",
    "read docs/API-DESIGN-GUIDELINES.md before adding endpoints",
    "static void GLC_CreateLightmapTextureArray(void);",
    "aws s3 ls s3://access-production-logs-bucket-eu-west-1/",
    "kubectl config use-context tk-us-east-1-production-cluster",
    "pattern_matching_is_exhaustive_for_enums = True",
    "ext_modules=[Extension('speedups', ['src/speedups.c'])]",
    "pip install dapi-client-library-for-python",
    "git checkout -b secret_rotation_for_the_staging_environment",
]


# --- The table tests itself --------------------------------------------------------------


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_rule_example_redacts_to_its_expected_text(rule: Rule) -> None:
    # Each example holds one secret: a count above 1 means two rules both took a bite.
    assert redact_count(rule.example) == (rule.expected, 1)


def _redact_with(rule: Rule, text: str) -> str:
    """Replace the secret group of every match of one rule, independently of the engine."""
    pieces, last = [], 0
    for match in rule.finditer(text):
        start, end = match.span(rule.group)
        pieces += [text[last:start], PLACEHOLDER]
        last = end
    return "".join([*pieces, text[last:]])


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_rule_example_is_redacted_by_that_rule_alone(rule: Rule) -> None:
    assert _redact_with(rule, rule.example) == rule.expected


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_rule_triggers_are_lowercase_and_present_in_its_example(rule: Rule) -> None:
    assert rule.triggers
    assert all(trigger == trigger.lower() for trigger in rule.triggers)
    assert any(trigger in rule.example.lower() for trigger in rule.triggers)


def _alphabet(klass: str) -> str:
    """The characters of a character class's inside, such as ``A-Za-z0-9+/``."""
    chars, at = [], 0
    while at < len(klass):
        if at + 2 < len(klass) and klass[at + 1] == "-":
            chars += [chr(c) for c in range(ord(klass[at]), ord(klass[at + 2]) + 1)]
            at += 3
        else:
            chars.append(klass[at])
            at += 1
    return "".join(chars)


@pytest.mark.parametrize("rule", [r for r in RULES if r.blob], ids=lambda rule: rule.name)
def test_a_blob_format_takes_the_whole_stretch_of_its_alphabet_or_nothing(rule: Rule) -> None:
    # The engine tries such a format once per stretch of its alphabet, measured apart from the
    # pattern: that is sound only if the pattern never ends the body before the stretch does.
    assert rule.blob is not None
    klass, least, _ = rule.blob
    body = ("A1b" * least)[:least]
    for char in _alphabet(klass):
        text = rule.prefixes[0] + body + char
        match = rule.pattern.match(text)
        assert match is None or match.end() == len(text), (rule.name, char)


def test_rule_names_are_unique() -> None:
    names = [rule.name for rule in RULES]
    assert len(names) == len(set(names))


# --- Real commands ------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "secret"), SECRET_COMMANDS)
def test_secret_bearing_command_loses_its_secret(command: str, secret: str) -> None:
    redacted, count = redact_count(command)
    assert secret not in redacted
    assert count == 1


def test_table_catches_every_secret_command() -> None:
    caught = [cmd for cmd, secret in SECRET_COMMANDS if secret not in redact(cmd)]
    missed = [cmd for cmd, secret in SECRET_COMMANDS if secret in redact(cmd)]
    print(f"redaction caught {len(caught)}/{len(SECRET_COMMANDS)} secret-bearing commands")
    assert not missed
    assert len(SECRET_COMMANDS) >= 40


@pytest.mark.parametrize("command", ORDINARY_COMMANDS)
def test_ordinary_command_is_unchanged(command: str) -> None:
    assert redact_count(command) == (command, 0)


@pytest.mark.parametrize("text", ORDINARY_TEXT + ORDINARY_TEXT_NEAR_A_NAME)
def test_ordinary_text_near_a_token_prefix_is_unchanged(text: str) -> None:
    assert redact_count(text) == (text, 0)


def test_context_around_a_secret_is_kept() -> None:
    assert redact("Authorization: Bearer abc123") == "Authorization: Bearer [REDACTED]"
    assert redact("DB_PASSWORD=hunter2") == "DB_PASSWORD=[REDACTED]"
    assert redact("https://user:pw9x@host") == "https://user:[REDACTED]@host"
    assert redact("mysql -u root -pabc") == "mysql -u root -p[REDACTED]"
    assert redact("x --token abc") == "x --token [REDACTED]"
    assert redact("x --token=abc") == "x --token=[REDACTED]"


def test_quoted_value_is_redacted_whole() -> None:
    assert redact("export API_KEY='a b c' && go") == "export API_KEY=[REDACTED] && go"
    assert redact('API_TOKEN="a \\" b" cmd') == "API_TOKEN=[REDACTED] cmd"
    assert redact("--password 'x y'") == "--password [REDACTED]"


def test_count_is_the_number_of_secrets_replaced() -> None:
    text = "A_TOKEN=x7 B_SECRET=y9 curl -u u:p https://h"
    assert redact_count(text) == (
        "A_TOKEN=[REDACTED] B_SECRET=[REDACTED] curl -u u:[REDACTED] https://h",
        3,
    )
    assert redact_count("") == ("", 0)


def test_token_inside_a_redacted_assignment_is_counted_once() -> None:
    assert redact_count("GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a") == (
        "GITHUB_TOKEN=[REDACTED]",
        1,
    )


def test_repeated_command_options_settle_in_one_pass() -> None:
    # A command-scoped rule takes its command's first `-p`/`-u` only; were it to take "the next
    # one" each time, every pass would reach one option further and never settle.
    for text in ["docker login " + "-p hunter2 " * 30, "curl " + "-u a:b " * 30, "mysql -pX" * 30]:
        once = redact(text)
        assert redact_count(once) == (once, 0)


def test_placeholder_is_never_matched_again() -> None:
    for text in [
        PLACEHOLDER,
        f"TOKEN={PLACEHOLDER}",
        f"TOKEN='{PLACEHOLDER}'",
        f"Authorization: Bearer {PLACEHOLDER}",
        f"Authorization: {PLACEHOLDER}",
        f"mysql -p{PLACEHOLDER}",
        f"curl -u a:{PLACEHOLDER} x",
        f"https://u:{PLACEHOLDER}@h",
        f"aws_secret_access_key = {PLACEHOLDER}",
        f'{{"password": "{PLACEHOLDER}"}}',
        f"X-Api-Key: {PLACEHOLDER}",
        f"-----BEGIN PRIVATE KEY-----\n{PLACEHOLDER}\n-----END PRIVATE KEY-----",
    ]:
        assert redact_count(text) == (text, 0)


# --- Properties ---------------------------------------------------------------------------

# Text that is dense in the characters and words the rules care about, so the fuzzing reaches
# them, with the placeholder itself among the pieces.
_PIECES = [
    *"aAzZ09_-=:@/.'\" \t\n$[]{}();|&?#+~\\",
    *("TOKEN", "PASSWORD", "_PWD", "-p", "--token", "mysql ", "curl ", "-u ", "Bearer "),
    *("Authorization: ", "://", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"),
    *("eyJ", "ghp_", "xoxb-", "sk-", "AKIA", "sshpass -p ", "pass:", '"password":', PLACEHOLDER),
    *("aws_secret_access_key = ", "X-Api-Key: ", "docker login -p ", "SECRET_KEY_", "?token="),
]
_ALPHABET = st.sampled_from(_PIECES)
_FUZZ = st.lists(_ALPHABET, max_size=40).map("".join)
_EXAMPLE_MIX = st.lists(
    st.one_of(st.sampled_from([rule.example for rule in RULES]), st.text(max_size=20), _FUZZ),
    max_size=6,
).map(" ".join)


@settings(max_examples=400)
@given(st.text())
def test_redaction_is_idempotent_on_arbitrary_text(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@settings(max_examples=600)
@given(st.one_of(_FUZZ, _EXAMPLE_MIX))
def test_redaction_is_idempotent_on_secret_like_text(text: str) -> None:
    once, _ = redact_count(text)
    assert redact_count(once) == (once, 0)


@settings(max_examples=300)
@given(st.one_of(_FUZZ, _EXAMPLE_MIX))
def test_existing_placeholders_survive_redaction(text: str) -> None:
    assert redact(text).count(PLACEHOLDER) >= text.count(PLACEHOLDER)


@settings(max_examples=300)
@given(st.one_of(st.text(), _FUZZ, _EXAMPLE_MIX))
def test_a_rule_matches_only_text_containing_one_of_its_triggers(text: str) -> None:
    # The triggers are a prefilter: skipping a rule must never skip a match.
    lowered = text.lower()
    for rule in RULES:
        if next(rule.finditer(text), None):
            assert any(trigger in lowered for trigger in rule.triggers), rule.name


# Words a keyword is seen inside, and keywords written the ways rules take them: what the line
# gathering's letter test (`auth` in `authored` is no keyword) must tell apart.
_KEYWORD_MIX = st.lists(
    st.one_of(
        st.sampled_from([rule.example for rule in RULES]),
        st.sampled_from(
            ["authored", "Authorization:", "passed", "password", "PASSWD", "monkeypatch",
             "secretkey", "authkey", "signature", "signed", "credentials", "tokens", "_pwd",
             "api key", "client_secret", "SECRET_KEY_BASE", "-storepass", "pass:", "=", ": ",
             " = ", '"', "'", "--", "\n", "9f8e7d6c5b4a3f2e1d0c", "sk-live-0123", "set -gx "]
        ),
        _FUZZ,
    ),
    max_size=8,
).map("".join)  # fmt: skip


def _scans(text: str) -> list:
    """The scan of ``text`` both ways: with ``str.find``, and from the literals ahocorasick-rs
    finds (see redact/literals.py)."""
    from nexusmem_core.redact.rule import ascii_lower
    from nexusmem_core.redact.scan import _LITERALS, _find_scan, _found_scan, _spaced

    lowered = ascii_lower(text)
    spaced = _spaced(lowered)
    hits = _LITERALS.find(spaced)
    assert hits is not None, "ahocorasick-rs is a dependency: the tests need it installed"
    return [_find_scan(text, lowered), _found_scan(text, lowered, hits, spaced)]


def _assert_gathered(text: str) -> None:
    """Line rules run only on the lines gathered for them, and only when their keys were found:
    both prefilters, found either way, must keep every line holding a match."""
    from nexusmem_core.redact.scan import _WHOLE_RULES, LINE_KEYS, line_spans, whole_rules

    for scan in _scans(text):
        whole = whole_rules(scan)
        for rule in _WHOLE_RULES:  # a webhook rule runs only when its trigger is in a URL's host
            if next(rule.finditer(text), None):
                assert rule in whole, rule.name
        spans = line_spans(scan.lowered, scan.lines)
        for rule, keys in LINE_KEYS:
            for match in rule.finditer(text):
                line = text.rfind("\n", 0, match.start()) + 1
                held = any(start <= line and match.end() <= end for start, end in spans)
                assert held, (rule.name, match.group(0))
                assert not keys.isdisjoint(scan.keys), rule.name


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_line_gathering_keeps_every_rule_example(rule: Rule) -> None:
    _assert_gathered(rule.example)


def _keyword_lines() -> list[str]:
    """Every secret name the name rules take, written each way they take it."""
    from nexusmem_core.redact.context import _KEYWORDS, _NAME_ENDINGS

    value = "9f8e7d6c5b4a3f2e1d0c"
    lines = []
    for word in sorted({*_KEYWORDS, *_NAME_ENDINGS, "signature", "sig", "key"}):
        upper = word.upper().replace(" ", "_").replace("-", "_")
        lines += [
            f"export MY{upper}={value}", f'{word} = "{value}"', f'{{"{word}": "{value}"}}',
            f"--{word.replace('_', '-')} {value}", f"set -gx MY{upper} {value}",
            f"{upper}_FILE={value}", f"https://x.example/?{word}={value}",
            f'<add key="{word}" value="{value}" />', f"{word}: {value}",
        ]  # fmt: skip
    return lines


@pytest.mark.parametrize("line", _keyword_lines())
def test_line_gathering_keeps_every_way_of_naming_a_secret(line: str) -> None:
    _assert_gathered(line)


@settings(max_examples=400)
@given(st.one_of(_FUZZ, _EXAMPLE_MIX, _KEYWORD_MIX))
def test_line_gathering_never_skips_a_line_a_rule_matches(text: str) -> None:
    _assert_gathered(text)


@contextmanager
def _by_str_find() -> Iterator[None]:
    """Redaction as it runs where ahocorasick-rs cannot be imported."""
    from nexusmem_core.redact import literals

    saved = literals._library
    literals._library = literals._MISSING
    try:
        yield
    finally:
        literals._library = saved


def _both_ways(text: str) -> tuple[tuple[str, dict[str, int]], tuple[str, dict[str, int]]]:
    """``redact_tally(text)`` with ``str.find``, and with the literals ahocorasick-rs finds
    (which, once loaded, serve texts of any length)."""
    from nexusmem_core.redact import literals

    assert literals._load() is not None, "ahocorasick-rs is a dependency: install it"
    with _by_str_find():
        plain = redact_tally(text)
    return plain, redact_tally(text)


@settings(max_examples=400)
@given(st.one_of(st.text(), _FUZZ, _EXAMPLE_MIX, _KEYWORD_MIX))
def test_literals_redact_any_text_as_str_find_does(text: str) -> None:
    plain, found = _both_ways(text)
    assert found == plain


def test_literals_redact_every_labelled_secret_as_str_find_does() -> None:
    # The labelled corpus in every channel's wording, and every rule's example, in one long text
    # and piece by piece: tokens at the start and end of runs, lines and the text.
    from tests.secrets import channels, corpus

    pieces = [rule.example for rule in RULES]
    for secret in corpus.prefixed(seed=1) + corpus.keyworded(seed=1):
        pieces += [secret.value, secret.line, channels._commit_message(secret)]
        pieces += [*channels.commands(secret), *channels._files_for(secret).values()]
    pieces += [piece.swapcase() for piece in pieces]  # `SK-`, `GHP_`: a prefix in another case
    for text in ["\n".join(pieces), " ".join(pieces), "".join(pieces), *pieces]:
        plain, found = _both_ways(text)
        assert found == plain
    assert sum(_both_ways("\n".join(pieces))[1][1].values()) > len(pieces) / 2


def test_a_short_text_leaves_ahocorasick_unloaded_and_a_long_one_loads_it() -> None:
    # A shell hook redacts one command and exits: it must not pay for the library's start.
    code = (
        "import sys; from nexusmem_core.redact import redact, literals;"
        "redact('export DB_PASSWORD=hunter22 && ./run ' * 50);"
        "print('ahocorasick_rs' in sys.modules);"
        "redact('x = 1\\n' * (literals.LEAST // 5)); print('ahocorasick_rs' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=_TOP
    )
    assert done.stdout.split() == ["False", "True"]


_FOLDED = [rule for rule in RULES if rule.folded]


@settings(max_examples=300)
@given(st.one_of(st.text(), _FUZZ, _EXAMPLE_MIX, _KEYWORD_MIX), st.sampled_from(_FOLDED))
def test_a_folded_rule_matches_where_its_case_insensitive_pattern_does(
    text: str, rule: Rule
) -> None:
    # Folded rules run case-sensitively on the lowercase copy: the same spans as the pattern as
    # written, case-insensitive, on the text itself. Swapping case checks both directions.
    original = re.compile(rule.regex, rule.flags)
    for sample in (text, text.swapcase(), text.upper()):
        spans = [m.span(rule.group) for m in original.finditer(sample)]
        assert [m.span(rule.group) for m in rule.finditer(sample)] == spans, rule.name


def test_a_folded_rule_sees_non_ascii_characters_as_the_pattern_does() -> None:
    # The lowercase copy stands something in for `ü`; a `?` would end the URL's user name,
    # which its pattern reads up to the first `?`, and leave the password in clear.
    text = 'resp.headers["Location"] = "http://üser:pässword@☃.net/påth"'
    assert redact(text) == 'resp.headers["Location"] = "http://üser:[REDACTED]@☃.net/påth"'


def test_every_case_insensitive_context_rule_is_folded() -> None:
    assert {rule.name for rule in _FOLDED} == {
        rule.name for rule in RULES if rule.flags & re.IGNORECASE and not rule.prefixes
    }
    assert _FOLDED


@pytest.mark.parametrize("rule", [rule for rule in RULES if rule.run], ids=lambda rule: rule.name)
def test_a_run_triggered_rule_matches_inside_a_long_run_holding_its_trigger(rule: Rule) -> None:
    match = next(rule.finditer(rule.example), None)
    assert match is not None
    run = re.search(rf"[A-Za-z0-9_.-]{{{rule.run},}}", match.group(0))
    assert run is not None and any(trigger in run.group(0).lower() for trigger in rule.triggers)


def test_a_character_that_lowercases_to_two_does_not_move_the_secret() -> None:
    # `"İ".lower()` is two characters: positions found in the lowercase text once pointed past
    # the secret, and redaction raised instead of returning.
    text = "Merge from İstanbul team\nexport DB_PASSWORD=hunter22abc\nmore"
    assert redact(text) == "Merge from İstanbul team\nexport DB_PASSWORD=[REDACTED]\nmore"
    assert redact("İİİ ok password=Tr0ub4dor&3xyz") == "İİİ ok password=[REDACTED]"


@given(
    st.lists(st.sampled_from(RULES), min_size=1, max_size=4), st.sampled_from(["\n", "; ", " && "])
)
def test_joined_examples_redact_like_each_example(rules: list[Rule], sep: str) -> None:
    # Joined by command separators: within one command, command-scoped rules (mysql's `-p`)
    # rightly read further arguments as their own.
    text = sep.join(rule.example for rule in rules)
    assert redact(text) == sep.join(rule.expected for rule in rules)


# --- Pathological input returns (linear-time patterns; no timing assertions) ---------------


@pytest.mark.parametrize(
    "text",
    [
        "a=" * 25_000,
        "-----BEGIN" * 5_000,
        "-----BEGIN RSA PRIVATE KEY-----" * 2_000,
        "-----BEGIN PRIVATE KEY-----" + " " * 50_000 + "x",
        "xox" * 17_000,
        "xoxb-" * 10_000,
        "eyJ" * 17_000,
        "eyJaaaaaaaaaaaa." * 3_000,
        "TOKEN_" * 8_000,
        "A" * 50_000,
        "-" * 50_000,
        "mysql " * 8_000,
        "curl -u " * 6_000,
        "sshpass -a " * 5_000,
        "Authorization: " * 3_000,
        "x-token-" * 6_000,
        "https://a:" * 5_000,
        "?a_" * 16_000,
        '"' * 50_000,
        "'" * 50_000,
        "TOKEN=" * 8_000,
        'TOKEN="' * 8_000,
        "sk-A1" * 10_000,
        "--a-token" * 5_000,
        '"token' * 8_000,
        "_" * 50_000,
        "authorization:" * 3_500,
        "Authorization: a" * 3_000,
        "X-Api-Key:" * 5_000,
        '"password":' * 4_500,
        "docker login -p " * 3_000,
        "aws_secret_access_key " * 2_000,
    ],
    ids=lambda text: re.sub(r"\W", "_", text[:12]),
)
def test_pathological_input_returns(text: str) -> None:
    redacted, _ = redact_count(text)
    assert isinstance(redacted, str)


# Code and config files write a secret with spaces or a colon; the value must look generated.
KEYWORD_VALUES: list[tuple[str, str]] = [
    ('x_api_token = "9f8e7d6c5b4a3f2e1d0c9b8a"', "9f8e7d6c5b4a3f2e1d0c9b8a"),
    ("api_key: 4f3c2b1a0e9d8c7b6a5f", "4f3c2b1a0e9d8c7b6a5f"),
    ('DB_PASSWORD := "Zx9!qL2#mP7w"', "Zx9!qL2#mP7w"),
    ("  :password => 'a8Fj2kLq9Zp0'", "a8Fj2kLq9Zp0"),
    ("[db]\npassword = 5eCr3tV4lu3x9\nhost = db", "5eCr3tV4lu3x9"),
    ('{"client_secret" : "Qm9vM2xvbmc4NzY1NDMyMQ"}', "Qm9vM2xvbmc4NzY1NDMyMQ"),
]

# Written the same way, but code, types, references and fixture words: kept.
KEYWORD_NON_SECRETS = [
    'password = "changeme"',
    "token = next_token(stream)",
    "secret: ${{ secrets.DEPLOY }}",
    "max_tokens: 4096",
    "token_type: bearer",
    'password: str = "hunter2"',
    "auth: true",
    "api_key = os.environ['API_KEY']",
    "cache_key: v2-deps-abc123",
    "permissions:\n  id-token: write\n  contents: read",
]


# A secret's name with a value that is not one: a placeholder, a boolean, a call, a reference
# or a version (issue 47: 190 such spans in the history of two real projects).
ORDINARY_VALUES = [
    "SECRET_KEY='dev'",
    "local_auth=True",
    "token=generate_token(user, scope='read')",
    "  path-key: 4.0.0",
    "resolve-api-key: ^1.2",
    "export API_TOKEN=changeme",
    "API_KEY=${API_KEY} make deploy",
    'secret_key = os.environ["SECRET_KEY"]',
    "x-cli login --token xxx",
    "x-cli login --password '<your password>'",
    '{"password": "changeme", "user": "bob"}',
    "withCredentials=defaultToConfig2",
    "client = Client(auth=auth, timeout=5)",
    "DJANGO_SECRET_KEY=settings.SECRET_KEY",
    "enable_auth=false",
    "set -gx GITHUB_TOKEN {env.GITHUB_TOKEN}",
]


# Secrets that only their context gives away, written the ways issue 47 found missed: each
# with the pieces that must not survive.
CONTEXT_SHAPES: list[tuple[str, list[str]]] = [
    ("the previous key was 9f8e7d6c5b4a3f2e1d0c, do not reuse it", ["9f8e7d6c5b4a3f2e1d0c"]),
    ("upload failed for key Qm9vM2xvbmc4NzY1NDMy after the rotation", ["Qm9vM2xvbmc4NzY1NDMy"]),
    ("use secret Zx9qL2mP7wVb4tKq9 for the webhook", ["Zx9qL2mP7wVb4tKq9"]),
    ("echo 7Hq2Lm9Xv4Rt8Kp3Wn6Z | x-cli login --with-token", ["7Hq2Lm9Xv4Rt8Kp3Wn6Z"]),
    ("printf %s 7Hq2Lm9Xv4Rt8Kp3 | docker login -u ci --password-stdin", ["7Hq2Lm9Xv4Rt8Kp3"]),
    (
        "Fix the deploy\n\nThe job was given ghp_16C7e42F292c6912E77\n"
        "10c838347Ae178B4a by mistake.",
        ["ghp_16C7e42F292c6912E77", "10c838347Ae178B4a"],
    ),
    (
        "export DEPLOY_TOKEN=9f8e7d6c5b4a\\\n  3f2e1d0c9b8a && ./deploy",
        ["9f8e7d6c5b4a", "3f2e1d0c9b8a"],
    ),
    ('API_KEY = ("9f8e7d6c5b4a3f" "2e1d0c9b8a7f6e")', ["9f8e7d6c5b4a3f", "2e1d0c9b8a7f6e"]),
    ("db:\n  password: |\n    Zx9!qL2#mP7wVb4t\n  host: db", ["Zx9!qL2#mP7wVb4t"]),
]


@pytest.mark.parametrize(("text", "pieces"), CONTEXT_SHAPES)
def test_a_secret_given_away_by_its_context_loses_every_piece(text: str, pieces: list[str]):
    redacted = redact(text)
    assert [piece for piece in pieces if piece in redacted] == []
    assert redacted.count("\n") == text.count("\n")  # no line is added or lost
    assert redact(redacted) == redacted


@pytest.mark.parametrize("text", ORDINARY_VALUES)
def test_a_placeholder_boolean_call_reference_or_version_is_kept(text: str) -> None:
    assert redact_count(text) == (text, 0)


@pytest.mark.parametrize(("text", "secret"), KEYWORD_VALUES)
def test_random_value_next_to_a_keyword_is_redacted(text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted
    assert PLACEHOLDER in redacted


@pytest.mark.parametrize("text", KEYWORD_NON_SECRETS)
def test_ordinary_value_next_to_a_keyword_is_kept(text: str) -> None:
    assert redact(text) == text


def test_prose_password_is_cut_at_the_end_of_its_value_not_at_an_ampersand() -> None:
    assert redact("try password=Tr0ub4dor&3xyz then") == "try password=[REDACTED] then"
    # In a URL the query rule owns it, and the next parameter stays.
    assert redact("curl 'https://x.io/a?password=hunter2&page=2'") == (
        "curl 'https://x.io/a?password=[REDACTED]&page=2'"
    )
