"""Ordinary commands a developer or a coding agent runs, none holding a secret, that must come
back from redaction unchanged.

They are what a day in a repository looks like (git, make, test runners, package managers,
containers, searches and edits), with the near misses a detector must not fire on: names that
contain a secret word (``MAX_TOKENS``, ``PWD``, ``TOKENIZERS_PARALLELISM``), secret words with
no value (``--password-stdin``, ``kubectl get secret``), values that are references
(``$(gh auth token)``, ``"$API_KEY"``), placeholders in test fixtures, and long hex or base64
that is not secret: commit shas, container ids, UUIDs, image digests, lockfile integrity
hashes, hex colours, version strings. ``{sha}``, ``{short}``, ``{uuid}``, ``{digest}``,
``{integrity}`` and ``{container}`` are filled from a seeded generator (replaced by name, so the
commands' own braces stay as typed).
"""

from __future__ import annotations

import base64
import random

from .formats import HEX, pick, uuid

__all__ = ["ERRORS", "TEMPLATES", "ordinary_commands", "ordinary_errors"]

TEMPLATES: list[str] = [
    # git
    "git status",
    "git status --short --branch",
    "git diff --stat",
    "git diff --cached",
    "git log --oneline -20",
    "git log --since=2.weeks --author=ada --format='%h %s'",
    "git show {short}",
    "git show {sha} --stat",
    "git checkout -b fix/4821-upload-timeout",
    "git switch main",
    "git pull --rebase origin main",
    "git push -u origin fix/4821-upload-timeout",
    "git rebase -i HEAD~3",
    "git cherry-pick {sha}",
    "git revert --no-edit {sha}",
    'git commit -m "Revert \\"Add retry budget\\"" -m "This reverts commit {sha}."',
    'git commit -m "fix: handle empty token list in tokenizer"',
    'git commit -am "chore(deps): bump httpx from 0.27.2 to 0.28.1"',
    "git bisect start {sha} {short}",
    "git bisect good {short}",
    "git blame -L 40,60 src/auth.py",
    "git stash push -m 'wip token refresh'",
    "git stash pop",
    "git reset --hard {short}",
    "git tag -a v2.4.1 -m 'Release 2.4.1'",
    "git fetch --prune --tags",
    "git worktree add ../api-hotfix hotfix/2.4",
    "git merge-base main {sha}",
    "git rev-parse --short HEAD",
    "git config --get user.email",
    "git remote -v",
    "git log -p -S 'api_key' -- src/",
    "git grep -n 'password' -- '*.py'",
    "git diff {short}..{sha} -- src/settings.py",
    "git range-diff main~3 main topic",
    # build, test, lint
    "make",
    "make -j8 test",
    "make clean build",
    "make docs SPHINXOPTS=-W",
    "pytest",
    "pytest -x -q tests/test_auth.py",
    'pytest -k "test_token_refresh and not slow"',
    "pytest tests/test_upload.py::test_retry_budget -vv",
    "pytest --lf --maxfail=1",
    "python -m pytest -n auto --cov=src --cov-report=term-missing",
    "TOKENIZERS_PARALLELISM=false pytest tests/test_embed.py",
    "MAX_TOKENS=4096 python eval.py",
    "PYTHONPATH=src python -m app.cli --help",
    "python manage.py migrate --plan",
    "python -c 'import secrets; print(secrets.token_hex(16))'",
    "python -m venv .venv",
    "ruff check --fix src tests",
    "ruff format --check .",
    "mypy src --strict",
    "black --check .",
    "pre-commit run --all-files",
    "tox -e py311",
    "nox -s lint",
    "cargo build --release",
    "cargo test -p parser -- --nocapture",
    "cargo clippy -- -D warnings",
    "cargo fmt --all",
    "cargo update -p serde --precise 1.0.219",
    "go test ./... -run TestAuth",
    "go build -o bin/server ./cmd/server",
    "go mod tidy",
    "go vet ./...",
    "npm ci",
    "npm install react@18.3.1 react-dom@18.3.1",
    "npm run build",
    "npm test -- --watch=false",
    "npm run lint -- --fix",
    "npx tsc --noEmit",
    "npx prettier --write 'src/**/*.ts'",
    "yarn add -D vitest@2.1.8",
    "pnpm install --frozen-lockfile",
    "pnpm -r run test",
    "node --max-old-space-size=4096 scripts/build.js",
    "export NODE_OPTIONS=--max-old-space-size=4096",
    "pip install -e '.[dev]'",
    "pip install httpx==0.28.1 'pydantic>=2.7,<3'",
    "uv pip compile requirements.in -o requirements.txt",
    "poetry add pyjwt@^2.9.0",
    "bundle exec rspec spec/models/user_spec.rb",
    "mvn -q -DskipTests package",
    "./gradlew test --tests 'com.example.auth.TokenServiceTest'",
    # containers and clusters
    "docker build -t shop/api:2.4.1 .",
    "docker compose up -d db redis",
    "docker compose logs -f api",
    "docker ps -a --format '{{.ID}} {{.Names}}'",
    "docker logs --tail 100 {container}",
    "docker exec -it {container} sh",
    "docker rm -f {container}",
    "docker pull python:3.11-slim@sha256:{digest}",
    "docker image inspect sha256:{digest}",
    "docker run --rm -e LOG_LEVEL=debug -p 8080:8080 shop/api:2.4.1",
    'echo "$CR_PAT" | docker login ghcr.io -u ada --password-stdin',
    'echo "$GH_TOKEN" | gh auth login --with-token',
    "gh auth login --with-token < ~/.config/gh/pat.txt",
    "kubectl get pods -n shop",
    "kubectl describe pod api-7d9f8c6b5d-x2k4q -n shop",
    "kubectl logs deploy/api -n shop --since=10m",
    "kubectl get secret db-credentials -o yaml",
    "kubectl create secret generic db-credentials --from-file=./secrets/db.env",
    "kubectl rollout restart deployment/api -n shop",
    "kubectl delete pod job-{uuid} -n batch",
    "helm upgrade --install api ./chart -f values/staging.yaml",
    "terraform plan -out tf.plan",
    "terraform apply tf.plan",
    "aws s3 ls s3://shop-artifacts/releases/",
    "aws configure list",
    "aws sts get-caller-identity",
    "gcloud auth application-default login",
    "gh pr create --fill",
    "gh pr checks 4821",
    "gh run view 12873645102 --log-failed",
    "gh api repos/shop/api/pulls/4821/comments",
    "GITHUB_TOKEN=$(gh auth token) gh api user",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/me',
    'curl -sS -H "Authorization: Bearer ${API_TOKEN}" https://api.example.com/v1/health',
    "curl -fsSL https://example.com/install.sh | sh",
    "curl -I https://shop.example.com/healthz",
    'curl -X POST -H "Content-Type: application/json" -d \'{"sku": "A-100"}\' localhost:8080/cart',
    # files, search, edits
    "ls -la",
    "ls src/auth",
    "cd ../api-hotfix",
    "pwd",
    "export PWD=/home/ada/src/shop",
    "cd ~/src/shop && export OLDPWD=/tmp",
    "cat pyproject.toml",
    "head -n 40 src/auth/tokens.py",
    "tail -f logs/app.log",
    "less CHANGELOG.md",
    "wc -l src/**/*.py",
    "tree -L 2 src",
    'grep -rn "api_key" src/',
    "grep -rn 'password = \"changeme\"' tests/fixtures/",
    "rg -n 'TODO|FIXME' src",
    'rg "def (get|refresh)_token" -t py',
    "rg -l secret_key_base config/",
    "rg -n '#ff00aa' src/theme",
    "sed -i 's/#ff00aa/#00ffaa/g' src/theme/colors.css",
    "sed -n '120,160p' src/auth/session.py",
    "awk -F, '{print $3}' data/orders.csv | sort | uniq -c",
    "find . -name '*.pyc' -delete",
    "find src -name '*_test.go' -newer go.mod",
    "jq '.packages[\"node_modules/react\"].integrity' package-lock.json",
    "grep -n 'integrity' package-lock.json | head -3",
    "grep -c '{integrity}' package-lock.json",
    "diff -u old/settings.py new/settings.py",
    "chmod +x scripts/release.sh",
    "rm -rf build dist",
    "mkdir -p tests/fixtures/tokens",
    "cp .env.example .env",
    "mv src/auth/token.py src/auth/tokens.py",
    "ln -s ../shared/config config",
    "tar czf release-2.4.1.tgz dist/",
    "du -sh node_modules",
    "vim src/auth/tokens.py",
    "code .",
    "open http://localhost:8080",
    "echo 'password = \"changeme\"  # test fixture' >> tests/fixtures/settings.py",
    "echo $AWS_SECRET_ACCESS_KEY | wc -c",
    'echo "${DATABASE_URL%%\\?*}"',
    "ssh-keygen -t ed25519 -C ada@example.com -f ~/.ssh/id_ed25519",
    "ssh deploy@10.0.4.12 uptime",
    "scp dist/release-2.4.1.tgz deploy@10.0.4.12:/srv/releases/",
    "openssl rand -hex 32",
    "openssl x509 -in certs/server.crt -noout -dates",
    "gpg --list-secret-keys --keyid-format=long",
    "sha256sum dist/release-2.4.1.tgz",
    "md5sum data/orders.csv",
    "base64 -d <<< aGVsbG8gd29ybGQ=",
    "export GOOGLE_APPLICATION_CREDENTIALS="
    "$HOME/.config/gcloud/application_default_credentials.json",
    "export KUBECONFIG=~/.kube/staging.yaml",
    "export AUTHOR='Ada Lovelace'",
    "export EDITOR=vim",
    "export PATH=$HOME/.cargo/bin:$PATH",
    "source .venv/bin/activate",
    "unset HISTFILE",
    "history | tail -20",
    "env | grep -i proxy",
    "which python3",
    "ps aux | grep gunicorn",
    "kill -HUP 4821",
    "lsof -i :8080",
    "top -o cpu",
    "psql -h db.internal -U app -c 'select count(*) from orders'",
    "redis-cli -h redis.internal ping",
    "mysql -u root -p shop < dump.sql",
    "sqlite3 .nexusmem/memory.db 'pragma integrity_check'",
    "psql \"$DATABASE_URL\" -c '\\dt'",
    "pg_dump --schema-only shop > schema.sql",
    "alembic revision --autogenerate -m 'add api_keys table'",
    "alembic upgrade head",
    "python scripts/rotate_keys.py --dry-run",
    "python scripts/gen_fixture.py --user {uuid}",
    "curl -s localhost:8080/api/orders/{uuid} | jq .status",
    "open https://github.com/shop/api/commit/{sha}",
    "git log --grep 'token' --oneline",
    "git log --format=%H -1",
    "git notes add -m 'deployed' {sha}",
    "npm view axios@1.7.9 dist.integrity",
    "npm audit --omit=dev",
    "pip hash dist/shop-2.4.1.tar.gz",
    "cosign verify ghcr.io/shop/api@sha256:{digest}",
    "crane digest ghcr.io/shop/api:2.4.1",
    "echo 'sha256:{digest}' >> digests.txt",
    "nexusmem query 'why was the token cache dropped'",
    "claude --resume",
    "codex exec 'fix the failing test'",
    "make release VERSION=2.4.1",
    "printf '%s\\n' 1.2.3 1.10.0 | sort -V",
    "date -u +%Y-%m-%dT%H:%M:%SZ",
    "uuidgen",
    "watch -n 5 kubectl get pods -n shop",
    "time make test",
    "nproc",
    "df -h .",
    "free -m",
]


def _fill(template: str, r: random.Random) -> str:
    sha = pick(r, HEX, 40)
    integrity = "sha512-" + base64.b64encode(r.randbytes(64)).decode()
    fields = {
        "sha": sha,
        "short": pick(r, HEX, 7),
        "uuid": uuid(r),
        "digest": pick(r, HEX, 64),
        "integrity": integrity,
        "container": pick(r, HEX, 12),
    }
    for name, text in fields.items():
        template = template.replace("{" + name + "}", text)
    return template


def ordinary_commands(seed: int = 0) -> list[str]:
    """The ordinary commands, placeholders filled deterministically from ``seed``."""
    r = random.Random(f"ordinary-{seed}")
    return [_fill(template, r) for template in TEMPLATES]


ERRORS: list[str] = [
    "Exit code 1\nFAILED tests/test_upload.py::test_retry_budget - AssertionError: assert 3 == 5",
    "Exit code 1\nE   KeyError: 'api_key'\nFAILED tests/test_settings.py::test_defaults",
    "Exit code 2\nerror[E0308]: mismatched types\n  --> src/token.rs:41:17\n   |\n"
    "41 |     let t: u32 = parse(s);",
    "Exit code 1\n--- FAIL: TestRefreshToken (0.02s)\n    auth_test.go:88: got 401, want 200\n"
    "FAIL\tgithub.com/shop/api/auth\t0.418s",
    "Exit code 1\nTraceback (most recent call last):\n"
    '  File "/home/ada/src/shop/app/cache.py", line 52, in get\n    return self._store[key]\n'
    "KeyError: <CacheKey object at 0x7f3a2c1b9e50>",
    "Exit code 128\nfatal: bad revision '{sha}'",
    "Exit code 1\nerror: pathspec 'fix/{short}' did not match any file(s) known to git",
    "Exit code 1\nError response from daemon: No such container: {container}",
    'Exit code 1\nError from server (NotFound): pods "api-7d9f8c6b5d-x2k4q" not found',
    "Exit code 1\nnpm ERR! code EINTEGRITY\n"
    "npm ERR! sha512-{b64} integrity checksum failed when using sha512",
    "Exit code 1\nmanifest unknown: sha256:{digest} not found in ghcr.io/shop/api",
    "Exit code 1\njob {uuid} failed: timeout after 120s",
    "Exit code 1\nmypy: src/auth/tokens.py:12: error: Incompatible return value type "
    '(got "str | None", expected "str")',
    "Exit code 1\nruff: src/settings.py:3:1: S105 Possible hardcoded password assigned to: "
    '"PASSWORD_FIELD"',
    "Exit code 1\nwarning: the token cache is empty; run `shop login` first",
]


def ordinary_errors(seed: int = 0) -> list[str]:
    """Failure messages of ordinary commands (test runners, compilers, git, containers)."""
    r = random.Random(f"errors-{seed}")
    out = []
    for template in ERRORS:
        text = _fill(template, r).replace("{b64}", base64.b64encode(r.randbytes(64)).decode())
        out.append(text)
    return out
