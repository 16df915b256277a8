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


def test_only_identifiers_with_a_capital_or_an_inner_underscore_expand() -> None:
    # Leading digits are not part of a word; non-ASCII letters end one; lower case with digits stays.
    text = "12FooBar éBazQux abc123 a1_ __init__ 0xFF_u32 _1_2"
    body = index_text(text)
    extra = body.split("\n", 1)[1].split(" ")
    assert "foobar" in extra and "bazqux" in extra and "xffu32" in extra and "12" in extra
    assert "12foobar" not in body and "abc" not in extra and "a1" not in extra and "init" not in extra
    assert index_texts([text, text]) == [body, body]
