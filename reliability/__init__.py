"""Reliability campaigns: crashes, embedder faults, concurrency, scale (issue 10).

Each campaign is a module with `run(...) -> dict` (the figures) and a `main()` for the command
line; `reliability/report.py` runs them and writes docs/reliability.md. The short CI versions
live in tests/reliability/.
"""
