"""Redaction's one RE2 scan finds what a scan per format and a find per word found."""

from __future__ import annotations

import random
import re
import string

import pytest

from ragraf.corpus import secrets
from ragraf.corpus.secrets import _ASSIGN_WORDS, _FORMATS, TOKEN_FORMATS, _formats_in, redact


def _lines_with_words_by_line(text: str) -> list[tuple[int, int]]:
    """The lines holding a word, by Python's re, line by line."""
    spans, start = [], 0
    for line in text.split("\n"):
        if _ANY_WORD.search(line):
            spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


_ANY_WORD = re.compile("(?i:" + "|".join(map(re.escape, _ASSIGN_WORDS)) + ")")


def _by_scan_per_format(text: str) -> tuple[str, int]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(secrets, "_formats_in", lambda text: iter(_FORMATS))
        mp.setattr(secrets, "_lines_with_words", _lines_with_words_by_line)
        return redact(text)


LITERALS = [literal for _, literals, _ in TOKEN_FORMATS for literal in literals]


def _piece(r: random.Random) -> str:
    """A literal, a token-shaped run after one, a word in any case, or filler."""
    roll = r.random()
    if roll < 0.3:
        return r.choice(LITERALS)
    if roll < 0.5:
        return r.choice(LITERALS) + "".join(
            r.choices(string.ascii_letters + string.digits + "_-", k=r.randint(8, 70))
        )
    if roll < 0.65:
        word = r.choice(_ASSIGN_WORDS)
        return "".join(c.upper() if r.random() < 0.3 else c for c in word) + r.choice(
            ["=", ": ", ' = "', "_KEY="]
        )
    return r.choice(
        [" ", "\n", "\r\n", "x", "9", "://", "@", '"', "é", "ſ", "İ", "\u212a", "🙂", "user:pass@"]
    )


def test_one_scan_redacts_as_a_scan_per_format_did() -> None:
    r = random.Random(1)
    texts = ["".join(_piece(r) for _ in range(r.randint(1, 40))) for _ in range(3000)]
    differ = [t for t in texts if redact(t) != _by_scan_per_format(t)]
    assert differ == []
    assert sum(redact(t)[1] for t in texts) > 500  # the texts hold tokens to redact


@pytest.mark.parametrize("kind", [kind for kind, _, _ in TOKEN_FORMATS])
def test_a_literal_hidden_under_another_still_has_its_format_tried(kind: str) -> None:
    """Matches of a scan do not overlap: where a literal overlaps another one the scan took, its
    format is tried all the same."""
    mine = dict((k, literals) for k, literals, _ in TOKEN_FORMATS)[kind]
    tried_on: list[str] = []
    for other in LITERALS:
        for literal in mine:
            overlaps = [other] if literal in other else [literal] if other in literal else []
            overlaps += [other + literal[k:] for k in range(1, len(literal)) if other.endswith(literal[:k])]
            for text in overlaps:
                tried_on.append(text)
                assert kind in [k for k, _, _ in _formats_in(text)], text
    assert tried_on  # its own literals at least


def test_text_without_a_literal_tries_no_format() -> None:
    assert list(_formats_in("def add(a, b):\n    return a + b\n")) == []


def test_a_secret_after_characters_longer_in_lower_case_is_found() -> None:
    """`İ`.lower() is two characters: lines found in a lower-cased copy were cut off after it."""
    text = 'title = "İstanbul İzmir"\nAPI_KEY = "q8Zr4Lm2Xv9Tb7Nc"\n'
    assert redact(text) == ('title = "İstanbul İzmir"\nAPI_KEY = "[redacted:assigned-secret]"\n', 1)
