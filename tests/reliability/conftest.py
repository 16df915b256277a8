"""The reliability suite (issue 10): short versions of the campaigns in reliability/.

RAGRAF_RELIABILITY_LONG=1 (set by `reliability/report.py --long`) makes the fuzz tests run many
more examples; the campaigns themselves take their long parameters from the report script.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
for folder in (REPO, REPO / "tests", REPO / "tests" / "adapters"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
