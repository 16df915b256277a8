"""Text extraction and hashing: binaries and bundles refused, invalid UTF-8 replaced, front matter blanked."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

SECRET_BY_CONTENT = "secret (it opens with a private key)"
_FRONT_MATTER = re.compile(r"\A(---|\+\+\+)[ \t]*\n.*?\n\1[ \t]*(\n|\Z)", re.S)


@dataclass(frozen=True)
class Extracted:
    text: str
    sha256: str


class Unindexable(Exception):
    """A file that exists but must not be indexed; the message is the reason."""


def strip_front_matter(text: str) -> str:
    """Blank Markdown front matter so metadata churn does not change the hash, keeping line numbers."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return text
    blanked = "\n" * match.group(0).count("\n")
    return blanked + text[match.end() :]


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def looks_binary(data: bytes) -> bool:
    """A NUL byte near the start, unless the file is UTF-16 text after its byte order mark (Windows
    tools write sources, .rc and .ps1 files so, with a NUL in every ASCII letter)."""
    head = data[:8192]
    if b"\0" not in head:
        return False
    if not head.startswith(_UTF16_BOMS) or head.startswith(b"\xff\xfe\x00\x00"):  # UTF-32 is not read
        return True
    sample = head[: len(head) // 2 * 2].decode("utf-16", errors="replace")
    return "\0" in sample or sample.count("\ufffd") > len(sample) // 100


def decode(data: bytes) -> str:
    """UTF-8 (or UTF-16 after its byte order mark) with replacement, never a crash; BOM dropped,
    newlines normalised to \\n."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data.startswith(_UTF16_BOMS):
        text = data.decode("utf-16", errors="replace")  # the BOM says which byte order, and goes
    else:
        text = data.decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def is_utf8(text: str) -> bool:
    """Whether a str can be written as UTF-8: not when it holds a lone surrogate (bytes the shell or
    the file system passed that are not UTF-8, an escape cut inside an emoji)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def extract(path: Path, rel: str, max_line_chars: int) -> Extracted:
    """Read and normalise one file; raises Unindexable with the reason, OSError if it vanished."""
    # Imported here: its patterns compile in 8 ms, which a run that reads no file (no change) skips.
    from ragraf.corpus.secrets import opens_with_private_key, redact

    with open(path, "rb") as fh:
        data = fh.read()
    if looks_binary(data):
        raise Unindexable("binary (NUL byte)")
    text = decode(data)
    if opens_with_private_key(text):
        raise Unindexable(SECRET_BY_CONTENT)
    if max_line_chars and len(text) > max_line_chars:
        longest = max(map(len, text.split("\n")))  # map: no Python step per line
        if longest > max_line_chars:
            raise Unindexable(f"minified or generated (a line of {longest} characters)")
    if rel.lower().endswith((".md", ".markdown", ".mdx")):
        text = strip_front_matter(text)
    # What the index sees, and hashes: tokens of known formats redacted (corpus/secrets.py).
    text, _count = redact(text)
    return Extracted(text, sha256_text(text))
