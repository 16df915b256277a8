"""Corpus: which files are indexed, their text and its sha256."""

from ragraf.corpus.discover import Discovery, FileStat, discover
from ragraf.corpus.extract import Extracted, Unindexable, extract, sha256_text

__all__ = ["Discovery", "Extracted", "FileStat", "Unindexable", "discover", "extract", "sha256_text"]
