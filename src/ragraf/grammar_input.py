"""The bytes tree-sitter is given: same-length rewrites around grammar crashes, so every byte
offset of a node still points into the file's own bytes."""

from __future__ import annotations

import re

# tree-sitter-bash (tree-sitter-language-pack 0.13) segfaults, at random, on `{` followed by a code
# point past about U+51CA4 (unassigned planes, tags, private use; found by the random-text test in
# tests/facts/test_robustness.py). Every character from U+40000 on (F1-F4 lead bytes) is given to
# it as U+10000, four bytes in UTF-8 too.
_FAR_PLANES = re.compile(rb"[\xf1-\xf4][\x80-\xbf]{3}")
_PLACEHOLDER = "\U00010000".encode()


def grammar_safe(data: bytes, language: str) -> bytes:
    """The file's bytes as the language's grammar may safely parse them (the same length)."""
    if language == "bash" and _FAR_PLANES.search(data):
        return _FAR_PLANES.sub(_PLACEHOLDER, data)
    return data
