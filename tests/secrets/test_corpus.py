"""The corpus itself: repeatable, as large and as varied as it says, and honest about shapes
that can be checked without a provider (GitHub's and npm's checksum, a JWT's JSON)."""

from __future__ import annotations

import base64
import json
import zlib

from .corpus import keyworded, ordinary_commands, prefixed
from .formats import ALNUM, KINDS


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another():
    assert prefixed(seed=3) == prefixed(seed=3)
    assert keyworded(seed=3) == keyworded(seed=3)
    assert {s.value for s in prefixed(seed=3)}.isdisjoint(s.value for s in prefixed(seed=4))


def test_the_corpus_covers_ninety_providers_and_every_way_a_secret_is_written():
    tokens, values = prefixed(), keyworded(per_style=3)
    providers = {s.family for s in tokens} - KINDS
    assert len(tokens) >= 150 and len(providers) >= 90
    assert {s.kind for s in tokens} == {"token", "url", "pem"}
    assert len(values) >= 150 and {s.kind for s in values} == {"shell", "config", "code", "prose"}
    every = tokens + values
    assert len({s.id for s in every}) == len({s.probe for s in every}) == len(every)
    assert all(s.secret and s.secret in s.value for s in every)
    assert all(piece in s.line for s in values for piece in s.value.split("\n"))


def test_two_hundred_distinct_ordinary_commands():
    commands = ordinary_commands()
    assert len(set(commands)) == len(commands) >= 200


def _base62(number: int) -> str:
    digits = ""
    while number:
        number, rem = divmod(number, 62)
        digits = ALNUM[rem] + digits
    return digits.rjust(6, "0")


def test_github_and_npm_tokens_carry_their_crc32_checksum():
    checked = [s for s in prefixed(per_format=5) if s.value[:4] in ("ghp_", "gho_", "npm_")]
    assert len(checked) == 15
    for s in checked:
        body, check = s.value[4:34], s.value[34:]
        assert check == _base62(zlib.crc32(body.encode()))


def test_a_jwt_is_three_base64url_parts_of_which_two_are_json():
    for s in (s for s in prefixed(per_format=5) if s.provider == "jwt"):
        header, claims, signature = s.value.split(".")
        for part in (header, claims):
            decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
            assert isinstance(decoded, dict)
        assert json.loads(base64.urlsafe_b64decode(header + "==="))["typ"] == "JWT"
        assert len(signature) >= 43
