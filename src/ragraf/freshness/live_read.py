"""Live read: a file's current lines, confined to the root, compared with the indexed revision."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ragraf.corpus.rules import is_secret
from ragraf.errors import PathOutsideRootError, UsageError

MAX_READ_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class LiveText:
    path: str  # normalised, relative to the root
    lines: list[str]  # all of them, or of a file over the read limit only the lines asked for
    sha256: str  # "" for a file over the read limit: never indexed, nothing to compare
    total_lines: int
    first_line: int = 1  # the number of lines[0]: a big file keeps only the lines asked for


def parse_spec(spec: str) -> tuple[str, int | None, int | None]:
    """'src/a.py:10-20' -> ('src/a.py', 10, 20); 'src/a.py:7' -> (…, 7, 7); no range -> Nones."""
    path, sep, rng = spec.rpartition(":")
    if not sep or not rng or not all(part.isdigit() for part in rng.split("-", 1)):
        return spec, None, None
    start, _, end = rng.partition("-")
    return path, int(start), int(end or start)


def confine(root: Path, path: str) -> tuple[str, Path]:
    """The relative posix path and real location of `path`, refusing anything that leaves the root."""
    if not path or "\0" in path:
        raise PathOutsideRootError(
            "the path is empty or contains a NUL byte", suggest="pass a path inside the root"
        )
    if os.path.isabs(path) or path.startswith("~"):
        raise PathOutsideRootError(
            f"{path!r} is absolute; only paths inside the root can be read",
            suggest="pass a path relative to the root",
        )
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if ".." in parts:
        raise PathOutsideRootError(
            f"{path!r} climbs out of the root with ..", suggest="pass a path inside the root"
        )
    rel = "/".join(p for p in parts if p not in ("", "."))
    real_root = root.resolve()
    try:
        target = (real_root / rel).resolve()
    except (RuntimeError, OSError):  # a symlink loop
        raise PathOutsideRootError(f"{path!r} is a symlink loop", suggest="read a regular file") from None
    if target != real_root and real_root not in target.parents:
        raise PathOutsideRootError(
            f"{path!r} leads outside the root (through a symlink)",
            suggest="read the file at its real place inside the root",
        )
    if is_secret(rel) or is_secret(target.relative_to(real_root).as_posix()):
        raise PathOutsideRootError(
            f"{path!r} looks like a secret; ragraf never returns secrets",
            suggest="open it yourself if you really need it",
        )
    return rel, target


def _lines(text: str) -> list[str]:
    """A text's lines as an editor numbers them: a final newline ends the last line, it opens none."""
    lines = text.split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def broken_link_error(root: Path, rel: str) -> UsageError | None:
    """The error for a path that is a symlink leading nowhere, else None."""
    from ragraf.corpus.discover import dangling_link

    link = dangling_link(root / rel)
    if link is None:
        return None
    return UsageError(
        f"{rel} is a symlink to {link}, which does not exist",
        suggest="point the link at an existing file, or read the file it was meant to name",
    )


def read_live(root: Path, path: str, start_line: int | None = None, end_line: int | None = None) -> LiveText:
    """The current text of a regular file inside the root (normalised as the indexer sees it). Of a
    file over the read limit only the asked lines are kept, when a range is given, without a hash."""
    # The listing rules, the decoder and the secret patterns load with the first live read.
    from ragraf.corpus.discover import special_kind
    from ragraf.corpus.extract import decode, looks_binary, sha256_text, strip_front_matter
    from ragraf.corpus.secrets import opens_with_private_key, redact

    rel, target = confine(root, path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        raise broken_link_error(root, rel) or UsageError(
            f"{rel} does not exist", suggest="check the path (ragraf status lists deleted files)"
        ) from None
    except OSError as exc:  # a path through a file, a permission
        raise UsageError(
            f"{rel} cannot be read: {exc.strerror}", suggest="read a regular file inside the root"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        kind = special_kind(target) or "not a regular file"
        raise UsageError(
            f"{rel} is {kind}, not a regular file: not read",
            suggest="give a file inside it" if stat.S_ISDIR(st.st_mode)
            else "read a regular file: a FIFO, socket or device holds no text (reading one may never end)",
        )  # fmt: skip
    big = st.st_size > MAX_READ_BYTES
    if big and end_line is None:
        raise UsageError(
            f"{rel} is {st.st_size} bytes, over the {MAX_READ_BYTES} byte read limit",
            suggest="read a line range with PATH:START-END",
        )
    first = max(1, start_line or 1) if big else 1
    try:
        with open(target, "rb") as fh:
            if big:
                if looks_binary(fh.read(8192)):
                    raise UsageError(f"{rel} is binary", suggest="ragraf reads text files only")
                fh.seek(0)
                data, total = _lines_of(fh, first, end_line or 0, rel)
            else:
                data = fh.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{rel} cannot be read: {exc.strerror}", suggest="check its permissions") from None
    if not big and looks_binary(data):
        raise UsageError(f"{rel} is binary", suggest="ragraf reads text files only")
    text = decode(data)
    if first == 1 and opens_with_private_key(text):
        raise UsageError(
            f"{rel} is a secret (it opens with a private key)", suggest="ragraf never reads secrets"
        )
    # Tokens are redacted as the index has them; the hash is of what the index hashes.
    shown = redact(text)[0]
    lines = _lines(shown)
    if big:
        return LiveText(rel, lines, "", total, first)
    if rel.lower().endswith((".md", ".markdown", ".mdx")):
        hashed = sha256_text(redact(strip_front_matter(text))[0])
    else:
        hashed = sha256_text(shown)
    return LiveText(rel, lines, hashed, len(lines))


def _lines_of(fh: BinaryIO, first: int, last: int, rel: str) -> tuple[bytes, int]:
    """Lines first..last of a big file (within the read limit), and how many lines it has in all;
    the others are counted, block by block, never kept."""
    kept: list[bytes] = []
    size, line, last_byte = 0, 1, b""
    while block := fh.read(1 << 20):
        last_byte = block[-1:]
        newlines = block.count(b"\n")
        if line + newlines < first or line > last:  # no asked line in this block: count it only
            line += newlines
            continue
        parts = block.split(b"\n")
        for i, part in enumerate(parts):
            ends_line = i < len(parts) - 1
            if first <= line <= last:
                kept.append(part + (b"\n" if ends_line else b""))
                size += len(part) + 1
                if size > MAX_READ_BYTES:
                    raise UsageError(
                        f"lines {first}-{last} of {rel} are over the {MAX_READ_BYTES} byte read limit",
                        suggest="read a shorter line range",
                    )
            if ends_line:
                line += 1
    return b"".join(kept), line - 1 + (1 if last_byte not in (b"", b"\n") else 0)
