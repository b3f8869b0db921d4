"""Which evaluation rows succeeded. The generic table I/O this module held is `dptradeoff.io`'s now;
its names stay importable from here for the importers other branches may still have."""
from __future__ import annotations

import pandas as pd

from ..io import concat, read_frame, write_frame  # noqa: F401  (moved to dptradeoff.io)


def succeeded(evals: pd.DataFrame) -> pd.DataFrame:
    """The rows whose oracles did not fail (all rows of tables written before `failure` existed)."""
    return evals[evals["failure"].isna()] if "failure" in evals.columns else evals
