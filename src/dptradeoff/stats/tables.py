"""Tables as CSV plus a Markdown copy, both written atomically, with their provenance in a header line."""
from __future__ import annotations

import pandas as pd

from .. import UserError
from ..io import atomic_path


def write(frame: pd.DataFrame, csv_path: str, md_path: str, note: str) -> None:
    """CSV (a leading `# note` comment line) and Markdown (the note as a paragraph under the table)."""
    with atomic_path(csv_path) as tmp:
        with open(tmp, "w") as f:
            f.write(f"# {note}\n")
            frame.to_csv(f, index=False, float_format="%.6g")
    with atomic_path(md_path) as tmp:
        with open(tmp, "w") as f:
            f.write(frame.to_markdown(index=False, floatfmt=".4g") + f"\n\n{note}\n")


def read(csv_path: str) -> pd.DataFrame:
    try:
        return pd.read_csv(csv_path, comment="#")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"{csv_path} is not a readable table ({str(exc).splitlines()[0]}); it is damaged or cut short, "
                        "so delete it and rerun the workflow, which makes it again.") from None
