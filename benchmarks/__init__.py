"""Benchmark harnesses for ragraf: corpora, retrieval quality, speed."""
