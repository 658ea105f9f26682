# ruff: noqa: E501 - file contents of another project, kept as that project wrote them
"""The everyday history around the planted facts: small features, tests, dependency bumps,
releases, and the ordinary commands typed between them.

These are the distractors. They share the project's vocabulary (upload, thumbnail, S3, token,
worker) so that a query has to find the right commit among plausible neighbours.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from model import Cmd, Commit, Shell, code, ts

__all__ = [
    "NPM_DEPS",
    "PYTHON_DEPS",
    "RELEASES",
    "SNIPPETS",
    "Snippet",
    "bump_commits",
    "filler_sessions",
]


@dataclass(frozen=True)
class Snippet:
    """A small change: ``code`` appended to ``path``."""

    not_before: str  # the day the file it extends exists
    subject: str
    path: str
    code: str
    body: str = ""


def _s(not_before: str, subject: str, path: str, text: str, body: str = "") -> Snippet:
    return Snippet(not_before, subject, path, code(text), body)


SNIPPETS: list[Snippet] = [
    _s(
        "2026-03-04",
        "test(upload): empty files are rejected",
        "tests/test_upload.py",
        """
        def test_rejects_empty_file():
            response = client.post("/photos", files={"file": ("a.jpg", b"", "image/jpeg")})
            assert response.status_code in (400, 415, 422)
        """,
    ),
    _s(
        "2026-03-04",
        "feat(upload): log the client's user agent with each upload",
        "src/photodrop/upload.py",
        """
        def client_label(user_agent: str | None) -> str:
            \"\"\"A short label for logs: the app name and version, or 'web'.\"\"\"
            if not user_agent:
                return "unknown"
            if user_agent.startswith("PhotodropiOS/") or user_agent.startswith("PhotodropAndroid/"):
                return user_agent.split(" ", 1)[0]
            return "web"
        """,
    ),
    _s(
        "2026-03-05",
        "refactor(storage): helper for the public URL of a thumbnail",
        "src/photodrop/storage.py",
        """
        def thumbnail_key(photo_id: str, size: str) -> str:
            return f"thumbs/{size}/{photo_id}.jpg"
        """,
    ),
    _s(
        "2026-03-05",
        "add delete_object helper",
        "src/photodrop/storage.py",
        """
        def delete_object(key: str) -> None:
            client().delete_object(Bucket=settings.s3_bucket, Key=key)
            log.info("deleted %s", key)
        """,
    ),
    _s(
        "2026-03-06",
        "feat(db): fetch a single photo by id",
        "src/photodrop/db.py",
        """
        def get_photo(photo_id: str) -> tuple | None:
            with pool.connection() as conn:
                return conn.execute(
                    "select id, owner_id, s3_key, content_type, caption, created_at "
                    "from photos where id = %s",
                    (photo_id,),
                ).fetchone()
        """,
    ),
    _s(
        "2026-03-06",
        "feat(db): update a photo's caption",
        "src/photodrop/db.py",
        """
        def set_caption(photo_id: str, owner_id: int, caption: str) -> bool:
            with pool.connection() as conn:
                cur = conn.execute(
                    "update photos set caption = %s where id = %s and owner_id = %s",
                    (caption[:2000], photo_id, owner_id),
                )
                return cur.rowcount == 1
        """,
    ),
    _s(
        "2026-03-11",
        "test(thumbs): preview keeps the aspect ratio",
        "tests/test_thumbnails.py",
        """
        def test_preview_keeps_aspect_ratio():
            preview = Image.open(io.BytesIO(thumbnails.render(jpeg(2000, 1000), 1024)))
            assert preview.size == (1024, 512)
        """,
    ),
    _s(
        "2026-03-11",
        "test(thumbs): small images are not upscaled",
        "tests/test_thumbnails.py",
        """
        def test_small_images_are_not_upscaled():
            preview = Image.open(io.BytesIO(thumbnails.render(jpeg(300, 200), 1024)))
            assert preview.size == (300, 200)
        """,
    ),
    _s(
        "2026-03-11",
        "feat(thumbs): report the rendered sizes",
        "src/photodrop/thumbnails.py",
        """
        def dimensions(data: bytes) -> tuple[int, int]:
            with Image.open(io.BytesIO(data)) as image:
                return image.size
        """,
    ),
    _s(
        "2026-03-11",
        "worker: time each job",
        "src/photodrop/worker.py",
        """
        def timed(name: str):
            import time

            start = time.perf_counter()

            def done() -> None:
                log.info("%s took %.0f ms", name, (time.perf_counter() - start) * 1000)

            return done
        """,
    ),
    _s(
        "2026-03-18",
        "test(auth): a token signed with another key is refused",
        "tests/test_auth.py",
        """
        import pytest
        from fastapi import HTTPException

        from photodrop import auth


        def test_tampered_token_is_refused():
            token = auth.issue(7)
            user, expires, signature = token.split(".")
            with pytest.raises(HTTPException):
                auth.verify(f"{int(user) + 1}.{expires}.{signature}")
        """,
    ),
    _s(
        "2026-03-18",
        "test(auth): expired tokens are refused",
        "tests/test_auth.py",
        """
        def test_expired_token(monkeypatch):
            token = auth.issue(7)
            monkeypatch.setattr(auth.time, "time", lambda: 10**12)
            with pytest.raises(HTTPException):
                auth.verify(token)
        """,
    ),
    _s(
        "2026-03-19",
        "feat(auth): accept the token from a query parameter for image tags",
        "src/photodrop/auth.py",
        """
        async def user_from_query(token: str) -> int:
            \"\"\"<img> tags cannot send headers; thumbnails accept ?token= instead.\"\"\"
            return verify(token)
        """,
    ),
    _s(
        "2026-03-21",
        "test(search): captions match whole words only",
        "tests/test_search.py",
        """
        from photodrop import search


        def test_query_uses_simple_dictionary():
            assert "'simple'" in search.QUERY
        """,
    ),
    _s(
        "2026-03-23",
        "feat(search): highlight the matching words in captions",
        "src/photodrop/search.py",
        """
        def highlight(caption: str, words: list[str]) -> str:
            out = []
            for token in caption.split():
                bare = token.strip(".,!?").lower()
                out.append(f"<mark>{token}</mark>" if bare in words else token)
            return " ".join(out)
        """,
    ),
    _s(
        "2026-03-24",
        "config: read the log level from the environment",
        "src/photodrop/config.py",
        """
        LOG_LEVEL = _env("LOG_LEVEL", "INFO").upper()
        """,
    ),
    _s(
        "2026-03-26",
        "feat(api): version endpoint",
        "src/photodrop/app.py",
        """
        @app.get("/version")
        async def version() -> dict[str, str]:
            from . import __version__

            return {"version": __version__}
        """,
    ),
    _s(
        "2026-03-30",
        "test(storage): original keys are sharded by id prefix",
        "tests/test_storage.py",
        """
        from photodrop import storage


        def test_original_key_prefix():
            assert storage.original_key("abcdef") == "originals/ab/abcdef"
        """,
    ),
    _s(
        "2026-04-01",
        "test(storage): thumbnail keys",
        "tests/test_storage.py",
        """
        def test_thumbnail_key():
            assert storage.thumbnail_key("abc", "grid") == "thumbs/grid/abc.jpg"
        """,
    ),
    _s(
        "2026-04-02",
        "feat(api): request id middleware",
        "src/photodrop/app.py",
        """
        @app.middleware("http")
        async def request_id(request, call_next):
            import uuid

            rid = request.headers.get("x-request-id") or uuid.uuid4().hex[:16]
            response = await call_next(request)
            response.headers["x-request-id"] = rid
            return response
        """,
    ),
    _s(
        "2026-04-09",
        "make: add a target to open psql on the compose database",
        "Makefile",
        """
        psql:
        \tpsql "$$DATABASE_URL"
        """,
    ),
    _s(
        "2026-04-10",
        "feat(storage): copy an object within the bucket",
        "src/photodrop/storage.py",
        """
        def copy_object(src: str, dst: str) -> None:
            client().copy_object(
                Bucket=settings.s3_bucket,
                Key=dst,
                CopySource={"Bucket": settings.s3_bucket, "Key": src},
            )
        """,
    ),
    _s(
        "2026-04-16",
        "test(storage): client is configured with timeouts",
        "tests/test_storage.py",
        """
        def test_client_has_timeouts():
            config = storage.client().meta.config
            assert config.read_timeout == storage.READ_TIMEOUT
            assert config.connect_timeout == storage.CONNECT_TIMEOUT
        """,
    ),
    _s(
        "2026-04-21",
        "thumbnails: keep ICC profiles",
        "src/photodrop/thumbnails.py",
        """
        def icc_profile(data: bytes) -> bytes | None:
            with Image.open(io.BytesIO(data)) as image:
                return image.info.get("icc_profile")
        """,
        "Wide-gamut photos from recent phones looked washed out without their profile.",
    ),
    _s(
        "2026-04-22",
        "test(thumbs): CMYK JPEGs are converted",
        "tests/test_thumbnails.py",
        """
        def test_cmyk_is_converted():
            out = io.BytesIO()
            Image.new("CMYK", (400, 300)).save(out, "JPEG")
            grid = Image.open(io.BytesIO(thumbnails.render(out.getvalue(), 256, square=True)))
            assert grid.mode == "RGB"
        """,
    ),
    _s(
        "2026-04-27",
        "test(upload): the size limit is 20 MB",
        "tests/test_upload.py",
        """
        def test_size_limit_constant():
            from photodrop import upload

            assert upload.MAX_UPLOAD_BYTES == 20 * 1024 * 1024
        """,
    ),
    _s(
        "2026-04-29",
        "feat(db): count photos per user",
        "src/photodrop/db.py",
        """
        def count_photos(owner_id: int) -> int:
            with pool.connection() as conn:
                row = conn.execute(
                    "select count(*) from photos where owner_id = %s", (owner_id,)
                ).fetchone()
                return row[0] if row else 0
        """,
    ),
    _s(
        "2026-05-06",
        "feat(db): list a user's albums",
        "src/photodrop/db.py",
        """
        def list_albums(owner_id: int) -> list[tuple]:
            with pool.connection() as conn:
                return conn.execute(
                    "select id, title, created_at from photo_albums where owner_id = %s "
                    "order by created_at",
                    (owner_id,),
                ).fetchall()
        """,
    ),
    _s(
        "2026-05-12",
        "test(backfill): batches stop when nothing is left",
        "tests/test_backfill.py",
        """
        from photodrop import backfill


        def test_batch_size():
            assert backfill.BATCH == 5000
        """,
    ),
    _s(
        "2026-05-14",
        "test(upload): HEIC is refused with a hint",
        "tests/test_upload.py",
        """
        def test_heic_hint():
            response = client.post("/photos", files={"file": ("a.heic", b"....", "image/heic")})
            assert response.status_code == 415
        """,
    ),
    _s(
        "2026-05-20",
        "test(auth): verify works for a fresh token",
        "tests/test_auth.py",
        """
        def test_roundtrip():
            assert auth.verify(auth.issue(42)) == 42
        """,
    ),
    _s(
        "2026-05-22",
        "test(search): cosine of identical unit vectors is one",
        "tests/test_search.py",
        """
        def test_cosine_identity():
            assert abs(search.cosine([0.6, 0.8], [0.6, 0.8]) - 1.0) < 1e-9
        """,
    ),
    _s(
        "2026-05-25",
        "address review comments",
        "src/photodrop/search.py",
        """
        def normalise(text: str) -> str:
            return " ".join(text.lower().split())
        """,
    ),
    _s(
        "2026-06-03",
        "test(ratelimit): the bucket refills over time",
        "tests/test_ratelimit.py",
        """
        from photodrop import ratelimit


        def test_burst_then_refill(fake_redis):
            for _ in range(ratelimit.BURST):
                assert ratelimit.allow(1, now=0)
            assert not ratelimit.allow(1, now=0)
            assert ratelimit.allow(1, now=60 / ratelimit.RATE)
        """,
    ),
    _s(
        "2026-06-05",
        "test(worker): thumbnails are stored for every size",
        "tests/test_worker.py",
        """
        from photodrop import worker


        def test_all_sizes_stored(monkeypatch, jpeg_bytes):
            stored = []
            monkeypatch.setattr(worker.storage, "get_object", lambda key: jpeg_bytes)
            monkeypatch.setattr(worker.storage, "put_thumbnail", lambda *a: stored.append(a[1]))
            worker.make_thumbnails("p1", "originals/p1/p1")
            assert sorted(stored) == ["grid", "preview"]
        """,
    ),
    _s(
        "2026-06-10",
        "feat(frontend): show a thumbnail preview before uploading",
        "frontend/src/Preview.tsx",
        """
        export function Preview({ file }: { file: File }) {
          const url = URL.createObjectURL(file);
          return <img className="preview" src={url} onLoad={() => URL.revokeObjectURL(url)} />;
        }
        """,
    ),
    _s(
        "2026-06-11",
        "frontend: format file sizes",
        "frontend/src/format.ts",
        """
        export function formatBytes(n: number): string {
          if (n < 1024) return `${n} B`;
          if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
          return `${(n / 1024 / 1024).toFixed(1)} MB`;
        }
        """,
    ),
    _s(
        "2026-06-12",
        "feat(frontend): gallery grid component",
        "frontend/src/Gallery.tsx",
        """
        type Photo = { id: string; thumb: string };

        export function Gallery({ photos }: { photos: Photo[] }) {
          return (
            <ul className="gallery">
              {photos.map((p) => (
                <li key={p.id}>
                  <img src={p.thumb} loading="lazy" width={256} height={256} />
                </li>
              ))}
            </ul>
          );
        }
        """,
    ),
    _s(
        "2026-06-15",
        "Fix typo in uploader error message",
        "frontend/src/messages.ts",
        """
        export const messages = {
          tooLarge: "This photo is larger than 20 MB.",
          unsupported: "This file type is not supported.",
          offline: "You are offline. The upload will continue when you reconnect.",
        };
        """,
    ),
    _s(
        "2026-06-23",
        "test(storage): download links are presigned GETs",
        "tests/test_storage.py",
        """
        def test_download_url_is_presigned(s3_stub):
            url = storage.download_url("originals/ab/abc")
            assert "X-Amz-Signature" in url
        """,
    ),
    _s(
        "2026-06-30",
        "test(scan): the EICAR string is detected",
        "tests/test_scan.py",
        """
        import io

        import pytest

        from photodrop import scan

        EICAR = rb"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"


        @pytest.mark.clamd
        def test_eicar_is_not_clean():
            assert not scan.is_clean(io.BytesIO(EICAR))
        """,
    ),
    _s(
        "2026-07-01",
        "feat(api): DELETE /photos/{id}",
        "src/photodrop/app.py",
        """
        @app.delete("/photos/{photo_id}", status_code=204)
        async def delete_photo(photo_id: str) -> None:
            from . import db

            db.soft_delete(photo_id, owner_id=0)
        """,
    ),
    _s(
        "2026-07-07",
        "test(thumbs): draft mode still gives the exact size",
        "tests/test_thumbnails.py",
        """
        def test_draft_mode_exact_size():
            preview = Image.open(io.BytesIO(thumbnails.render(jpeg(6000, 4000), 1024)))
            assert preview.size == (1024, 683)
        """,
    ),
    _s(
        "2026-07-10",
        "WIP dedupe tests",
        "tests/test_upload.py",
        """
        def test_same_bytes_twice_returns_same_id(auth_header):
            files = {"file": ("a.jpg", b"\\xff\\xd8\\xff" + b"0" * 100, "image/jpeg")}
            first = client.post("/photos", files=files, headers=auth_header)
            second = client.post("/photos", files=files, headers=auth_header)
            assert second.status_code == 200 and second.json()["id"] == first.json()["id"]
        """,
    ),
    _s(
        "2026-07-15",
        "feat(purge): the nightly purge job",
        "src/photodrop/purge.py",
        """
        \"\"\"Nightly: remove photos soft-deleted more than PURGE_AFTER_DAYS ago.\"\"\"

        from . import db, storage


        def run() -> int:
            removed = 0
            for photo_id, key in db.purgeable():
                storage.delete_object(key)
                removed += 1
            return removed
        """,
    ),
    _s(
        "2026-07-22",
        "Tidy up worker logging",
        "src/photodrop/worker.py",
        """
        def describe(photo_id: str, sizes: dict[str, bytes]) -> str:
            return ", ".join(f"{name}={len(blob) // 1024} KB" for name, blob in sizes.items())
        """,
    ),
    _s(
        "2026-07-29",
        "feat(frontend): retry button on failed uploads",
        "frontend/src/RetryButton.tsx",
        """
        export function RetryButton({ onRetry }: { onRetry: () => void }) {
          return (
            <button className="retry" onClick={onRetry}>
              Try again
            </button>
          );
        }
        """,
    ),
    _s(
        "2026-08-04",
        "test(api): the gallery cursor round-trips",
        "tests/test_gallery.py",
        """
        from photodrop import gallery


        def test_cursor_roundtrip():
            cursor = gallery.encode_cursor("2026-08-01T10:00:00+00:00", "abc")
            assert gallery.decode_cursor(cursor) == ("2026-08-01T10:00:00+00:00", "abc")
        """,
    ),
    _s(
        "2026-08-04",
        "feat(api): opaque gallery cursors",
        "src/photodrop/gallery.py",
        """
        import base64
        import json


        def encode_cursor(created_at: str, photo_id: str) -> str:
            raw = json.dumps([created_at, photo_id]).encode()
            return base64.urlsafe_b64encode(raw).decode()


        def decode_cursor(cursor: str) -> tuple[str, str]:
            created_at, photo_id = json.loads(base64.urlsafe_b64decode(cursor))
            return created_at, photo_id
        """,
    ),
    _s(
        "2026-08-07",
        "test(exif): location is removed, orientation kept",
        "tests/test_exif.py",
        """
        from photodrop import exif


        def test_gps_removed(photo_with_gps):
            cleaned = exif.without_location(photo_with_gps)
            assert exif.GPS_IFD not in Image.open(io.BytesIO(cleaned)).getexif()
        """,
    ),
    _s(
        "2026-08-12",
        "search: normalise whitespace in the cache key",
        "src/photodrop/search.py",
        """
        def cache_key(text: str) -> str:
            return "qvec:" + normalise(text)
        """,
    ),
    _s(
        "2026-08-19",
        "worker: arq settings class",
        "src/photodrop/worker.py",
        """
        class WorkerSettings:
            functions = [make_thumbnails]
            max_jobs = 8
            job_timeout = 120
        """,
    ),
    _s(
        "2026-08-24",
        "feat(api): photo metadata endpoint",
        "src/photodrop/app.py",
        """
        @app.get("/photos/{photo_id}")
        async def photo(photo_id: str) -> dict:
            from . import db

            row = db.get_photo(photo_id)
            if row is None:
                from fastapi import HTTPException

                raise HTTPException(404, "no such photo")
            return {"id": row[0], "caption": row[4], "created_at": row[5].isoformat()}
        """,
    ),
    _s(
        "2026-09-02",
        "test(migrations): alembic has a single head",
        "tests/test_migrations.py",
        """
        import subprocess


        def test_single_head():
            heads = subprocess.run(["alembic", "heads"], capture_output=True, text=True).stdout
            assert len(heads.strip().splitlines()) == 1
        """,
    ),
    _s(
        "2026-09-09",
        "test(thumbs): thumbnails are progressive",
        "tests/test_thumbnails.py",
        """
        def test_progressive():
            grid = Image.open(io.BytesIO(thumbnails.render(jpeg(800, 600), 256, square=True)))
            assert grid.info.get("progressive") or grid.info.get("progression")
        """,
    ),
    _s(
        "2026-09-15",
        "test(storage): sniffing beats the claimed type",
        "tests/test_storage.py",
        """
        def test_sniff_jpeg():
            assert storage.sniff_content_type(b"\\xff\\xd8\\xff\\xe0", "application/octet-stream") == "image/jpeg"
        """,
    ),
    _s(
        "2026-09-18",
        "test(auth): reused refresh token revokes the family",
        "tests/test_auth.py",
        """
        def test_reuse_revokes_family(token_store):
            first = token_store.create(1, family="f")
            auth.refresh(token_store, first)
            with pytest.raises(HTTPException):
                auth.refresh(token_store, first)
            assert token_store.family_revoked("f")
        """,
    ),
    _s(
        "2026-09-21",
        "feat(api): readiness endpoint that checks the database",
        "src/photodrop/app.py",
        """
        @app.get("/readyz")
        async def readyz() -> dict[str, str]:
            from . import db

            with db.pool.connection() as conn:
                conn.execute("select 1")
            return {"status": "ready"}
        """,
    ),
    _s(
        "2026-03-09",
        "feat(upload): reject files whose extension does not match the type",
        "src/photodrop/upload.py",
        """
        EXTENSIONS = {"image/jpeg": (".jpg", ".jpeg"), "image/png": (".png",), "image/webp": (".webp",)}


        def extension_matches(filename: str, content_type: str) -> bool:
            return filename.lower().endswith(EXTENSIONS.get(content_type, ()))
        """,
    ),
    _s(
        "2026-03-16",
        "ci: run the tests on Python 3.12 and 3.13",
        ".github/workflows/matrix.yml",
        """
        name: matrix
        on: [pull_request]
        jobs:
          test:
            runs-on: ubuntu-latest
            strategy:
              matrix: {python: ["3.12", "3.13"]}
            steps:
              - uses: actions/checkout@v4
              - uses: actions/setup-python@v5
                with: {python-version: "${{ matrix.python }}"}
              - run: pip install -e '.[dev]' && pytest -q -m "not clamd"
        """,
    ),
    _s(
        "2026-03-27",
        "test: shared fixtures for a JPEG and an auth header",
        "tests/conftest.py",
        """
        import io

        import pytest
        from PIL import Image

        from photodrop import auth


        @pytest.fixture
        def jpeg_bytes() -> bytes:
            out = io.BytesIO()
            Image.new("RGB", (640, 480), "teal").save(out, "JPEG")
            return out.getvalue()


        @pytest.fixture
        def auth_header() -> dict[str, str]:
            return {"Authorization": f"Bearer {auth.issue(1)}"}
        """,
    ),
    _s(
        "2026-04-06",
        "feat(db): store the caption on upload",
        "src/photodrop/db.py",
        """
        def insert_photo_with_caption(
            photo_id: str, owner_id: int, key: str, content_type: str, caption: str | None
        ) -> None:
            with pool.connection() as conn:
                conn.execute(
                    "insert into photos (id, owner_id, s3_key, content_type, caption) "
                    "values (%s, %s, %s, %s, %s)",
                    (photo_id, owner_id, key, content_type, caption),
                )
        """,
    ),
    _s(
        "2026-04-13",
        "loadtest: locust scenario for uploads",
        "loadtest/locustfile.py",
        """
        from locust import HttpUser, between, task


        class Uploader(HttpUser):
            wait_time = between(1, 3)

            @task
            def upload(self):
                with open("loadtest/sample-24mp.jpg", "rb") as fh:
                    self.client.post(
                        "/photos",
                        files={"file": ("sample.jpg", fh, "image/jpeg")},
                        headers={"Authorization": f"Bearer {self.environment.parsed_options.token}"},
                    )
        """,
    ),
    _s(
        "2026-05-07",
        "cleanup unused imports",
        "src/photodrop/app.py",
        """
        __all__ = ["app"]
        """,
    ),
    _s(
        "2026-05-18",
        "feat(thumbs): a 2048 px size for the lightbox",
        "src/photodrop/thumbnails.py",
        """
        LIGHTBOX = 2048


        def lightbox(data: bytes) -> bytes:
            return render(data, LIGHTBOX)
        """,
    ),
    _s(
        "2026-06-01",
        "feat(api): list the thumbnails of a photo",
        "src/photodrop/app.py",
        """
        @app.get("/photos/{photo_id}/thumbnails")
        async def photo_thumbnails(photo_id: str) -> dict[str, str]:
            from . import storage

            return {size: storage.download_url(storage.thumbnail_key(photo_id, size)) for size in ("grid", "preview")}
        """,
    ),
    _s(
        "2026-06-17",
        "frontend: vitest setup",
        "frontend/src/format.test.ts",
        """
        import { describe, expect, it } from "vitest";
        import { formatBytes } from "./format";

        describe("formatBytes", () => {
          it("uses MB above a megabyte", () => {
            expect(formatBytes(5 * 1024 * 1024)).toBe("5.0 MB");
          });
        });
        """,
    ),
    _s(
        "2026-06-25",
        "feat(frontend): upload queue with three files in flight",
        "frontend/src/queue.ts",
        """
        export async function uploadAll(files: File[], send: (f: File) => Promise<void>, inFlight = 3) {
          const pending = [...files];
          const workers = Array.from({ length: inFlight }, async () => {
            while (pending.length) await send(pending.shift()!);
          });
          await Promise.all(workers);
        }
        """,
    ),
    _s(
        "2026-07-02",
        "chore: compose healthchecks for db and redis",
        "docker-compose.override.yml",
        """
        services:
          db:
            healthcheck:
              test: ["CMD", "pg_isready", "-U", "photodrop"]
              interval: 5s
          redis:
            healthcheck:
              test: ["CMD", "redis-cli", "ping"]
              interval: 5s
        """,
    ),
    _s(
        "2026-07-27",
        "feat(api): caption search endpoint",
        "src/photodrop/app.py",
        """
        @app.get("/search")
        async def search_endpoint(q: str, limit: int = 20) -> list[dict]:
            from . import search

            rows = search.search_captions(owner_id=0, text=q, limit=min(limit, 50))
            return [{"id": r[0], "caption": r[1]} for r in rows]
        """,
    ),
    _s(
        "2026-08-26",
        "more tests",
        "tests/test_search.py",
        """
        def test_highlight_marks_whole_words():
            assert search.highlight("Dusk in Lisbon", ["lisbon"]) == "Dusk in <mark>Lisbon</mark>"
        """,
    ),
    _s(
        "2026-09-10",
        "feat(frontend): show upload errors from the API",
        "frontend/src/errors.ts",
        """
        export async function apiError(response: Response): Promise<string> {
          try {
            const body = await response.json();
            return body.error ?? `HTTP ${response.status}`;
          } catch {
            return `HTTP ${response.status}`;
          }
        }
        """,
    ),
    _s(
        "2026-09-23",
        "test(deploy): entrypoint runs migrations first",
        "tests/test_entrypoint.py",
        """
        from pathlib import Path


        def test_entrypoint_migrates_before_exec():
            lines = Path("docker-entrypoint.sh").read_text().splitlines()
            assert lines.index("alembic upgrade head") < lines.index('exec "$@"')
        """,
    ),
]

PLAIN_SUBJECTS = ["WIP", "address review comments", "more tests", "fix lint", "cleanup"]

# ------------------------------------------------------------------------------ dependencies

PYTHON_DEPS: dict[str, str] = {
    "fastapi": "0.110.0",
    "uvicorn[standard]": "0.29.0",
    "boto3": "1.34.60",
    "psycopg[binary]": "3.1.18",
    "psycopg-pool": "3.2.1",
    "redis": "5.0.3",
    "rq": "1.16.1",
    "pillow": "10.2.0",
    "httpx": "0.27.0",
    "python-multipart": "0.0.9",
}
NPM_DEPS: dict[str, str] = {
    "react": "18.2.0",
    "react-dom": "18.2.0",
    "vite": "5.2.0",
    "typescript": "5.4.3",
    "vitest": "1.4.0",
    "@vitejs/plugin-react": "4.2.1",
}
FRONTEND_FROM = "2026-06-09 17:20"  # the commit that creates frontend/
REPOS = {
    "fastapi": "tiangolo/fastapi",
    "uvicorn[standard]": "encode/uvicorn",
    "boto3": "boto/boto3",
    "psycopg[binary]": "psycopg/psycopg",
    "psycopg-pool": "psycopg/psycopg",
    "redis": "redis/redis-py",
    "rq": "rq/rq",
    "httpx": "encode/httpx",
    "python-multipart": "Kludex/python-multipart",
    "react": "facebook/react",
    "react-dom": "facebook/react",
    "vite": "vitejs/vite",
    "typescript": "microsoft/TypeScript",
    "vitest": "vitest-dev/vitest",
    "@vitejs/plugin-react": "vitejs/vite-plugin-react",
}


def _next_version(version: str, rng: random.Random) -> str:
    major, minor, patch = (int(p) for p in version.split("."))
    if rng.random() < 0.3:
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + rng.randint(1, 3)}"


def bump_commits(times: list[str], rng: random.Random) -> list[Commit]:
    """Dependabot-style bumps at ``times``: Python pins before the frontend exists, both after.

    Pillow is left alone (it is pinned by hand in the story), rq is dropped for arq in August.
    """
    versions = {**PYTHON_DEPS, **{f"npm:{k}": v for k, v in NPM_DEPS.items()}}
    out = []
    for when in times:
        names = [n for n in versions if n not in ("pillow",)]
        if when < FRONTEND_FROM:
            names = [n for n in names if not n.startswith("npm:")]
        if when >= "2026-08-18":
            names = [n for n in names if n != "rq"]
        name = rng.choice(names)
        old = versions[name]
        new = versions[name] = _next_version(old, rng)
        bare = name.removeprefix("npm:")
        where = " in /frontend" if name.startswith("npm:") else ""
        body = (
            f"Bumps [{bare}](https://github.com/{REPOS[bare]}) from {old} to {new}.\n"
            f"- [Release notes](https://github.com/{REPOS[bare]}/releases)\n"
            f"- [Commits](https://github.com/{REPOS[bare]}/compare/{old}...{new})\n\n"
            "Signed-off-by: dependabot[bot] <support@github.com>"
        )
        subject = (
            f"chore(deps): bump {bare} from {old} to {new}{where}"
            if rng.random() < 0.6
            else f"Bump {bare} from {old} to {new}{where}"
        )
        out.append(Commit(when, "dependabot", subject, body, deps=((name, f"=={new}"),)))
    return out


# The release commits: the CHANGELOG section and the version.
RELEASES = [
    ("2026-03-25 17:00", "0.1.0"),
    ("2026-04-28 16:00", "0.3.0"),
    ("2026-06-30 16:30", "0.5.0"),
    ("2026-08-25 16:00", "0.8.0"),
    ("2026-09-24 15:00", "0.9.0"),
    ("2026-09-29 11:00", "1.0.0"),
]

# ----------------------------------------------------------------------------- shell filler

_ROUTINE = [
    # (command, cwd, failure exit or 0 if it never fails, typical duration)
    ("git pull --rebase", "", 0, 1.8),
    ("git status", "", 0, 0.1),
    ("git log --oneline -10", "", 0, 0.1),
    ("git diff", "", 0, 0.2),
    ("make test", "", 2, 40.0),
    ("make lint", "", 2, 4.0),
    ("pytest tests/test_upload.py -q", "", 1, 6.0),
    ("pytest tests/test_storage.py -q", "", 1, 3.0),
    ("pytest -q -x", "", 1, 38.0),
    ("ruff check src tests", "", 1, 0.6),
    ("ruff format src tests", "", 0, 0.5),
    ("make dev", "", 130, 900.0),
    ("make worker", "", 130, 600.0),
    ("docker compose ps", "", 0, 0.6),
    ("docker compose up -d db redis", "", 0, 5.0),
    ("http :8000/healthz", "", 0, 0.3),
    ("ls", "src/photodrop", 0, 0.01),
    ("cd src/photodrop", "", 0, 0.01),
    ("pip install -e '.[dev]'", "", 0, 25.0),
    ("git push origin HEAD", "", 0, 2.0),
    ("git fetch origin", "", 0, 1.2),
]
_FRONTEND = [
    ("npm test", "frontend", 1, 7.0),
    ("npm run dev", "frontend", 130, 1200.0),
    ("npm run lint", "frontend", 1, 5.0),
]
_BRANCHES = [
    "ana/captions",
    "ben/storage-cleanup",
    "chen/db-helpers",
    "dana/thumbs",
    "ana/gallery",
    "ben/ci-cache",
    "chen/tokens",
    "dana/worker-timing",
]


def filler_sessions(rng: random.Random, count: int, start: str, end: str) -> list[Shell]:
    """``count`` short sessions of routine commands on weekdays between ``start`` and ``end``."""
    lo, hi = ts(start), ts(end)
    sessions = []
    for i in range(count):
        day = lo + rng.randrange((hi - lo) // 86_400) * 86_400
        if (day // 86_400 + 4) % 7 in (5, 6):  # 1970-01-01 was a Thursday: skip weekends
            day += 2 * 86_400
        when = day + rng.randrange(8 * 3600, 18 * 3600)
        pool = _ROUTINE + (_FRONTEND if when >= ts(FRONTEND_FROM) else [])
        cmds = []
        if rng.random() < 0.3:
            cmds.append(Cmd(f"git checkout -b {rng.choice(_BRANCHES)}-{i}", 0, after=0))
        for _ in range(rng.randint(2, 6)):
            cmd, cwd, fail, duration = rng.choice(pool)
            code_ = fail if fail and rng.random() < 0.3 else 0
            cmds.append(
                Cmd(cmd, code_, cwd, after=round(rng.uniform(0.2, 12), 1), duration=duration)
            )
        stamp = _fmt(when)
        sessions.append(Shell(stamp, tuple(cmds), session=f"routine-{i}"))
    return sessions


def _fmt(epoch: int) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(epoch))
