"""Corpus: which files are indexed, their text and its sha256.

The functions are imported from their modules (`from ragraf.corpus.discover import discover`):
the package loads none of them, so a module that needs only `gitcmd` or `rules` pays for no
discovery, hashing or secret patterns."""
