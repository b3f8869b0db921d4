"""KDD Cup 1999, 10% set: 41 features (3 of them text) and a label, normal vs attack.

Real: kddcup.data_10_percent.gz (CSV, no header, labels end in '.').
Embedded: a synthetic set of the same shape (same text columns and category counts,
38 numeric columns, about 20% normal traffic). Text columns are one-hot encoded.
"""
from __future__ import annotations

import gzip
import io

import numpy as np
import pandas as pd

from .. import UserError
from .dataset import SplitDataset, seeded_split

N_COLUMNS = 42
TEXT_COLUMNS = {1: "protocol_type", 2: "service", 3: "flag"}
PROTOCOLS = ["icmp", "tcp", "udp"]
FLAGS = ["OTH", "REJ", "RSTO", "RSTOS0", "RSTR", "S0", "S1", "S2", "S3", "SF", "SH"]


def parse(data: bytes, name: str) -> pd.DataFrame:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    frame = pd.read_csv(io.BytesIO(data), header=None, dtype=str)
    if frame.shape[1] != N_COLUMNS:
        raise UserError(f"{name} has {frame.shape[1]} columns, expected {N_COLUMNS}; it is not the KDD Cup 99 data.")
    return frame


def encode(frame: pd.DataFrame, categories: dict[int, list[str]] | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """One-hot the text columns (categories sorted, from the data unless given), keep the rest numeric.
    Label: 1 for an attack, 0 for 'normal.'."""
    blocks, names = [], []
    for col in range(N_COLUMNS - 1):
        if col in TEXT_COLUMNS:
            cats = (categories or {}).get(col) or sorted(frame[col].unique())
            blocks.append((frame[col].to_numpy()[:, None] == np.asarray(cats, dtype=object)[None, :]).astype(np.float64))
            names += [f"{TEXT_COLUMNS[col]}={c}" for c in cats]
        else:
            try:
                blocks.append(frame[col].astype(np.float64).to_numpy()[:, None])
            except ValueError:
                raise UserError(f"KDD Cup 99 column {col + 1} is not numeric; the file is not in the KDD Cup 99 format.") from None
            names.append(f"c{col + 1}")
    label = frame[N_COLUMNS - 1].str.rstrip(".").to_numpy()
    return np.concatenate(blocks, axis=1), (label != "normal").astype(np.int8), names


def synthetic(rows: int, rng: np.random.Generator) -> pd.DataFrame:
    services = [f"svc{i:02d}" for i in range(66)]
    attack = rng.random(rows) < 0.8
    cols = {}
    for col in range(N_COLUMNS - 1):
        if col == 1:
            cols[col] = np.where(attack, rng.choice(PROTOCOLS, rows, p=[0.6, 0.35, 0.05]), rng.choice(PROTOCOLS, rows, p=[0.05, 0.75, 0.2]))
        elif col == 2:
            cols[col] = rng.choice(services, rows, p=np.arange(66, 0, -1) / np.arange(66, 0, -1).sum())
        elif col == 3:
            weights = np.where(np.asarray(FLAGS) == "SF", 20.0, 1.0)
            cols[col] = np.where(attack & (rng.random(rows) < 0.3), "S0", rng.choice(FLAGS, rows, p=weights / weights.sum()))
        else:
            scale = rng.lognormal(0.0, 2.0)
            shift = np.where(attack, rng.normal(0, 1), rng.normal(0, 1))
            cols[col] = np.round(np.abs(rng.normal(shift, 1.0, rows)) * scale, 2).astype(str)
    cols[N_COLUMNS - 1] = np.where(attack, "smurf.", "normal.")
    return pd.DataFrame(cols)


class KddCup99(SplitDataset):
    name = "kddcup99"
    embedded_label = "embedded: synthetic KDD-Cup-99-like set, not the real data"

    def load(self, settings, files, rng):
        if settings.real:
            frame = parse(files["kddcup.data_10_percent.gz"].read_bytes(), "kddcup.data_10_percent.gz")
            origin = "KDD Cup 1999 kddcup.data_10_percent.gz"
        else:
            frame = synthetic(settings.synthetic_rows, rng)
            origin = f"embedded: synthetic KDD-Cup-99-like set, {settings.synthetic_rows} rows, 41 features (3 text)"
        x, y, names = encode(frame)
        return seeded_split(x, y, settings.test_fraction, rng), names, origin, {}
