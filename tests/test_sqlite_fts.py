"""The SQLite backend compiles a text query to the same FTS5 strings recall has always sent."""

from __future__ import annotations

import pytest

from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.store.sqlite.fts import match_string

# (typed, every word, without stopwords): the strings kernel/recall/fts.match_query produced.
TODAY = [
    (
        "how do we handle retries in billing",
        '"how" OR "do" OR "we" OR "handle" OR "retries" OR "in" OR "billing"',
        '"handle" OR "retries" OR "billing"',
    ),
    ('"auth NOT', '"auth" OR "not"', '"auth"'),
    ("NEAR(x y, 3)", '"near" OR "x" OR "y" OR "3"', '"near" OR "x" OR "y" OR "3"'),
    ("auth* AND title:retry", '"auth" OR "and" OR "title" OR "retry"', '"auth" OR "title" OR "retry"'),
    (
        'title: "exact phrase" OR -minus',
        '"title" OR "exact" OR "phrase" OR "or" OR "minus"',
        '"title" OR "exact" OR "phrase" OR "minus"',
    ),
    (
        "Café naïve ÜBER straße",
        '"café" OR "naïve" OR "über" OR "straße"',
        '"café" OR "naïve" OR "über" OR "straße"',
    ),
    ("日本語 テキスト", '"日本語" OR "テキスト"', '"日本語" OR "テキスト"'),
    ("the and of", '"the" OR "and" OR "of"', '"the" OR "and" OR "of"'),
    ("What is the DB driver?", '"what" OR "is" OR "the" OR "db" OR "driver"', '"db" OR "driver"'),
    (
        "db.driver / src/app.py x_y",
        '"db" OR "driver" OR "src" OR "app" OR "py" OR "x_y"',
        '"db" OR "driver" OR "src" OR "app" OR "py" OR "x_y"',
    ),
    ("Redis redis REDIS", '"redis"', '"redis"'),
    ("we're what's don't", '"we" OR "re" OR "what" OR "s" OR "don" OR "t"', '"re" OR "s" OR "don" OR "t"'),
    ("col:val {a b} ^start", '"col" OR "val" OR "a" OR "b" OR "start"', '"col" OR "val" OR "b" OR "start"'),
]


@pytest.mark.parametrize(("typed", "every_word", "content_words"), TODAY)
def test_compiled_match_strings_are_unchanged(typed: str, every_word: str, content_words: str) -> None:
    query = TextQuery.from_text(typed)
    content = TextQuery.from_text(typed, drop_stopwords=True)
    assert query is not None and content is not None
    assert match_string(query) == every_word
    assert match_string(content) == content_words


@pytest.mark.parametrize("typed", ["", "   ", "!!! ??? ***"])
def test_text_without_words_is_no_query(typed: str) -> None:
    assert TextQuery.from_text(typed) is None
    assert TextQuery.from_text(typed, drop_stopwords=True) is None


def test_phrases_stay_phrases_and_quotes_are_escaped() -> None:
    assert match_string(TextQuery(("redis cluster", "pg"))) == '"redis cluster" OR "pg"'
    assert match_string(TextQuery(('say "hi"',), mode="all")) == '"say ""hi"""'
    assert match_string(TextQuery(("a", "b"), mode="all")) == '"a" AND "b"'
