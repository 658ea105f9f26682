"""The fuzz modules' shared database (see ``bounds.open_store``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .bounds import Store, open_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with open_store(tmp_path_factory.mktemp("fuzz")) as opened:
        yield opened
