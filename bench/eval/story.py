# ruff: noqa: E501 - file contents of another project, kept as that project wrote them
"""The planted history of "photodrop", a small photo-upload service, March to September 2026.

Every commit, doc section and shell session here is written by hand, and the facts the queries
in ``queries.json`` ask about live here: why the S3 retry budget was raised, why compose maps
Postgres to 5433, the albums migration that was reverted, why BM25 runs before vectors, the
commands that failed on the way. ``filler.py`` adds the everyday commits around them.
"""

from __future__ import annotations

import textwrap

from model import A, AgentSession, AgentStep, Cmd, Commit, D, Doc, R, Section, Shell, W, code

__all__ = ["AUTHORS", "DOCS", "SESSIONS", "STORY"]

AUTHORS = {
    "dependabot": ("dependabot[bot]", "49699333+dependabot[bot]@users.noreply.github.com", "+0000"),
    "ana": ("Ana Lima", "ana.lima@photodrop.dev", "+0100"),
    "ben": ("Ben Okafor", "ben@photodrop.dev", "+0000"),
    "chen": ("Chen Wei", "chen.wei@photodrop.dev", "+0800"),
    "dana": ("Dana Kowalski", "dana.k@photodrop.dev", "+0200"),
}


def body4(text: str) -> str:
    """A block from inside a function body: dedented, then indented one level."""
    return textwrap.indent(code(text), "    ")


# ---------------------------------------------------------------------------------- sources

CONFIG_PY = """
    \"\"\"Settings read from the environment (see .env.example).\"\"\"

    from __future__ import annotations

    import os
    from dataclasses import dataclass


    def _env(name: str, default: str) -> str:
        return os.environ.get(name, default)


    @dataclass(frozen=True)
    class Settings:
        database_url: str = _env(
            "DATABASE_URL", "postgresql://photodrop:photodrop@localhost:5432/photodrop"
        )
        redis_url: str = _env("REDIS_URL", "redis://localhost:6379/0")
        s3_bucket: str = _env("S3_BUCKET", "photodrop-dev")
        s3_region: str = _env("S3_REGION", "eu-west-1")
        max_upload_mb: int = int(_env("MAX_UPLOAD_MB", "20"))


    settings = Settings()
"""

APP_PY = """
    \"\"\"The ASGI application: routers, startup checks, health endpoint.\"\"\"

    from __future__ import annotations

    import logging

    from fastapi import FastAPI

    from . import upload

    log = logging.getLogger("photodrop")

    app = FastAPI(title="photodrop", version="0.1.0")
    app.include_router(upload.router)


    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}
"""

UPLOAD_PY = """
    \"\"\"POST /photos: accept an upload, store the original, queue the thumbnails.\"\"\"

    from __future__ import annotations

    import uuid

    from fastapi import APIRouter, File, HTTPException, UploadFile

    from . import queue, storage

    MAX_UPLOAD_BYTES = 20 * 1024 * 1024
    ALLOWED_TYPES = {"image/jpeg", "image/png", "image/webp"}

    router = APIRouter()


    def new_photo_id() -> str:
        return uuid.uuid4().hex


    @router.post("/photos", status_code=201)
    async def upload_photo(file: UploadFile = File(...)) -> dict[str, str]:
        if file.content_type not in ALLOWED_TYPES:
            raise HTTPException(415, f"unsupported type {file.content_type}")
        data = await file.read()
        if len(data) > MAX_UPLOAD_BYTES:
            raise HTTPException(413, "photo is larger than 20 MB")
        photo_id = new_photo_id()
        key = storage.put_original(photo_id, data, file.content_type)
        queue.enqueue_thumbnails(photo_id, key)
        return {"id": photo_id}
"""

STORAGE_PY = """
    \"\"\"Object storage for original photos and thumbnails (S3).\"\"\"

    from __future__ import annotations

    import logging

    import boto3
    from botocore.config import Config

    from .config import settings

    log = logging.getLogger(__name__)

    MAX_RETRIES = 3
    CONNECT_TIMEOUT = 5
    READ_TIMEOUT = 10


    def client():
        return boto3.client(
            "s3",
            region_name=settings.s3_region,
            config=Config(
                retries={"max_attempts": MAX_RETRIES, "mode": "legacy"},
                connect_timeout=CONNECT_TIMEOUT,
                read_timeout=READ_TIMEOUT,
            ),
        )


    def original_key(photo_id: str) -> str:
        return f"originals/{photo_id[:2]}/{photo_id}"


    def put_original(photo_id: str, data: bytes, content_type: str) -> str:
        key = original_key(photo_id)
        client().put_object(
            Bucket=settings.s3_bucket, Key=key, Body=data, ContentType=content_type
        )
        log.info("stored original %s (%d bytes)", key, len(data))
        return key
"""

QUEUE_PY = """
    \"\"\"The job queue between the API and the thumbnail worker (Redis + rq).\"\"\"

    from __future__ import annotations

    from redis import Redis
    from rq import Queue

    from .config import settings

    _queue = Queue("thumbnails", connection=Redis.from_url(settings.redis_url))


    def enqueue_thumbnails(photo_id: str, key: str) -> None:
        _queue.enqueue("photodrop.worker.make_thumbnails", photo_id, key, job_timeout=120)
"""

THUMBNAILS_PY = """
    \"\"\"Thumbnails: a 256 px square crop for the grid and a 1024 px preview.\"\"\"

    from __future__ import annotations

    import io

    from PIL import Image, ImageOps

    SIZES = {"grid": 256, "preview": 1024}
    JPEG_QUALITY = 85


    def render(data: bytes, size: int, square: bool = False) -> bytes:
        image = Image.open(io.BytesIO(data))
        image = image.convert("RGB")
        if square:
            image = ImageOps.fit(image, (size, size))
        else:
            image.thumbnail((size, size))
        out = io.BytesIO()
        image.save(out, "JPEG", quality=JPEG_QUALITY)
        return out.getvalue()


    def make_all(data: bytes) -> dict[str, bytes]:
        return {
            name: render(data, size, square=(name == "grid")) for name, size in SIZES.items()
        }
"""

WORKER_PY = """
    \"\"\"The thumbnail worker: fetch the original, render the sizes, store them.\"\"\"

    from __future__ import annotations

    import logging

    from . import storage, thumbnails

    log = logging.getLogger(__name__)


    def make_thumbnails(photo_id: str, key: str) -> None:
        data = storage.get_object(key)
        for name, blob in thumbnails.make_all(data).items():
            storage.put_thumbnail(photo_id, name, blob)
        log.info("thumbnails done for %s", photo_id)
"""

DB_PY = """
    \"\"\"Database access: one connection pool, a few queries.\"\"\"

    from __future__ import annotations

    import psycopg
    from psycopg_pool import ConnectionPool

    from .config import settings

    pool = ConnectionPool(settings.database_url, min_size=1, max_size=10, open=False)


    def insert_photo(photo_id: str, owner_id: int, key: str, content_type: str) -> None:
        with pool.connection() as conn:
            conn.execute(
                "insert into photos (id, owner_id, s3_key, content_type) values (%s, %s, %s, %s)",
                (photo_id, owner_id, key, content_type),
            )


    def list_photos(owner_id: int, limit: int = 50, offset: int = 0) -> list[tuple]:
        with pool.connection() as conn:
            return conn.execute(
                "select id, s3_key, created_at from photos where owner_id = %s "
                "order by created_at desc limit %s offset %s",
                (owner_id, limit, offset),
            ).fetchall()
"""

AUTH_PY = """
    \"\"\"Signed upload tokens: what a mobile client presents instead of a session cookie.\"\"\"

    from __future__ import annotations

    import base64
    import hashlib
    import hmac
    import time

    from fastapi import Header, HTTPException

    from .config import settings

    TOKEN_TTL = 15 * 60


    def _sign(payload: bytes) -> str:
        mac = hmac.new(settings.signing_key.encode(), payload, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")


    def issue(user_id: int) -> str:
        payload = f"{user_id}.{int(time.time()) + TOKEN_TTL}"
        return f"{payload}.{_sign(payload.encode())}"


    def verify(token: str) -> int:
        try:
            user, expires, signature = token.rsplit(".", 2)
        except ValueError:
            raise HTTPException(401, "malformed token") from None
        if signature != _sign(f"{user}.{expires}".encode()):
            raise HTTPException(401, "bad signature")
        if int(expires) < time.time():
            raise HTTPException(401, "token expired")
        return int(user)


    async def current_user(authorization: str = Header(...)) -> int:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer":
            raise HTTPException(401, "expected a bearer token")
        return verify(token)
"""

SEARCH_PY = """
    \"\"\"Caption search over the photos a user owns.\"\"\"

    from __future__ import annotations

    from .db import pool

    QUERY = (
        "select id, caption, ts_rank(caption_tsv, q) as rank "
        "from photos, plainto_tsquery('simple', %s) q "
        "where owner_id = %s and caption_tsv @@ q order by rank desc limit %s"
    )


    def search_captions(owner_id: int, text: str, limit: int = 20) -> list[tuple]:
        with pool.connection() as conn:
            return conn.execute(QUERY, (text, owner_id, limit)).fetchall()
"""

INIT_SQL = """
    create table users (
        id bigserial primary key,
        email text not null unique,
        created_at timestamptz not null default now()
    );

    create table photos (
        id text primary key,
        owner_id bigint not null references users(id),
        s3_key text not null,
        content_type text not null,
        caption text,
        created_at timestamptz not null default now()
    );
"""

COMPOSE = """
    services:
      db:
        image: postgres:16
        environment:
          POSTGRES_USER: photodrop
          POSTGRES_PASSWORD: photodrop
          POSTGRES_DB: photodrop
        ports:
          - "5432:5432"
        volumes:
          - pgdata:/var/lib/postgresql/data
      redis:
        image: redis:7
        ports:
          - "6379:6379"

    volumes:
      pgdata:
"""

MAKEFILE = """
    .PHONY: dev test lint migrate worker

    dev:
    \tuvicorn photodrop.app:app --reload --port 8000

    test:
    \tpytest -q

    lint:
    \truff check src tests
    \truff format --check src tests

    migrate:
    \tfor f in migrations/*.sql; do psql "$$DATABASE_URL" -f $$f; done

    worker:
    \trq worker thumbnails --url "$$REDIS_URL"
"""

DOCKERFILE = """
    FROM python:3.12
    WORKDIR /app
    COPY pyproject.toml .
    COPY src ./src
    RUN pip install .
    CMD ["uvicorn", "photodrop.app:app", "--host", "0.0.0.0", "--port", "8000"]
"""

UPLOADER_TSX = """
    import { useState } from "react";
    import { uploadPhoto } from "./api";

    export function Uploader() {
      const [busy, setBusy] = useState(false);
      const [error, setError] = useState<string | null>(null);

      async function onChange(event: React.ChangeEvent<HTMLInputElement>) {
        const file = event.target.files?.[0];
        if (!file) return;
        setBusy(true);
        setError(null);
        try {
          await uploadPhoto(file);
        } catch (err) {
          setError(String(err));
        } finally {
          setBusy(false);
        }
      }

      return (
        <label className="uploader">
          <input type="file" accept="image/*" onChange={onChange} disabled={busy} />
          {error && <p className="error">{error}</p>}
        </label>
      );
    }
"""

API_TS = """
    const BASE = import.meta.env.VITE_API_URL ?? "http://localhost:8000";

    export async function uploadPhoto(file: File): Promise<{ id: string }> {
      const body = new FormData();
      body.append("file", file);
      const response = await fetch(`${BASE}/photos`, { method: "POST", body });
      if (!response.ok) throw new Error(`upload failed: ${response.status}`);
      return response.json();
    }
"""

NGINX_CONF = """
    server {
        listen 8080;
        location / {
            proxy_pass http://api:8000;
            proxy_set_header Host $host;
        }
    }
"""

TEST_UPLOAD = """
    from fastapi.testclient import TestClient

    from photodrop.app import app

    client = TestClient(app)


    def test_rejects_unsupported_type():
        response = client.post("/photos", files={"file": ("a.gif", b"GIF89a", "image/gif")})
        assert response.status_code == 415
"""

TEST_THUMBS = """
    import io

    from PIL import Image

    from photodrop import thumbnails


    def jpeg(width: int, height: int) -> bytes:
        out = io.BytesIO()
        Image.new("RGB", (width, height), "white").save(out, "JPEG")
        return out.getvalue()


    def test_grid_is_square():
        grid = Image.open(io.BytesIO(thumbnails.render(jpeg(800, 600), 256, square=True)))
        assert grid.size == (256, 256)
"""

# --------------------------------------------------------------------------------------- docs

DOCS: dict[str, Doc] = {}


def _doc(path: str, *sections: Section) -> None:
    DOCS[path] = Doc(path, list(sections))


_doc(
    "README.md",
    Section(
        "Photodrop",
        code("""
        Photodrop takes photos from the web and mobile apps, keeps the originals in S3 and
        serves thumbnails and a searchable gallery. It is a FastAPI service with a Redis-backed
        worker for everything slow.
        """),
        level=1,
    ),
    Section(
        "Features",
        code("""
        - Uploads up to 20 MB (JPEG, PNG, WebP, and HEIC since 0.5), streamed to S3
        - Grid and preview thumbnails rendered by a background worker
        - Caption search with lexical ranking and an embedding rerank
        - Signed upload tokens for mobile clients; per-user rate limits
        """),
    ),
    Section(
        "Quick start",
        code("""
        ```sh
        cp .env.example .env
        docker compose up -d
        make migrate
        make dev
        ```

        The API listens on http://localhost:8000 and the web app on http://localhost:5173.
        """),
    ),
    Section(
        "Configuration",
        code("""
        Everything is read from the environment; `.env.example` lists every variable with a
        working default for local development. `S3_BUCKET` and `S3_REGION` select the bucket,
        `SIGNING_KEY` signs upload tokens and must be the same on every API instance.
        """),
    ),
    Section(
        "Running tests",
        code("""
        `make test` runs the Python suite; it needs the compose services running. The frontend
        has its own: `cd frontend && npm test`. CI runs both, plus `make lint`.
        """),
    ),
    Section(
        "License",
        "MIT, see LICENSE.\n",
    ),
)

_doc(
    "CONTRIBUTING.md",
    Section("Contributing", "Thanks for helping. A few house rules keep the history useful.\n", 1),
    Section(
        "Commit messages",
        code("""
        Use conventional commits (`fix(storage): ...`, `feat(api): ...`). A fix says in its
        body what broke, how it showed up, and why the change is the right one; the next
        person to touch the code will read it in `git log` before they read the code.
        """),
    ),
    Section(
        "Code review",
        code("""
        Every change goes through a pull request with one approval. Migrations need a second
        reviewer from the on-call rotation, because they run against production during deploys.
        """),
    ),
)

_doc(
    "docs/architecture.md",
    Section(
        "Architecture",
        "How a photo travels from the client to the gallery.\n",
        1,
    ),
    Section(
        "Upload path",
        code("""
        The client sends a multipart POST to `/photos` with a bearer token. The API checks the
        token, the rate limit and the content type, writes the original to S3, inserts a row in
        `photos` and queues a thumbnail job. The request returns as soon as the original is
        safely stored; thumbnails appear a few seconds later.
        """),
    ),
    Section(
        "Why uploads stream to S3",
        code("""
        The first version read the whole file into memory before calling `put_object`. With
        forty concurrent 20 MB uploads an API container sat at 1.2 GB and was OOM-killed. The
        handler now hands the spooled file to `upload_fileobj`, which sends 8 MB parts as a
        multipart upload, so memory per request stays around one part no matter how large the
        photo is. The cost is more requests to S3 per upload, which is cheap next to a restart.
        """),
    ),
    Section(
        "Thumbnail worker",
        code("""
        The worker takes jobs from the `thumbnails` queue, downloads the original, renders the
        grid (256 px, square) and preview (1024 px) sizes and stores them next to the original.
        A job is acknowledged only after both thumbnails are written, so a crashed worker means
        the job runs again, never that it is lost.
        """),
    ),
    Section(
        "Storage layout",
        code("""
        Originals live under `originals/<first two hex digits>/<photo id>` and thumbnails under
        `thumbs/<size>/<photo id>.jpg` in the same bucket. The two-character prefix spreads keys
        across S3 partitions.
        """),
    ),
)

_doc(
    "docs/development.md",
    Section("Development", "Setting up a laptop to work on the service.\n", 1),
    Section(
        "Local services",
        code("""
        `docker compose up -d` starts Postgres 16, Redis 7 and ClamAV. The API and the worker
        run on the host (`make dev`, `make worker`) so that reloads are instant.
        """),
    ),
    Section(
        "Database port",
        code("""
        Compose publishes Postgres on host port 5433, not 5432. Most of us also run a
        Homebrew or Postgres.app server on 5432, and the container then failed to start with
        "port is already allocated". Use `DATABASE_URL=postgresql://photodrop:photodrop@localhost:5433/photodrop`
        (the default in `.env.example`).
        """),
    ),
    Section(
        "Running the worker",
        code("""
        `make worker` starts one worker process on the host against the compose Redis. It
        reloads nothing: restart it after changing thumbnail code. Jobs left in the queue by a
        crashed worker are picked up again on start.
        """),
    ),
    Section(
        "Frontend",
        code("""
        The web app is a Vite + React project in `frontend/`. `npm install`, then `npm run dev`;
        it proxies `/api` to the API on port 8000. Run `npm run typecheck` before pushing: the
        production build fails on type errors.
        """),
    ),
    Section(
        "Debugging uploads",
        code("""
        `curl -F file=@photo.jpg -H "Authorization: Bearer $TOKEN" localhost:8000/photos` is
        the quickest check. Through nginx (port 8080) large files used to get an empty reply:
        that was nginx's body size limit, see the deployment docs.
        """),
    ),
)

_doc(
    "docs/search.md",
    Section("Caption search", "How a gallery search finds photos by their captions.\n", 1),
    Section(
        "Why BM25 runs before vectors",
        code("""
        Captions are short and full of names: places, people, camera models. A lexical pass
        (Postgres full-text with BM25-style weighting) gets "Lisbon" or "X100V" exactly right,
        needs no model, and answers in a few milliseconds. The embedding model only reorders
        the top 200 lexical candidates. Ranking the other way round made exact names lose to
        vaguely similar captions, and it made every search depend on the embedding sidecar
        being up. Lexical first means a slow or missing model costs some ordering at the tail,
        never the search itself.
        """),
    ),
    Section(
        "Embedding model",
        code("""
        Captions are embedded with a small sentence-transformer served by a sidecar over HTTP.
        Query vectors are cached in Redis for a day, keyed by the normalised query text.
        """),
    ),
    Section(
        "When the sidecar is down",
        code("""
        If the embedding service does not answer within 300 ms, search returns the lexical
        ranking as is and logs a warning. Before August it returned a 500 instead.
        """),
    ),
)

_doc(
    "docs/migrations.md",
    Section("Migrations", "Schema changes run during deploys, against the live database.\n", 1),
    Section(
        "Writing a migration",
        code("""
        Since 1.0 migrations are Alembic revisions under `alembic/versions/`. Generate with
        `alembic revision --autogenerate -m "..."`, then read what it wrote: autogenerate
        misses server defaults and renames.
        """),
    ),
    Section(
        "Schema and data separately",
        code("""
        Never backfill in the migration that changes the schema. An `UPDATE` over `photos`
        inside the DDL transaction holds its lock for as long as the update runs. Ship the
        schema change alone, then backfill in batches of 5,000 rows from a management command.
        """),
    ),
    Section(
        "The albums incident",
        code("""
        The first albums migration added `album_id` to `photos` and filled it in the same
        transaction. On staging it held an exclusive lock on `photos` for about 40 seconds and
        every upload in that window timed out. It was reverted the next morning and shipped
        again a week later as a schema-only migration plus a batched backfill.
        """),
    ),
)

_doc(
    "docs/security.md",
    Section("Security", "What protects uploads and the people in them.\n", 1),
    Section(
        "Upload tokens",
        code("""
        Clients authenticate with short-lived HMAC-signed tokens (15 minutes) and a refresh
        token. Refresh tokens rotate on every use; presenting an old one revokes the whole
        family, which is how a stolen refresh token gets noticed.
        """),
    ),
    Section(
        "Malware scanning",
        code("""
        Every upload is streamed through clamd before it is stored. Files over 25 MB are never
        scanned because they are rejected earlier by the size limit.
        """),
    ),
    Section(
        "Location data",
        code("""
        Phones write GPS coordinates into EXIF. Public photos are re-encoded without the GPS
        block; orientation and capture time are kept because the gallery needs them.
        """),
    ),
    Section(
        "Reporting a vulnerability",
        "Mail security@photodrop.dev. We answer within two working days.\n",
    ),
)

_doc(
    "docs/runbook.md",
    Section("Runbook", "What to do when something is on fire.\n", 1),
    Section(
        "S3 is slow or failing",
        code("""
        Symptoms: upload latency climbs, `ReadTimeoutError` in the API logs. The client
        already retries with adaptive backoff (8 attempts, 30 s read timeout), so short
        brown-outs should not surface. If errors persist, check the AWS health dashboard for
        eu-west-1 and switch `S3_REGION` to the replica bucket only as a last resort.
        """),
    ),
    Section(
        "Redis refuses connections",
        code("""
        "ERR max number of clients reached" means the workers opened more connections than
        Redis allows. Each worker process uses a pool capped at 20; check that nobody started
        extra workers by hand, then `redis-cli client list | wc -l`.
        """),
    ),
    Section(
        "Grey tiles in the gallery",
        code("""
        A grey tile is a photo whose thumbnails were never written. Look at the queue length
        (`arq --check` or the dashboard) and the worker logs for the photo id; re-queue it with
        `python -m photodrop.requeue <id>`. Formats the worker cannot decode end up here too.
        """),
    ),
    Section(
        "Restoring a deleted photo",
        code("""
        Deleted photos are soft-deleted and kept for 30 days. Clear `deleted_at` on the row;
        the S3 objects are only purged by the nightly job once the 30 days are over.
        """),
    ),
)

_doc(
    "docs/api.rst",
    Section("Upload API", "The HTTP API the web and mobile clients use.\n", 1),
    Section(
        "POST /photos",
        code("""
        Multipart form with one ``file`` field. Returns ``201`` with ``{"id": ...}``. The same
        bytes uploaded twice by one user return the existing photo with ``200``.
        """),
    ),
    Section(
        "GET /photos",
        code("""
        The gallery, newest first, 50 per page. Pass the ``next`` value of a response as
        ``cursor`` to get the following page. Cursors are opaque: they encode the creation time
        and id of the last photo, so pages stay stable while new photos arrive.
        """),
    ),
    Section(
        "Errors",
        code("""
        Errors are JSON: ``{"error": "...", "detail": ...}``. A photo over the size limit gets
        ``413`` with the limit in ``detail``, from the API or from nginx alike.
        """),
    ),
    Section(
        "Authentication",
        code("""
        Every request carries ``Authorization: Bearer <token>``. Tokens come from
        ``POST /auth/token`` and last 15 minutes; refresh them with ``POST /auth/refresh``.
        """),
    ),
    Section(
        "Rate limits",
        code("""
        Each user may upload 30 photos a minute with bursts of 10. Past that the API answers
        ``429`` with ``Retry-After``.
        """),
    ),
)

_doc(
    "docs/deployment.rst",
    Section("Deployment", "How the service is built and run in production.\n", 1),
    Section(
        "Container image",
        code("""
        One multi-stage Dockerfile builds wheels in a full Python image and copies them into
        ``python:3.12-slim``. The image went from 1.4 GB to 310 MB, which halved deploy time.
        The entrypoint runs ``alembic upgrade head`` before starting the server.
        """),
    ),
    Section(
        "Nginx",
        code("""
        nginx sits in front of the API. ``client_max_body_size`` is 25m: its default of 1m
        dropped every real photo with an empty reply before the API ever saw it.
        """),
    ),
    Section(
        "Health checks",
        "``GET /healthz`` answers without touching the database, for the load balancer.\n",
    ),
)

_doc(
    "CHANGELOG.md",
    Section("Changelog", "All notable changes to photodrop.\n", 1),
    Section(
        "1.0.0",
        code("""
        - Alembic migrations; the container runs them on start
        - Progressive JPEG thumbnails, about a third smaller
        - Refresh token rotation
        """),
    ),
    Section(
        "0.9.0",
        code("""
        - Content type sniffed from the uploaded bytes
        - Gallery pagination with cursors
        """),
    ),
    Section(
        "0.8.0",
        code("""
        - Location data removed from public photos
        - Search keeps working without the embedding service
        - JSON 413 errors for oversized uploads
        """),
    ),
    Section(
        "0.5.0",
        code("""
        - HEIC support, drag-and-drop uploader, virus scanning
        - Upload rate limits
        """),
    ),
    Section(
        "0.3.0",
        code("""
        - More robust uploads to S3; uploads no longer buffered in memory
        - Portrait photos are no longer rotated
        """),
    ),
    Section("0.1.0", "- First release: uploads, thumbnails, caption search\n"),
)


def docs(path: str, *headings: str) -> tuple[str, ...]:
    """The keys of sections of ``path`` (all of them when no heading is given)."""
    doc = DOCS[path]
    names = headings or tuple(s.heading for s in doc.sections)
    for name in names:
        assert any(s.heading == name for s in doc.sections), (path, name)
    return tuple(doc.key(h) for h in names)


# -------------------------------------------------------------------------------------- story

STORY: list[Commit] = [
    Commit(
        "2026-03-02 09:40",
        "ana",
        "Initial commit: FastAPI skeleton",
        edits=(
            W("src/photodrop/__init__.py", '__version__ = "0.1.0"\n'),
            W("src/photodrop/config.py", CONFIG_PY),
            W("src/photodrop/app.py", APP_PY),
            W("tests/__init__.py", ""),
            W(".gitignore", ".venv/\n__pycache__/\n.env\nnode_modules/\ndist/\n"),
            W("LICENSE", "MIT License\n\nCopyright (c) 2026 the photodrop authors\n"),
        ),
        docs=docs("README.md", "Photodrop"),
    ),
    Commit(
        "2026-03-03 15:10",
        "ana",
        "feat(upload): accept multipart photo uploads up to 20 MB",
        "JPEG, PNG and WebP only for now. The limit matches what the phone apps send after\n"
        "their own downscaling; anything bigger is almost always a raw file by mistake.",
        edits=(
            W("src/photodrop/upload.py", UPLOAD_PY),
            W("tests/test_upload.py", TEST_UPLOAD),
        ),
    ),
    Commit(
        "2026-03-04 11:25",
        "ben",
        "feat(storage): keep originals in S3",
        "boto3 client with botocore's defaults for now; keys are sharded by the first two\n"
        "characters of the photo id.",
        edits=(
            W("src/photodrop/storage.py", STORAGE_PY),
            W("src/photodrop/queue.py", QUEUE_PY),
        ),
    ),
    Commit(
        "2026-03-05 08:50",
        "chen",
        "feat(db): initial schema for users and photos",
        edits=(
            W("migrations/0001_initial.sql", INIT_SQL),
            W("src/photodrop/db.py", DB_PY),
        ),
    ),
    Commit(
        "2026-03-06 17:05",
        "ben",
        "Add docker compose file for Postgres and Redis",
        edits=(
            W("docker-compose.yml", COMPOSE),
            W("Makefile", MAKEFILE),
            W(
                ".env.example",
                "DATABASE_URL=postgresql://photodrop:photodrop@localhost:5432/photodrop\n"
                "REDIS_URL=redis://localhost:6379/0\nS3_BUCKET=photodrop-dev\n",
            ),
        ),
    ),
    Commit(
        "2026-03-10 13:30",
        "dana",
        "feat(thumbs): grid and preview thumbnails in a background worker",
        "Rendering in the request made uploads take 2-3 s for large JPEGs. The API now queues\n"
        "a job on Redis (rq) and the worker renders a 256 px square and a 1024 px preview.",
        edits=(
            W("src/photodrop/thumbnails.py", THUMBNAILS_PY),
            W("src/photodrop/worker.py", WORKER_PY),
            W("tests/test_thumbnails.py", TEST_THUMBS),
            A(
                "src/photodrop/storage.py",
                """
                def get_object(key: str) -> bytes:
                    return client().get_object(Bucket=settings.s3_bucket, Key=key)["Body"].read()


                def put_thumbnail(photo_id: str, size: str, data: bytes) -> str:
                    key = f"thumbs/{size}/{photo_id}.jpg"
                    client().put_object(
                        Bucket=settings.s3_bucket, Key=key, Body=data, ContentType="image/jpeg"
                    )
                    return key
                """,
            ),
        ),
    ),
    Commit(
        "2026-03-12 10:00",
        "ana",
        "docs: getting started and architecture overview",
        edits=(),
        docs=docs("README.md", "Features", "Quick start", "Configuration", "License")
        + docs("docs/architecture.md", "Architecture", "Upload path", "Storage layout"),
    ),
    Commit(
        "2026-03-13 16:45",
        "ben",
        "ci: run pytest and ruff on every push",
        edits=(
            W(
                ".github/workflows/ci.yml",
                """
                name: ci
                on: [push, pull_request]
                jobs:
                  test:
                    runs-on: ubuntu-latest
                    services:
                      postgres:
                        image: postgres:16
                        env: {POSTGRES_PASSWORD: photodrop}
                        ports: ["5432:5432"]
                      redis:
                        image: redis:7
                        ports: ["6379:6379"]
                    steps:
                      - uses: actions/checkout@v4
                      - uses: actions/setup-python@v5
                        with: {python-version: "3.12"}
                      - run: pip install -e '.[dev]'
                      - run: make lint
                      - run: make test
                """,
            ),
        ),
        docs=docs("README.md", "Running tests"),
    ),
    Commit(
        "2026-03-17 14:20",
        "chen",
        "feat(auth): signed upload tokens for mobile clients",
        "The iOS app cannot share the web session cookie. Clients now get an HMAC-signed token\n"
        "that names the user and expires after 15 minutes; the API checks it on every upload.",
        edits=(
            W("src/photodrop/auth.py", AUTH_PY),
            R(
                "src/photodrop/config.py",
                '    max_upload_mb: int = int(_env("MAX_UPLOAD_MB", "20"))\n',
                '    max_upload_mb: int = int(_env("MAX_UPLOAD_MB", "20"))\n'
                '    signing_key: str = _env("SIGNING_KEY", "dev-only-not-secret")\n',
            ),
        ),
        docs=docs("docs/security.md", "Security", "Upload tokens", "Reporting a vulnerability"),
    ),
    Commit(
        "2026-03-20 11:15",
        "ana",
        "feat(search): search photos by caption",
        "Postgres full-text search over a generated tsvector column, 'simple' dictionary so\n"
        "that place names are not stemmed.",
        edits=(
            W("src/photodrop/search.py", SEARCH_PY),
            W(
                "migrations/0002_caption_search.sql",
                """
                alter table photos add column caption_tsv tsvector
                    generated always as (to_tsvector('simple', coalesce(caption, ''))) stored;
                create index photos_caption_tsv on photos using gin (caption_tsv);
                """,
            ),
        ),
        docs=docs("docs/search.md", "Caption search"),
    ),
    # ------------------------------------------------------------------------------- April
    Commit(
        "2026-04-03 10:20",
        "ana",
        "docs: contributing guide",
        docs=docs("CONTRIBUTING.md"),
    ),
    Commit(
        "2026-04-08 11:40",
        "ben",
        "fix(dev): publish the compose database on 5433",
        '`docker compose up` failed on most laptops with "Bind for 0.0.0.0:5432 failed: port is\n'
        'already allocated": a Homebrew or Postgres.app server already listens there. The\n'
        "container's port is now published on 5433 and .env.example points DATABASE_URL at it.\n"
        "CI keeps 5432, where nothing else runs.",
        edits=(
            R("docker-compose.yml", '      - "5432:5432"', '      - "5433:5432"'),
            R(".env.example", "localhost:5432/photodrop", "localhost:5433/photodrop"),
            R("src/photodrop/config.py", "@localhost:5432/photodrop", "@localhost:5433/photodrop"),
        ),
        docs=docs("docs/development.md", "Development", "Local services", "Database port"),
    ),
    Commit(
        "2026-04-15 16:20",
        "ben",
        "fix(storage): raise the S3 retry budget after timeouts under load",
        "During the April 14 load test (200 users) 3% of uploads failed with ReadTimeoutError\n"
        "from S3 in eu-west-1. botocore's legacy retry mode gives up after 3 attempts with a\n"
        "short fixed backoff, and the 10 s read timeout was shorter than S3's slowest multipart\n"
        "acknowledgements. Use adaptive retries with 8 attempts and a 30 s read timeout; the\n"
        "re-run of the load test had no failed uploads.",
        edits=(
            R(
                "src/photodrop/storage.py",
                "MAX_RETRIES = 3\nCONNECT_TIMEOUT = 5\nREAD_TIMEOUT = 10\n",
                "# Adaptive mode backs off with the service's throttling signals; 8 attempts ride\n"
                "# out the brown-outs seen in load tests without failing the upload.\n"
                "MAX_RETRIES = 8\nCONNECT_TIMEOUT = 5\nREAD_TIMEOUT = 30\n",
            ),
            R("src/photodrop/storage.py", '"mode": "legacy"', '"mode": "adaptive"'),
        ),
        pr=("ben/s3-timeouts", 14),
    ),
    Commit(
        "2026-04-20 15:05",
        "dana",
        "fix(thumbs): respect EXIF orientation when resizing",
        "Portrait shots from phones came out lying on their side in the grid. Phones store the\n"
        "pixels landscape and set the EXIF Orientation tag; Pillow ignores the tag unless asked.\n"
        "Apply ImageOps.exif_transpose before anything else touches the image.",
        edits=(
            R(
                "src/photodrop/thumbnails.py",
                "    image = Image.open(io.BytesIO(data))\n",
                "    image = Image.open(io.BytesIO(data))\n"
                "    image = ImageOps.exif_transpose(image)\n",
            ),
            A(
                "tests/test_thumbnails.py",
                """
                def test_portrait_with_orientation_tag_stays_portrait():
                    image = Image.new("RGB", (800, 600), "white")
                    exif = image.getexif()
                    exif[0x0112] = 6  # rotated 90 degrees clockwise
                    out = io.BytesIO()
                    image.save(out, "JPEG", exif=exif)
                    preview = Image.open(io.BytesIO(thumbnails.render(out.getvalue(), 1024)))
                    assert preview.height > preview.width
                """,
            ),
        ),
    ),
    Commit(
        "2026-04-24 10:30",
        "ben",
        "perf(upload): stream uploads to S3 instead of reading them into memory",
        "With 40 concurrent 20 MB uploads an API container reached 1.2 GB RSS and was\n"
        "OOM-killed twice in the load test. UploadFile is already spooled to disk past 1 MB, so\n"
        "hand its file object to upload_fileobj, which sends 8 MB multipart parts.",
        edits=(
            R(
                "src/photodrop/storage.py",
                "import boto3\nfrom botocore.config import Config\n",
                "import boto3\nfrom boto3.s3.transfer import TransferConfig\n"
                "from botocore.config import Config\n",
            ),
            R(
                "src/photodrop/storage.py",
                code("""
                def put_original(photo_id: str, data: bytes, content_type: str) -> str:
                    key = original_key(photo_id)
                    client().put_object(
                        Bucket=settings.s3_bucket, Key=key, Body=data, ContentType=content_type
                    )
                    log.info("stored original %s (%d bytes)", key, len(data))
                    return key
                """),
                code("""
                MB = 1024 * 1024
                TRANSFER = TransferConfig(multipart_threshold=8 * MB, multipart_chunksize=8 * MB)


                def put_original(photo_id: str, fileobj, content_type: str) -> str:
                    key = original_key(photo_id)
                    client().upload_fileobj(
                        fileobj,
                        settings.s3_bucket,
                        key,
                        ExtraArgs={"ContentType": content_type},
                        Config=TRANSFER,
                    )
                    log.info("stored original %s", key)
                    return key
                """),
            ),
            R(
                "src/photodrop/upload.py",
                body4("""
                    data = await file.read()
                    if len(data) > MAX_UPLOAD_BYTES:
                        raise HTTPException(413, "photo is larger than 20 MB")
                    photo_id = new_photo_id()
                    key = storage.put_original(photo_id, data, file.content_type)
                """),
                body4("""
                    if file.size is not None and file.size > MAX_UPLOAD_BYTES:
                        raise HTTPException(413, "photo is larger than 20 MB")
                    photo_id = new_photo_id()
                    key = storage.put_original(photo_id, file.file, file.content_type)
                """),
            ),
        ),
        docs=docs("docs/architecture.md", "Why uploads stream to S3"),
    ),
    # --------------------------------------------------------------------------------- May
    Commit(
        "2026-05-04 17:45",
        "chen",
        "feat(db): add photo_albums table",
        "Albums group photos; a photo belongs to at most one. Existing photos go into a default\n"
        "album per user, filled in by the same migration.",
        edits=(
            W(
                "migrations/0004_albums.sql",
                """
                begin;
                create table photo_albums (
                    id bigserial primary key,
                    owner_id bigint not null references users(id),
                    title text not null,
                    created_at timestamptz not null default now()
                );
                alter table photos add column album_id bigint references photo_albums(id);
                insert into photo_albums (owner_id, title) select id, 'All photos' from users;
                update photos p set album_id = a.id from photo_albums a where a.owner_id = p.owner_id;
                commit;
                """,
            ),
        ),
    ),
    Commit(
        "2026-05-05 09:15",
        "chen",
        'Revert "feat(db): add photo_albums table"',
        "The backfill UPDATE ran inside the migration's transaction and held an exclusive lock\n"
        "on photos for ~40 s on staging; every upload in that window timed out. Reverting until\n"
        "the schema change and the backfill are split.",
        edits=(D("migrations/0004_albums.sql"),),
        revert_of="feat(db): add photo_albums table",
    ),
    Commit(
        "2026-05-11 14:00",
        "chen",
        "feat(db): albums again, schema first and a batched backfill",
        "Second attempt after the revert. 0004 only creates the table and a nullable column,\n"
        "which takes milliseconds. The default albums are filled by `python -m\n"
        "photodrop.backfill albums` in batches of 5,000 rows, each in its own transaction.",
        edits=(
            W(
                "migrations/0004_albums.sql",
                """
                create table photo_albums (
                    id bigserial primary key,
                    owner_id bigint not null references users(id),
                    title text not null,
                    created_at timestamptz not null default now()
                );
                alter table photos add column album_id bigint references photo_albums(id);
                """,
            ),
            W(
                "src/photodrop/backfill.py",
                """
                \"\"\"One-off data migrations, run by hand after the schema change is deployed.\"\"\"

                from __future__ import annotations

                import sys

                from .db import pool

                BATCH = 5000


                def albums() -> None:
                    with pool.connection() as conn:
                        conn.execute(
                            "insert into photo_albums (owner_id, title) "
                            "select id, 'All photos' from users u where not exists "
                            "(select 1 from photo_albums a where a.owner_id = u.id)"
                        )
                    while True:
                        with pool.connection() as conn:
                            done = conn.execute(
                                "update photos p set album_id = a.id from photo_albums a "
                                "where p.id in (select id from photos where album_id is null "
                                "limit %s) and a.owner_id = p.owner_id",
                                (BATCH,),
                            ).rowcount
                        if not done:
                            return


                if __name__ == "__main__":
                    {"albums": albums}[sys.argv[1]]()
                """,
            ),
        ),
        docs=docs(
            "docs/migrations.md", "Migrations", "Schema and data separately", "The albums incident"
        ),
    ),
    Commit(
        "2026-05-13 12:10",
        "dana",
        "fix(upload): refuse HEIC until the worker can decode it",
        "iPhones send HEIC by default. The API accepted it (the browser reported image/heic and\n"
        "a later change let it through), but Pillow in the worker image cannot open it, so the\n"
        "photos were stored without any thumbnails and showed as grey tiles. Return 415 with a\n"
        "hint to export as JPEG until the worker learns the format.",
        edits=(
            R(
                "src/photodrop/upload.py",
                "    if file.content_type not in ALLOWED_TYPES:\n",
                '    if file.content_type in ("image/heic", "image/heif"):\n'
                '        raise HTTPException(415, "HEIC is not supported yet: export as JPEG")\n'
                "    if file.content_type not in ALLOWED_TYPES:\n",
            ),
        ),
    ),
    Commit(
        "2026-05-19 10:40",
        "chen",
        "fix(auth): compare token signatures in constant time",
        "Found in the security review: `signature != expected` returns as soon as one character\n"
        "differs, which leaks how much of a forged signature is right through response timing.\n"
        "hmac.compare_digest takes the same time whatever the input.",
        edits=(
            R(
                "src/photodrop/auth.py",
                '    if signature != _sign(f"{user}.{expires}".encode()):\n',
                '    if not hmac.compare_digest(signature, _sign(f"{user}.{expires}".encode())):\n',
            ),
        ),
    ),
    Commit(
        "2026-05-21 15:30",
        "ana",
        "feat(search): lexical ranking first, embedding rerank on top",
        "Full-text search alone missed 'sunset at the beach' for a caption saying 'dusk, Praia\n"
        "da Rocha'. Keep ts_rank for the first 200 candidates and reorder them by cosine\n"
        "similarity from the embedding sidecar.",
        edits=(
            R(
                "src/photodrop/search.py",
                "from .db import pool\n",
                "import logging\n\nimport httpx\n\nfrom .config import settings\nfrom .db import pool\n\n"
                "CANDIDATES = 200\n",
            ),
            R(
                "src/photodrop/search.py",
                code("""
                def search_captions(owner_id: int, text: str, limit: int = 20) -> list[tuple]:
                    with pool.connection() as conn:
                        return conn.execute(QUERY, (text, owner_id, limit)).fetchall()
                """),
                code("""
                def embed(texts: list[str]) -> list[list[float]]:
                    response = httpx.post(settings.embeddings_url, json={"input": texts}, timeout=2.0)
                    response.raise_for_status()
                    return response.json()["embeddings"]


                def cosine(a: list[float], b: list[float]) -> float:
                    return sum(x * y for x, y in zip(a, b))


                def search_captions(owner_id: int, text: str, limit: int = 20) -> list[tuple]:
                    with pool.connection() as conn:
                        rows = conn.execute(QUERY, (text, owner_id, CANDIDATES)).fetchall()
                    if not rows:
                        return []
                    query, *captions = embed([text] + [row[1] for row in rows])
                    scored = sorted(
                        zip(rows, captions), key=lambda pair: cosine(query, pair[1]), reverse=True
                    )
                    return [row for row, _ in scored[:limit]]
                """),
            ),
            R(
                "src/photodrop/config.py",
                '    signing_key: str = _env("SIGNING_KEY", "dev-only-not-secret")\n',
                '    signing_key: str = _env("SIGNING_KEY", "dev-only-not-secret")\n'
                '    embeddings_url: str = _env("EMBEDDINGS_URL", "http://localhost:9000/embed")\n',
            ),
        ),
        docs=docs("docs/search.md", "Why BM25 runs before vectors", "Embedding model"),
    ),
    Commit(
        "2026-05-22 06:10",
        "dependabot",
        "chore(deps): bump pillow from 10.2.0 to 10.4.0",
        "Bumps [pillow](https://github.com/python-pillow/Pillow) from 10.2.0 to 10.4.0.\n"
        "- [Release notes](https://github.com/python-pillow/Pillow/releases)\n\n"
        "Signed-off-by: dependabot[bot] <support@github.com>",
        deps=(("pillow", "==10.4.0"),),
    ),
    Commit(
        "2026-05-26 09:55",
        "dana",
        "Pin Pillow below 10.4, WebP thumbnails lost their transparency",
        "After the Pillow 10.4 upgrade, WebP stickers with an alpha channel got a black\n"
        "background in the preview. Pin to 10.3.x until upstream issue 8102 is released.",
        deps=(("pillow", ">=10.3,<10.4"),),
    ),
    Commit(
        "2026-05-28 16:40",
        "dana",
        "feat(thumbs): decode HEIC photos with pillow-heif",
        "Registers the HEIF opener at import time and lifts the 415 for image/heic. The worker\n"
        "image needs libheif; the wheel bundles it on x86_64 and arm64.",
        edits=(
            R(
                "src/photodrop/thumbnails.py",
                "from PIL import Image, ImageOps\n",
                "from PIL import Image, ImageOps\nfrom pillow_heif import register_heif_opener\n\n"
                "register_heif_opener()\n",
            ),
            R(
                "src/photodrop/upload.py",
                '    if file.content_type in ("image/heic", "image/heif"):\n'
                '        raise HTTPException(415, "HEIC is not supported yet: export as JPEG")\n',
                "",
            ),
            R(
                "src/photodrop/upload.py",
                'ALLOWED_TYPES = {"image/jpeg", "image/png", "image/webp"}',
                'ALLOWED_TYPES = {"image/jpeg", "image/png", "image/webp", "image/heic", "image/heif"}',
            ),
            W(
                "Dockerfile.worker",
                """
                FROM python:3.12
                WORKDIR /app
                COPY pyproject.toml .
                COPY src ./src
                RUN pip install . pillow-heif
                CMD ["rq", "worker", "thumbnails"]
                """,
            ),
        ),
        pr=("dana/heic", 27),
        deps=(("pillow-heif", ">=0.16"),),
    ),
    # -------------------------------------------------------------------------------- June
    Commit(
        "2026-06-02 13:25",
        "chen",
        "feat(api): per-user upload rate limit with a Redis token bucket",
        "A broken sync loop in the Android beta uploaded the same 300 photos every minute.\n"
        "30 uploads a minute with a burst of 10 is far above what a person does by hand.",
        edits=(
            W(
                "src/photodrop/ratelimit.py",
                """
                \"\"\"A token bucket per user in Redis: RATE tokens a minute, at most BURST at once.\"\"\"

                from __future__ import annotations

                import time

                from fastapi import Depends, HTTPException
                from redis import Redis

                from .auth import current_user
                from .config import settings

                RATE = 30
                BURST = 10
                _redis = Redis.from_url(settings.redis_url)


                def allow(user_id: int, now: float | None = None) -> bool:
                    now = time.time() if now is None else now
                    key = f"bucket:{user_id}"
                    tokens, stamp = _redis.hmget(key, "tokens", "stamp")
                    tokens = float(tokens) if tokens else BURST
                    stamp = float(stamp) if stamp else now
                    tokens = min(BURST, tokens + (now - stamp) * RATE / 60)
                    if tokens < 1:
                        return False
                    _redis.hset(key, mapping={"tokens": tokens - 1, "stamp": now})
                    _redis.expire(key, 120)
                    return True


                async def limited_user(user_id: int = Depends(current_user)) -> int:
                    if not allow(user_id):
                        raise HTTPException(429, "too many uploads", headers={"Retry-After": "2"})
                    return user_id
                """,
            ),
            R(
                "src/photodrop/upload.py",
                "from fastapi import APIRouter, File, HTTPException, UploadFile\n",
                "from fastapi import APIRouter, Depends, File, HTTPException, UploadFile\n",
            ),
            R(
                "src/photodrop/upload.py",
                "from . import queue, storage\n",
                "from . import queue, storage\nfrom .ratelimit import limited_user\n",
            ),
            R(
                "src/photodrop/upload.py",
                "async def upload_photo(file: UploadFile = File(...)) -> dict[str, str]:\n",
                "async def upload_photo(\n"
                "    file: UploadFile = File(...), user_id: int = Depends(limited_user)\n"
                ") -> dict[str, str]:\n",
            ),
        ),
        docs=docs("docs/api.rst", "Upload API", "POST /photos", "Authentication", "Rate limits"),
    ),
    Commit(
        "2026-06-04 11:00",
        "dana",
        "fix(worker): only finish a job once its thumbnails are stored",
        "The worker marked the job done before uploading the thumbnails; when a worker was\n"
        "killed during a deploy the photo was left without thumbnails and nothing retried it.\n"
        "Store first, then return, so rq requeues the job if the process dies midway.",
        edits=(
            R(
                "src/photodrop/worker.py",
                "def make_thumbnails(photo_id: str, key: str) -> None:\n"
                "    data = storage.get_object(key)\n"
                "    for name, blob in thumbnails.make_all(data).items():\n"
                "        storage.put_thumbnail(photo_id, name, blob)\n",
                "def make_thumbnails(photo_id: str, key: str) -> None:\n"
                "    data = storage.get_object(key)\n"
                "    rendered = thumbnails.make_all(data)\n"
                "    # Every size is stored before the job returns: a worker killed midway leaves\n"
                "    # the job unfinished, and rq runs it again.\n"
                "    for name, blob in rendered.items():\n"
                "        storage.put_thumbnail(photo_id, name, blob)\n",
            ),
        ),
        docs=docs("docs/architecture.md", "Thumbnail worker"),
    ),
    Commit(
        "2026-06-09 17:20",
        "ana",
        "feat(frontend): drag-and-drop uploader with progress",
        "Vite + React app in frontend/. XMLHttpRequest instead of fetch because fetch still has\n"
        "no upload progress events.",
        edits=(
            W("frontend/src/Uploader.tsx", UPLOADER_TSX),
            W("frontend/src/api.ts", API_TS),
            W(
                "frontend/index.html",
                '<!doctype html>\n<html><body><div id="root"></div>'
                '<script type="module" src="/src/main.tsx"></script></body></html>\n',
            ),
        ),
        docs=docs("docs/development.md", "Frontend"),
    ),
    Commit(
        "2026-06-16 10:05",
        "ana",
        "fix(frontend): resume chunked uploads after the network changes",
        "On phones switching from Wi-Fi to mobile data the whole upload failed and started over\n"
        "from zero. Upload in 5 MB chunks and retry only the chunk that failed, with backoff, up\n"
        "to five times.",
        edits=(
            R(
                "frontend/src/api.ts",
                "export async function uploadPhoto",
                "const CHUNK = 5 * 1024 * 1024;\nconst ATTEMPTS = 5;\n\n"
                "async function sendChunk(url: string, chunk: Blob, index: number): Promise<void> {\n"
                "  for (let attempt = 1; ; attempt++) {\n"
                "    try {\n"
                '      const response = await fetch(`${url}?part=${index}`, { method: "PUT", body: chunk });\n'
                "      if (response.ok) return;\n"
                "    } catch (err) {\n"
                "      if (attempt >= ATTEMPTS) throw err;\n"
                "    }\n"
                "    await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));\n"
                "  }\n"
                "}\n\nexport async function uploadPhoto",
            ),
        ),
    ),
    Commit(
        "2026-06-18 14:45",
        "chen",
        "fix(db): index photos by owner and date for the gallery",
        "The gallery query did a sequential scan: p95 1.8 s for an account with 200k photos.\n"
        "A composite index on (owner_id, created_at desc) serves the filter and the sort; p95\n"
        "is now 40 ms.",
        edits=(
            W(
                "migrations/0005_gallery_index.sql",
                "create index concurrently photos_owner_created on photos (owner_id, created_at desc);\n",
            ),
        ),
    ),
    Commit(
        "2026-06-22 09:30",
        "ben",
        "refactor(storage): one helper for presigned download links",
        edits=(
            A(
                "src/photodrop/storage.py",
                """
                DOWNLOAD_URL_TTL = 7 * 24 * 3600


                def download_url(key: str) -> str:
                    return client().generate_presigned_url(
                        "get_object",
                        Params={"Bucket": settings.s3_bucket, "Key": key},
                        ExpiresIn=DOWNLOAD_URL_TTL,
                    )
                """,
            ),
        ),
    ),
    Commit(
        "2026-06-24 15:50",
        "ben",
        "fix(storage): shared download links expire after 10 minutes",
        "The helper kept the SDK's maximum of 7 days, so a link pasted in a group chat kept\n"
        "working for a week after the owner made the photo private. The gallery asks for a\n"
        "fresh link on every view anyway.",
        edits=(
            R(
                "src/photodrop/storage.py",
                "DOWNLOAD_URL_TTL = 7 * 24 * 3600\n",
                "DOWNLOAD_URL_TTL = 10 * 60  # short: links outlive a change of privacy otherwise\n",
            ),
        ),
    ),
    Commit(
        "2026-06-29 13:10",
        "chen",
        "feat: scan uploads with clamd before storing them",
        "Uploads are streamed to clamd (INSTREAM) from the spooled file; an infected file gets\n"
        "422 and is never written to S3. compose gains a clamav service for local development.",
        edits=(
            W(
                "src/photodrop/scan.py",
                """
                \"\"\"Malware scanning through clamd's INSTREAM command.\"\"\"

                from __future__ import annotations

                import socket
                import struct

                CLAMD = ("localhost", 3310)
                CHUNK = 64 * 1024


                def is_clean(fileobj) -> bool:
                    with socket.create_connection(CLAMD, timeout=30) as sock:
                        sock.sendall(b"zINSTREAM\\0")
                        while chunk := fileobj.read(CHUNK):
                            sock.sendall(struct.pack("!L", len(chunk)) + chunk)
                        sock.sendall(struct.pack("!L", 0))
                        reply = sock.recv(4096)
                    fileobj.seek(0)
                    return reply.rstrip(b"\\0").endswith(b"OK")
                """,
            ),
            R(
                "docker-compose.yml",
                "  redis:\n",
                "  clamav:\n    image: clamav/clamav:1.3\n    ports:\n"
                '      - "3310:3310"\n  redis:\n',
            ),
        ),
        docs=docs("docs/security.md", "Malware scanning"),
    ),
    # -------------------------------------------------------------------------------- July
    Commit(
        "2026-07-06 10:20",
        "dana",
        "perf(thumbs): let the JPEG decoder downscale while it decodes",
        "Image.draft asks libjpeg for a DCT-scaled decode, so a 24 MP original is decoded at\n"
        "1/4 or 1/8 size straight away. The worker renders both sizes 4x faster and uses a\n"
        "fifth of the memory.",
        edits=(
            R(
                "src/photodrop/thumbnails.py",
                "    image = ImageOps.exif_transpose(image)\n",
                '    if image.format == "JPEG":\n'
                '        image.draft("RGB", (size * 2, size * 2))\n'
                "    image = ImageOps.exif_transpose(image)\n",
            ),
        ),
    ),
    Commit(
        "2026-07-09 16:35",
        "ana",
        "fix(upload): same photo uploaded twice returns the first one",
        "Double-tapping the upload button on Android created two identical photos. Hash the\n"
        "bytes (sha256) while spooling and keep a unique index on (owner_id, sha256); a second\n"
        "upload of the same bytes returns the existing id with 200 instead of 201.",
        edits=(
            R(
                "src/photodrop/upload.py",
                "import uuid\n",
                "import hashlib\nimport uuid\n",
            ),
            R(
                "src/photodrop/upload.py",
                "from . import queue, storage\n",
                "from fastapi.responses import JSONResponse\n\nfrom . import db, queue, storage\n",
            ),
            R(
                "src/photodrop/upload.py",
                "    photo_id = new_photo_id()\n",
                '    digest = hashlib.file_digest(file.file, "sha256").hexdigest()\n'
                "    file.file.seek(0)\n"
                "    existing = db.photo_by_hash(user_id, digest)\n"
                "    if existing:\n"
                '        return JSONResponse({"id": existing}, status_code=200)\n'
                "    photo_id = new_photo_id()\n",
            ),
            W(
                "migrations/0006_photo_hash.sql",
                "alter table photos add column sha256 text;\n"
                "create unique index concurrently photos_owner_sha256 on photos (owner_id, sha256);\n",
            ),
        ),
    ),
    Commit(
        "2026-07-14 11:50",
        "chen",
        "feat(db): soft delete, with a nightly purge after 30 days",
        "Support asked twice in one week to restore photos deleted by mistake. Deleting now sets\n"
        "deleted_at; a nightly job removes the rows and their S3 objects after 30 days.",
        edits=(
            W(
                "migrations/0007_soft_delete.sql",
                "alter table photos add column deleted_at timestamptz;\n",
            ),
            A(
                "src/photodrop/db.py",
                """
                PURGE_AFTER_DAYS = 30


                def soft_delete(photo_id: str, owner_id: int) -> None:
                    with pool.connection() as conn:
                        conn.execute(
                            "update photos set deleted_at = now() where id = %s and owner_id = %s",
                            (photo_id, owner_id),
                        )


                def purgeable(limit: int = 500) -> list[tuple]:
                    with pool.connection() as conn:
                        return conn.execute(
                            "select id, s3_key from photos where deleted_at < now() - "
                            "make_interval(days => %s) limit %s",
                            (PURGE_AFTER_DAYS, limit),
                        ).fetchall()
                """,
            ),
        ),
        docs=docs(
            "docs/runbook.md", "Runbook", "Grey tiles in the gallery", "Restoring a deleted photo"
        ),
    ),
    Commit(
        "2026-07-16 14:15",
        "dana",
        "fix(worker): cap each worker's Redis pool at 20 connections",
        'With 16 workers on the new node Redis started answering "ERR max number of clients\n'
        'reached": every worker process opened a connection per job and the default pool has\n'
        "no upper bound. A shared BlockingConnectionPool of 20 per process keeps the total under\n"
        "maxclients with room for the API.",
        edits=(
            R(
                "src/photodrop/queue.py",
                "from redis import Redis\n",
                "from redis import BlockingConnectionPool, Redis\n",
            ),
            R(
                "src/photodrop/queue.py",
                '_queue = Queue("thumbnails", connection=Redis.from_url(settings.redis_url))\n',
                "POOL = BlockingConnectionPool.from_url(settings.redis_url, max_connections=20, timeout=5)\n"
                '_queue = Queue("thumbnails", connection=Redis(connection_pool=POOL))\n',
            ),
        ),
        docs=docs("docs/runbook.md", "Redis refuses connections"),
    ),
    Commit(
        "2026-07-21 10:45",
        "ben",
        "chore(docker): multi-stage build on python:3.12-slim",
        "The image was 1.4 GB (full Debian, compilers, pip cache) and a deploy spent most of\n"
        "its time pulling it. Build wheels in one stage, install them into slim in the next:\n"
        "310 MB.",
        edits=(
            W(
                "Dockerfile",
                """
                FROM python:3.12 AS build
                WORKDIR /src
                COPY pyproject.toml .
                COPY src ./src
                RUN pip wheel --no-cache-dir --wheel-dir /wheels .

                FROM python:3.12-slim
                COPY --from=build /wheels /wheels
                RUN pip install --no-cache-dir /wheels/* && rm -rf /wheels
                CMD ["uvicorn", "photodrop.app:app", "--host", "0.0.0.0", "--port", "8000"]
                """,
            ),
        ),
        docs=docs("docs/deployment.rst", "Deployment", "Container image", "Health checks"),
    ),
    Commit(
        "2026-07-28 17:00",
        "ben",
        "docs: what to do when S3 misbehaves",
        edits=(),
        docs=docs("docs/runbook.md", "S3 is slow or failing"),
    ),
    # ------------------------------------------------------------------------------ August
    Commit(
        "2026-08-03 13:40",
        "ana",
        "feat(api): cursor-based gallery pages",
        "OFFSET pagination got slower the deeper you scrolled (page 400 took 900 ms) and\n"
        "skipped or repeated photos when new ones arrived between two pages. Use a keyset on\n"
        "(created_at, id); the cursor is that pair, base64-encoded.",
        edits=(
            R(
                "src/photodrop/db.py",
                code("""
                def list_photos(owner_id: int, limit: int = 50, offset: int = 0) -> list[tuple]:
                    with pool.connection() as conn:
                        return conn.execute(
                            "select id, s3_key, created_at from photos where owner_id = %s "
                            "order by created_at desc limit %s offset %s",
                            (owner_id, limit, offset),
                        ).fetchall()
                """),
                code("""
                def list_photos(owner_id: int, limit: int = 50, after=None) -> list[tuple]:
                    \"\"\"One page, newest first; ``after`` is the (created_at, id) of the last row seen.\"\"\"
                    where, params = "owner_id = %s and deleted_at is null", [owner_id]
                    if after is not None:
                        where += " and (created_at, id) < (%s, %s)"
                        params += list(after)
                    with pool.connection() as conn:
                        return conn.execute(
                            f"select id, s3_key, created_at from photos where {where} "
                            "order by created_at desc, id desc limit %s",
                            (*params, limit),
                        ).fetchall()
                """),
            ),
        ),
        docs=docs("docs/api.rst", "GET /photos"),
    ),
    Commit(
        "2026-08-06 10:10",
        "dana",
        "fix(exif): drop GPS tags from photos that are shared publicly",
        "A user noticed that a public photo revealed their home address: phones write latitude\n"
        "and longitude into EXIF and we served the original bytes. Public copies are now\n"
        "re-encoded with the GPS IFD removed; orientation and DateTimeOriginal stay.",
        edits=(
            W(
                "src/photodrop/exif.py",
                """
                \"\"\"EXIF clean-up for photos that leave the owner's account.\"\"\"

                from __future__ import annotations

                import io

                from PIL import Image

                GPS_IFD = 0x8825


                def without_location(data: bytes) -> bytes:
                    image = Image.open(io.BytesIO(data))
                    exif = image.getexif()
                    exif.pop(GPS_IFD, None)
                    out = io.BytesIO()
                    image.save(out, image.format or "JPEG", exif=exif, quality=95)
                    return out.getvalue()
                """,
            ),
        ),
        docs=docs("docs/security.md", "Location data"),
    ),
    Commit(
        "2026-08-11 15:25",
        "ana",
        "feat(search): cache query embeddings for a day",
        edits=(
            R(
                "src/photodrop/search.py",
                "CANDIDATES = 200\n",
                "CANDIDATES = 200\nQUERY_CACHE_TTL = 24 * 3600\nlog = logging.getLogger(__name__)\n",
            ),
        ),
    ),
    Commit(
        "2026-08-13 11:35",
        "ana",
        "fix(search): keep answering when the embedding sidecar is down",
        "During the sidecar's redeploy every gallery search returned 500, because the rerank\n"
        "raised on the connection error. Give the sidecar 300 ms; on timeout or error return\n"
        "the lexical order unchanged and log a warning.",
        edits=(
            R(
                "src/photodrop/search.py",
                "    query, *captions = embed([text] + [row[1] for row in rows])\n",
                "    try:\n"
                "        query, *captions = embed([text] + [row[1] for row in rows])\n"
                "    except httpx.HTTPError as err:\n"
                '        log.warning("rerank skipped: %s", err)\n'
                "        return rows[:limit]\n",
            ),
            R(
                "src/photodrop/search.py",
                'json={"input": texts}, timeout=2.0)',
                'json={"input": texts}, timeout=0.3)',
            ),
        ),
        docs=docs("docs/search.md", "When the sidecar is down"),
    ),
    Commit(
        "2026-08-18 09:45",
        "dana",
        "refactor(worker): move the thumbnail queue from rq to arq",
        "rq forks a process per job; with HEIC decoding that meant loading libheif for every\n"
        "photo. arq runs jobs as coroutines in one long-lived process.",
        edits=(
            W(
                "src/photodrop/queue.py",
                """
                \"\"\"The job queue between the API and the thumbnail worker (Redis + arq).\"\"\"

                from __future__ import annotations

                from arq import create_pool
                from arq.connections import RedisSettings

                from .config import settings

                REDIS = RedisSettings.from_dsn(settings.redis_url)
                MAX_CONNECTIONS = 20


                async def enqueue_thumbnails(photo_id: str, key: str) -> None:
                    pool = await create_pool(REDIS)
                    await pool.enqueue_job("make_thumbnails", photo_id, key)
                """,
            ),
        ),
        deps=(("rq", None), ("arq", ">=0.26")),
    ),
    Commit(
        "2026-08-20 16:55",
        "ben",
        "fix(upload): oversized photos get a JSON 413, not a dropped connection",
        "Through nginx, photos over 1 MB got an empty reply: client_max_body_size defaults to\n"
        "1m, so nginx closed the connection before the API saw the request, and the apps showed\n"
        '"network error". Raise it to 25m and have nginx answer 413 with the same JSON body\n'
        "the API uses.",
        edits=(
            W(
                "nginx/nginx.conf",
                """
                server {
                    listen 8080;
                    client_max_body_size 25m;
                    error_page 413 = @too_large;

                    location / {
                        proxy_pass http://api:8000;
                        proxy_set_header Host $host;
                        proxy_request_buffering off;
                    }

                    location @too_large {
                        default_type application/json;
                        return 413 '{"error": "photo too large", "detail": {"limit_mb": 20}}';
                    }
                }
                """,
            ),
        ),
        docs=docs("docs/api.rst", "Errors") + docs("docs/deployment.rst", "Nginx"),
    ),
    Commit(
        "2026-08-21 10:00",
        "ben",
        "docs: how to poke at uploads by hand",
        docs=docs("docs/development.md", "Debugging uploads", "Running the worker"),
    ),
    # --------------------------------------------------------------------------- September
    Commit(
        "2026-09-01 10:30",
        "chen",
        "feat(db): switch to Alembic for schema changes",
        "Hand-numbered SQL files had no record of what ran where, and two branches both\n"
        "created 0006. Alembic keeps the applied revision in the database; the existing\n"
        "schema is the baseline revision and production was stamped with it.",
        edits=(
            W(
                "alembic.ini",
                "[alembic]\nscript_location = alembic\nsqlalchemy.url = env:DATABASE_URL\n",
            ),
            W(
                "alembic/env.py",
                """
                import os

                from alembic import context
                from sqlalchemy import create_engine

                engine = create_engine(os.environ["DATABASE_URL"])
                with engine.connect() as connection:
                    context.configure(connection=connection)
                    with context.begin_transaction():
                        context.run_migrations()
                """,
            ),
            W(
                "alembic/versions/0001_baseline.py",
                """
                \"\"\"Baseline: the schema as the SQL migrations 0001-0007 left it.\"\"\"

                revision = "0001"
                down_revision = None


                def upgrade() -> None:
                    pass  # production was stamped; new databases load schema.sql


                def downgrade() -> None:
                    raise NotImplementedError("the baseline cannot be undone")
                """,
            ),
            R(
                "Makefile",
                '\tfor f in migrations/*.sql; do psql "$$DATABASE_URL" -f $$f; done\n',
                "\talembic upgrade head\n",
            ),
        ),
        docs=docs("docs/migrations.md", "Writing a migration"),
        deps=(("alembic", ">=1.13"), ("sqlalchemy", ">=2.0")),
    ),
    Commit(
        "2026-09-03 14:20",
        "chen",
        "fix(deploy): apply migrations when the container starts",
        "The 0.8.1 deploy started the new code before anyone ran the migration and uploads\n"
        "failed on the missing sha256 column for ten minutes. The entrypoint now runs\n"
        "`alembic upgrade head` and only then execs the server.",
        edits=(
            W(
                "docker-entrypoint.sh",
                '#!/bin/sh\nset -e\nalembic upgrade head\nexec "$@"\n',
            ),
            R(
                "Dockerfile",
                "RUN pip install --no-cache-dir /wheels/* && rm -rf /wheels\n",
                "RUN pip install --no-cache-dir /wheels/* && rm -rf /wheels\n"
                "COPY alembic.ini docker-entrypoint.sh ./\nCOPY alembic ./alembic\n"
                'ENTRYPOINT ["./docker-entrypoint.sh"]\n',
            ),
        ),
    ),
    Commit(
        "2026-09-08 11:05",
        "dana",
        "fix(thumbs): progressive JPEG at quality 82",
        "Compared over 500 sample photos: quality 82 progressive is 35% smaller than baseline\n"
        "85 with no visible difference (SSIM 0.991), and the grid paints a blurry version early\n"
        "on slow connections.",
        edits=(
            R("src/photodrop/thumbnails.py", "JPEG_QUALITY = 85\n", "JPEG_QUALITY = 82\n"),
            R(
                "src/photodrop/thumbnails.py",
                '    image.save(out, "JPEG", quality=JPEG_QUALITY)\n',
                '    image.save(out, "JPEG", quality=JPEG_QUALITY, progressive=True, optimize=True)\n',
            ),
        ),
    ),
    Commit(
        "2026-09-14 15:40",
        "ben",
        "fix(storage): store the content type we detect, not the one the client claims",
        "Some Android builds send every file as application/octet-stream, and S3 served those\n"
        "originals with that type, so browsers downloaded them instead of showing them. Sniff\n"
        "the type from the first bytes (magic numbers) and store that.",
        edits=(
            A(
                "src/photodrop/storage.py",
                """
                MAGIC = {
                    b"\\xff\\xd8\\xff": "image/jpeg",
                    b"\\x89PNG\\r\\n\\x1a\\n": "image/png",
                    b"RIFF": "image/webp",
                }


                def sniff_content_type(head: bytes, claimed: str) -> str:
                    for magic, kind in MAGIC.items():
                        if head.startswith(magic):
                            return kind
                    if head[4:12] in (b"ftypheic", b"ftypheix", b"ftypmif1"):
                        return "image/heic"
                    return claimed
                """,
            ),
        ),
    ),
    Commit(
        "2026-09-17 10:15",
        "chen",
        "fix(auth): rotate refresh tokens and revoke the family on reuse",
        "A refresh token stayed valid for 60 days however often it was used, so a copied token\n"
        "worked as long as the real one. Each refresh now returns a new token and invalidates\n"
        "the old; presenting an already-used token revokes every token descended from it.",
        edits=(
            A(
                "src/photodrop/auth.py",
                """
                def refresh(store, presented: str) -> tuple[str, str]:
                    record = store.get(presented)
                    if record is None:
                        raise HTTPException(401, "unknown refresh token")
                    if record.used:
                        store.revoke_family(record.family)  # reuse: someone else has a copy
                        raise HTTPException(401, "refresh token reused")
                    store.mark_used(presented)
                    new = store.create(record.user_id, family=record.family)
                    return issue(record.user_id), new
                """,
            ),
        ),
    ),
]

# --------------------------------------------------------------------------------- sessions

SESSIONS: list[Shell] = [
    Shell(
        "2026-03-06 16:30",
        (
            Cmd("docker compose up -d", 0, duration=14.2),
            Cmd("docker compose ps", 0, after=0.5),
            Cmd("psql -h localhost -U photodrop -f migrations/0001_initial.sql", 0, after=2),
        ),
    ),
    # A new laptop: the compose database cannot bind 5432, found and fixed on April 8.
    Shell(
        "2026-04-07 09:20",
        (
            Cmd("git clone git@github.com:photodrop/photodrop.git", 0, duration=6.1),
            Cmd("cp .env.example .env", 0, after=1.5),
            Cmd("docker compose up -d", 1, after=0.5, duration=3.4),
            Cmd("docker compose logs db", 0, after=0.7),
            Cmd("docker compose up -d", 1, after=2, duration=2.9),
            Cmd("lsof -nP -iTCP:5432 -sTCP:LISTEN", 0, after=1.5),
            Cmd("brew services list", 0, after=0.5),
        ),
        session="ben-laptop",
    ),
    Shell(
        "2026-04-08 11:10",
        (
            Cmd("docker compose down", 0, duration=4.0),
            Cmd("docker compose up -d db redis", 0, after=1, duration=8.8),
            Cmd("psql -h localhost -p 5433 -U photodrop -c 'select 1'", 0, after=0.5),
            Cmd("make test", 0, after=3, duration=41.0),
        ),
        session="ben-laptop",
    ),
    # The load test that surfaced S3 read timeouts, and its re-run after the fix.
    Shell(
        "2026-04-14 14:00",
        (
            Cmd(
                "locust -f loadtest/locustfile.py --headless -u 200 -r 20 -t 10m "
                "--host https://staging.photodrop.dev",
                1,
                duration=603.0,
            ),
            Cmd("grep -c ReadTimeoutError logs/api-staging.log", 0, after=11),
            Cmd(
                "aws s3 ls s3://photodrop-staging/originals/ --region eu-west-1 | wc -l", 0, after=2
            ),
        ),
        session="ben-loadtest",
    ),
    Shell(
        "2026-04-15 17:30",
        (
            Cmd(
                "locust -f loadtest/locustfile.py --headless -u 200 -r 20 -t 10m "
                "--host https://staging.photodrop.dev",
                0,
                duration=601.0,
            ),
        ),
        session="ben-loadtest",
    ),
    # EXIF orientation: the new test fails until exif_transpose goes in.
    Shell(
        "2026-04-20 13:40",
        (
            Cmd("exiftool -Orientation tests/fixtures/portrait.jpg", 0),
            Cmd("pytest tests/test_thumbnails.py -k orientation", 1, after=6, duration=2.1),
            Cmd("pytest tests/test_thumbnails.py -k orientation -x --pdb", 1, after=4, duration=30),
            Cmd("pytest tests/test_thumbnails.py -k orientation", 0, after=9, duration=2.0),
            Cmd("pytest tests/test_thumbnails.py", 0, after=1, duration=3.5),
        ),
        session="dana-exif",
    ),
    # The albums migration on staging: uploads time out, the lock is found, the commit reverted.
    Shell(
        "2026-05-04 18:05",
        (
            Cmd('psql "$STAGING_DATABASE_URL" -f migrations/0004_albums.sql', 0, duration=41.7),
            Cmd(
                'psql "$STAGING_DATABASE_URL" -c "select pid, wait_event_type, state, query '
                "from pg_stat_activity where state <> 'idle'\"",
                0,
                after=1,
            ),
        ),
        session="chen-staging",
    ),
    Shell(
        "2026-05-05 08:50",
        (
            Cmd("git revert --no-edit HEAD", 0),
            Cmd(
                'psql "$STAGING_DATABASE_URL" -c "alter table photos drop column album_id; '
                'drop table photo_albums"',
                0,
                after=3,
            ),
            Cmd("git push origin main", 0, after=2, duration=2.2),
        ),
        session="chen-staging",
    ),
    # HEIC: the worker image does not build with pillow-heif until libheif comes from the wheel.
    Shell(
        "2026-05-27 15:00",
        (
            Cmd("pip install pillow-heif==0.16.0", 0, duration=4.0),
            Cmd("python -c 'import pillow_heif; print(pillow_heif.libheif_version())'", 0),
            Cmd(
                "docker build -t photodrop-worker:dev -f Dockerfile.worker .",
                1,
                after=3,
                duration=95,
            ),
            Cmd(
                "docker build --no-cache -t photodrop-worker:dev -f Dockerfile.worker .",
                1,
                after=8,
                duration=140,
            ),
            Cmd(
                "docker build -t photodrop-worker:dev -f Dockerfile.worker .",
                0,
                after=25,
                duration=88,
            ),
        ),
        session="dana-heic",
    ),
    # Frontend: lockfile out of sync, then type errors break the production build.
    Shell(
        "2026-06-09 14:00",
        (
            Cmd("npm ci", 1, cwd="frontend", duration=3.0),
            Cmd("npm install", 0, cwd="frontend", after=1, duration=22.0),
            Cmd("npm run dev", 130, cwd="frontend", after=1, duration=1800),
            Cmd("npm run build", 2, cwd="frontend", after=2, duration=9.0),
            Cmd("npm run typecheck", 2, cwd="frontend", after=1, duration=6.0),
            Cmd("npm run build", 0, cwd="frontend", after=12, duration=10.5),
        ),
        session="ana-frontend",
    ),
    # Redis max clients on the new worker node.
    Shell(
        "2026-07-16 09:30",
        (
            Cmd("redis-cli -h redis.internal info clients", 0),
            Cmd("redis-cli -h redis.internal config get maxclients", 0, after=0.5),
            Cmd("redis-cli -h redis.internal client list | wc -l", 0, after=0.5),
            Cmd("pytest tests/test_worker.py -x", 1, after=20, duration=12.0),
            Cmd("pytest tests/test_worker.py -x", 0, after=15, duration=11.0),
        ),
        session="dana-redis",
    ),
    Shell(
        "2026-07-21 09:50",
        (
            Cmd("docker images photodrop", 0),
            Cmd("docker build -t photodrop:slim .", 0, after=2, duration=120),
            Cmd("dive photodrop:slim", 0, after=3, duration=60),
            Cmd("docker images photodrop", 0, after=2),
        ),
        session="ben-docker",
    ),
    # nginx: the empty reply for large photos.
    Shell(
        "2026-08-20 14:10",
        (
            Cmd(
                "curl -sS -F file=@tests/fixtures/large-18mb.jpg http://localhost:8080/photos",
                52,
                duration=0.4,
            ),
            Cmd("docker compose logs nginx --tail 20", 0, after=1),
            Cmd("docker compose exec nginx nginx -t", 0, after=5),
            Cmd("docker compose restart nginx", 0, after=0.5, duration=2.5),
            Cmd(
                "curl -sS -F file=@tests/fixtures/large-18mb.jpg http://localhost:8080/photos",
                0,
                after=1,
                duration=3.1,
            ),
        ),
        session="ben-nginx",
    ),
    # Alembic: the first upgrade against an existing database fails until it is stamped.
    Shell(
        "2026-09-01 09:15",
        (
            Cmd("pip install alembic", 0, duration=3.0),
            Cmd("alembic init alembic", 0, after=1),
            Cmd("alembic upgrade head", 1, after=25, duration=1.8),
            Cmd("alembic stamp head", 0, after=4),
            Cmd("alembic upgrade head", 0, after=1),
            Cmd("alembic current", 0, after=0.5),
        ),
        session="chen-alembic",
    ),
    Shell(
        "2026-06-29 11:00",
        (
            Cmd("docker compose up -d clamav", 0, duration=30),
            Cmd("clamdscan --fdpass tests/fixtures/eicar.txt", 1, after=2),
            Cmd("clamdscan --fdpass tests/fixtures/portrait.jpg", 0, after=1),
        ),
        session="chen-clamav",
    ),
    # Someone tries to force-push over main; branch protection refuses.
    Shell(
        "2026-09-22 18:20",
        (
            Cmd("git rebase -i HEAD~3", 0, duration=40),
            Cmd("git push --force origin main", 1, after=1, duration=1.9),
            Cmd("git push --force-with-lease origin dana/thumb-quality", 0, after=1),
        ),
        session="dana-rebase",
    ),
    Shell(
        "2026-08-06 09:30",
        (
            Cmd("exiftool -gps:all tests/fixtures/beach-with-gps.jpg", 0),
            Cmd("pytest tests/test_exif.py", 1, after=10, duration=1.5),
            Cmd("pytest tests/test_exif.py", 0, after=7, duration=1.4),
        ),
        session="dana-exif2",
    ),
    Shell(
        "2026-06-18 13:30",
        (
            Cmd(
                'psql "$STAGING_DATABASE_URL" -c "explain analyze select id from photos '
                'where owner_id = 42 order by created_at desc limit 50"',
                0,
            ),
            Cmd(
                'psql "$STAGING_DATABASE_URL" -f migrations/0005_gallery_index.sql',
                0,
                after=4,
                duration=95.0,
            ),
        ),
        session="chen-index",
    ),
]


# ---------------------------------------------------------------------------- agent sessions

# What the coding agents ran, one session each, as their hooks hand it over (agents.py). Each
# holds a failure that two different commands died of, and what made it go away; Claude Code's
# also runs one command again later into a different error, which must not meet the first.
_YAML = (
    "ImportError while loading conftest '/home/ana/photodrop/tests/conftest.py'.\n"
    "tests/conftest.py:4: in <module>\n    import yaml\n"
    "E   ModuleNotFoundError: No module named 'yaml'"
)
_PG = (
    "sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection failed: connection "
    'to server at "127.0.0.1", port 5433 failed: Connection refused\n'
    "\tIs the server running on that host and accepting TCP/IP connections?"
)
_STUBS = (
    'src/photodrop/search.py:12: error: Library stubs not installed for "requests"  '
    "[import-untyped]\nFound 1 error in 1 file (checked 17 source files)"
)
_VITE = (
    '[vite]: Rollup failed to resolve import "@photodrop/ui/Lightbox" from '
    '"/home/dana/photodrop/frontend/src/pages/Album.tsx".\nerror during build:'
)
_CREDS = "botocore.exceptions.NoCredentialsError: Unable to locate credentials"

AGENT_SESSIONS: list[AgentSession] = [
    AgentSession(
        "codex",
        "2026-05-12 10:00",
        (
            AgentStep(edit="src/photodrop/config.py"),
            AgentStep("pytest tests/test_storage.py -q", 1, _YAML),
            AgentStep("pytest -k presigned -q", 1, _YAML.replace("ana", "ana/work"), after=2),
            AgentStep("pip install pyyaml", 0, "Successfully installed PyYAML-6.0.2"),
            AgentStep("pytest tests/test_storage.py -q", 0, "14 passed in 2.31s"),
        ),
    ),
    AgentSession(
        "gemini",
        "2026-06-03 15:00",
        (
            AgentStep("alembic upgrade head", 1, _PG),
            AgentStep("pytest tests/test_migrations.py -q", 1, f"E   {_PG}", after=3),
            AgentStep("docker compose up -d db", 0, "Container photodrop-db-1  Started"),
            AgentStep(
                "alembic upgrade head",
                0,
                "INFO  [alembic.runtime.migration] Running upgrade 0007 -> 0008, add album cover",
            ),
        ),
    ),
    AgentSession(
        "cursor",
        "2026-07-09 11:00",
        (
            AgentStep(edit="src/photodrop/search.py"),
            AgentStep("mypy src/photodrop", 1, _STUBS),
            AgentStep("mypy src/photodrop/search.py", 1, _STUBS.replace("17", "1")),
            AgentStep("pip install types-requests", 0, "Successfully installed types-requests"),
            AgentStep("mypy src/photodrop", 0, "Success: no issues found in 17 source files"),
        ),
    ),
    AgentSession(
        "opencode",
        "2026-08-18 14:00",
        (
            AgentStep("npm run build", 1, _VITE, cwd="frontend"),
            AgentStep("npx vite build --mode staging", 1, _VITE, cwd="frontend", after=4),
            AgentStep(edit="frontend/package.json"),
            AgentStep("npm install", 0, "added 3 packages in 4s", cwd="frontend"),
            AgentStep("npm run build", 0, "built in 4.21s", cwd="frontend"),
        ),
    ),
    AgentSession(
        "claude",
        "2026-09-02 16:00",
        (
            AgentStep(
                "pytest tests/test_upload.py -q",
                1,
                f"E   {_CREDS}\nFAILED tests/test_upload.py::test_presigned_put - {_CREDS}",
            ),
            AgentStep(
                "python -m photodrop.backfill --dry-run",
                1,
                "Traceback (most recent call last):\n  File "
                '"/home/ben/photodrop/src/photodrop/backfill.py", line 41, in main\n'
                f"    client.head_bucket(Bucket=bucket)\n{_CREDS}",
            ),
            AgentStep(edit="tests/conftest.py"),
            AgentStep("pytest tests/test_upload.py -q", 0, "9 passed in 1.12s"),
            AgentStep(
                "pytest tests/test_upload.py -q",
                1,
                "FAILED tests/test_upload.py::test_large_upload - AssertionError: assert 413 == 201",
                after=40,
            ),
        ),
    ),
]
