"""The operations layer's one public face: `Index`, one method per operation, each returning an
envelope (DESIGN §4).

`Index` holds no logic of its own: it composes the operations by concern (`ops/search.py`,
`ops/localize.py`,
`ops/facts.py`, `ops/graph.py`, `ops/read.py`, `ops/freshness.py`, `ops/health.py`, `ops/lifecycle.py`), the
work-tree views (`views.py`) and the guard every read starts with (`guarded.py`), all standing on
`session.py`. A new operation goes in the `ops/` module of its concern, or a new one there.
"""

from __future__ import annotations

from ragraf.api.envelope import Envelope
from ragraf.api.guarded import Guarded
from ragraf.api.ops.facts import FactOps
from ragraf.api.ops.freshness import FreshnessOps
from ragraf.api.ops.graph import GraphOps
from ragraf.api.ops.health import HealthOps
from ragraf.api.ops.lifecycle import IndexRuns
from ragraf.api.ops.localize import LocalizeOps
from ragraf.api.ops.read import ReadOps
from ragraf.api.ops.search import SearchOps
from ragraf.api.views import WorkTreeViews
from ragraf.errors import RagrafError


class Index(
    LocalizeOps,
    SearchOps,
    FactOps,
    GraphOps,
    ReadOps,
    FreshnessOps,
    HealthOps,
    IndexRuns,
    WorkTreeViews,
    Guarded,
):
    """A repository's index: `Index.open(root)`, then `.index()`, `.search()`, `.status()` …"""


def error_envelope(op: str, exc: RagrafError) -> Envelope:
    """An envelope that carries an error (refusals exit 3, other errors 1)."""
    env = Envelope(op=op, state="refused")
    env.capability.lexical = False  # nothing was answered from the index
    env.error = exc.as_dict()
    return env
