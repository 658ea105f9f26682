"""The viewer is a server on the user's machine, and a web page anywhere can make their browser
send it requests. These rules, each a function of the request alone, stand between them:

    host      the ``Host`` header names a loopback address or ``localhost``: a page whose own
              name an attacker pointed at 127.0.0.1 (DNS rebinding) says its own name here
    token     a random token per launch, in the URL the viewer opens (as Jupyter does), is
              exchanged for an HttpOnly, SameSite=Strict cookie; anything else is refused
    origin    a request that changes something comes from a page of this server (``Origin``)
    csrf      ... and carries the launch's form token, which only this server's pages hold
    methods   GET, HEAD and POST only

Every response carries a Content-Security-Policy that runs scripts from this server's own
files only (none inline, nothing from the network) and no framing. Its referrer policy is
``same-origin``, not ``no-referrer``: under the latter Chromium sends ``Origin: null`` with the
viewer's own forms, and the origin rule would refuse them.

A rule can be left out (``Guard(app, secret, rules=...)``) so the tests can show each one is
what refuses its attack: every security test runs once with all rules and once without its
own, and the second run must let the attack through.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

__all__ = ["RULES", "Guard", "Secret", "is_loopback_host"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

RULES = frozenset({"host", "token", "origin", "csrf", "methods"})
SAFE_METHODS = frozenset({"GET", "HEAD"})
ALLOWED_METHODS = frozenset({"GET", "HEAD", "POST"})
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


@dataclass(frozen=True)
class Secret:
    """One launch's token, and what is derived from it: the cookie's value and the forms'
    token. Neither reveals the token, and neither is valid for another launch."""

    token: str
    port: int

    @classmethod
    def new(cls, port: int) -> Secret:
        return cls(secrets.token_urlsafe(32), port)

    def _derive(self, purpose: str) -> str:
        return hmac.new(self.token.encode(), purpose.encode(), hashlib.sha256).hexdigest()

    @property
    def cookie_name(self) -> str:
        return f"nexusmem_{self.port}"  # cookies are not kept apart by port: the name is

    @property
    def cookie(self) -> str:
        return self._derive("cookie")

    @property
    def csrf(self) -> str:
        return self._derive("csrf")

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}?{urlencode({'token': self.token})}"


def is_loopback_host(value: str) -> bool:
    """``localhost``, or a loopback address, with or without a port (``[::1]:8080``)."""
    host = value.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else ""
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _cookie(headers: dict[str, str], name: str) -> str | None:
    jar = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header is no cookie
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


class Guard:
    """ASGI middleware applying ``rules`` (all of ``RULES`` unless told) before ``app``."""

    def __init__(self, app: ASGIApp, secret: Secret, rules: Iterable[str] = RULES) -> None:
        self.app = app
        self.secret = secret
        self.rules = frozenset(rules)
        unknown = self.rules - RULES
        if unknown:
            raise ValueError(f"unknown rules: {sorted(unknown)}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _plain(send, 403 if refusal != "method" else 405, refusal)
            return
        if "token" in self.rules and self._exchange(scope):
            await self._set_cookie(scope, send)
            return
        scope.setdefault("state", {})["csrf"] = self.secret.csrf
        await self.app(scope, receive, _with_headers(send))

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> str | None:
        method = scope["method"]
        if "methods" in self.rules and method not in ALLOWED_METHODS:
            return "method"
        if "host" in self.rules and not is_loopback_host(headers.get("host", "")):
            return "the Host header must name this machine (127.0.0.1, ::1 or localhost)"
        if "token" in self.rules and not self._exchange(scope):
            given = _cookie(headers, self.secret.cookie_name) or ""
            if not hmac.compare_digest(given, self.secret.cookie):
                return "open the viewer through the URL `nexusmem ui` printed"
        if method not in SAFE_METHODS and "origin" in self.rules:
            origin = headers.get("origin", "")
            if origin != f"http://{headers.get('host', '')}":
                return "a change must come from a page of this viewer (Origin)"
        if method not in SAFE_METHODS and "csrf" in self.rules:
            sent = headers.get("x-csrf-token") or _query(scope).get("csrf", "")
            if not hmac.compare_digest(sent, self.secret.csrf):
                return "this form is from another launch of the viewer: reload the page"
        return None

    def _exchange(self, scope: Scope) -> bool:
        """A GET carrying this launch's token, to be answered with the cookie."""
        if scope["method"] != "GET":
            return False
        token = _query(scope).get("token")
        return token is not None and hmac.compare_digest(token, self.secret.token)

    async def _set_cookie(self, scope: Scope, send: Send) -> None:
        """The cookie, and the same address without its token: the token leaves the address
        bar and the history, and a reload works on the cookie alone."""
        rest = [(k, v) for k, v in parse_qsl(_raw_query(scope)) if k != "token"]
        location = scope["path"] + (f"?{urlencode(rest)}" if rest else "")
        cookie = (
            f"{self.secret.cookie_name}={self.secret.cookie}; Path=/; HttpOnly; SameSite=Strict"
        )
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode()),
                    (b"set-cookie", cookie.encode()),
                    *HEADERS,
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _raw_query(scope: Scope) -> str:
    return bytes(scope.get("query_string", b"")).decode("latin-1")


def _query(scope: Scope) -> dict[str, str]:
    return dict(parse_qsl(_raw_query(scope)))


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers", [])}
            extra = [(k, v) for k, v in HEADERS if k not in present]
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    return sending


async def _plain(send: Send, status: int, text: str) -> None:
    body = f"{status} refused: {text}\n".encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
