"""index_texts: the bodies of one file's chunks for the lexical index, as index_text gives each."""

from ragraf.tokens import index_text, index_texts


def test_index_texts_gives_each_text_what_index_text_gives() -> None:
    texts = [
        "class QuerySet:\n    def get_or_create(self): return HTTPServer_v2()",
        "QuerySet again, plain words, and _private __init__ _1_2",
        "FooBar and Foo_Bar expand alike: the expansion comes once per word",
        "only lower case words here",
        "",
    ]
    got = index_texts(texts)
    assert got == [index_text(t) for t in texts]
    assert got[2].count("foobar foo bar") == 2
    assert got[3] == texts[3]
    assert "queryset query set" in got[1]  # a word seen in an earlier text still expands
