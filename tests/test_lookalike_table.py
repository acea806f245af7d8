"""The look-alike table a PostgreSQL store loads (p006) is the facade's key, character by character."""

from __future__ import annotations

import unicodedata

import pytest

from ctx_kernel.kernel import text
from ctx_kernel.kernel.store.postgres import lookalikes


def test_every_shipped_row_is_the_facades_key_of_its_character() -> None:
    version, rows = lookalikes.shipped()
    assert len(rows) > 8000 and version
    wrong = [
        (source, key, text.lookalike_key(source)) for source, key in rows if text.lookalike_key(source) != key
    ]
    assert wrong == []


def test_the_table_holds_every_character_whose_key_is_not_itself() -> None:
    version, _rows = lookalikes.shipped()
    if version != unicodedata.unidata_version:
        pytest.skip(
            f"the table was written with Unicode {version}; this Python has {unicodedata.unidata_version}"
        )
    assert lookalikes.render(lookalikes.build()) == lookalikes.TABLE.read_text(encoding="ascii")


def test_the_file_holds_no_character_a_person_cannot_see() -> None:
    """Code points in hexadecimal: the file itself cannot hide a character."""
    assert lookalikes.TABLE.read_text(encoding="ascii").isascii()
