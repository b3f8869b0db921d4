"""Adult (census income) in LIBSVM's a9a encoding: 123 binary features (Platt 1998).

Continuous fields are binned (age, fnlwgt, education-num, hours-per-week into five bins;
capital-gain and capital-loss into zero / non-zero), categorical fields are one-hot in the
order of adult.names, and a missing value `?` leaves its block all zero.
5+8+5+16+5+7+14+6+5+2+2+2+5+41 = 123 features. LIBSVM does not publish its cut points; ours
were checked against LIBSVM's a9a file, whose rows are adult.data's in order: every block
matches, the hours-per-week edges being recovered from a9a itself ([1, 34], [35, 39], [40],
[41, 47], [48, 99]; quintiles of adult.data would put the last edge at 50).

`a1a_split` is LIBSVM's a1a / a1a.t split of adult.data, which DPareto's original code used
(train on a1a.t, 30,956 rows; test on a1a, 1,605 rows: the paper's "40k (1.6k)").
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from .. import UserError
from .dataset import DatasetSettings, SplitDataset, seeded_split
from .embedded import ADULT_MEMBER, ADULT_WHEEL, WHEELS, read_member

COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
]

CATEGORIES = {
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                  "Without-pay", "Never-worked"],
    "education": ["Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
                  "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool"],
    "marital-status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial", "Prof-specialty",
                   "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing", "Transport-moving",
                   "Priv-house-serv", "Protective-serv", "Armed-Forces"],
    "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native-country": ["United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
                       "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba", "Iran",
                       "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal",
                       "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia",
                       "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador",
                       "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"],
}

# Right edges (exclusive) of the bins: value < edge[0] -> bin 0, ... (np.digitize, right=False).
BINS = {
    "age": [26, 33, 41, 50],
    "fnlwgt": [106648, 158662, 196338, 259873],
    "education-num": [9, 10, 11, 13],
    "capital-gain": [1],
    "capital-loss": [1],
    "hours-per-week": [35, 40, 41, 48],
}
ADULT_DATA_ROWS = 32561
A1A_TEST_ROWS = Path(__file__).with_name("a1a_test_rows.txt")  # 0-based rows of adult.data in LIBSVM's a1a

ORDER = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
         "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]


def feature_names() -> list[str]:
    names = []
    for col in ORDER:
        if col in BINS:
            edges = BINS[col]
            lows = ["-inf"] + [str(e) for e in edges]
            highs = [str(e) for e in edges] + ["inf"]
            names += [f"{col}[{lo},{hi})" for lo, hi in zip(lows, highs)]
        else:
            names += [f"{col}={c}" for c in CATEGORIES[col]]
    return names


def encode(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Raw Adult rows (the 15 named columns, strings stripped) -> (x uint8 [n,123], y {0,1})."""
    blocks = []
    for col in ORDER:
        if col in BINS:
            values = pd.to_numeric(frame[col], errors="raise").to_numpy()
            idx = np.digitize(values, BINS[col])
            block = np.zeros((len(frame), len(BINS[col]) + 1), dtype=np.uint8)
            block[np.arange(len(frame)), idx] = 1
        else:
            cats = CATEGORIES[col]
            values = frame[col].to_numpy()
            unknown = set(values) - set(cats) - {"?"}
            if unknown:
                raise UserError(f"Adult column {col!r} has unknown value(s) {sorted(unknown)[:3]}; the file is not in the UCI adult format.")
            block = (values[:, None] == np.asarray(cats, dtype=object)[None, :]).astype(np.uint8)
        blocks.append(block)
    x = np.concatenate(blocks, axis=1)
    income = frame["income"].str.rstrip(".").to_numpy()
    bad = set(income) - {"<=50K", ">50K"}
    if bad:
        raise UserError(f"Adult labels {sorted(bad)[:3]} are neither '<=50K' nor '>50K'; the file is not in the UCI adult format.")
    return x, (income == ">50K").astype(np.int8)


def a1a_split(n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) row indices of adult.data as LIBSVM's a1a.t (train) and a1a (test)."""
    if n_rows != ADULT_DATA_ROWS:
        raise UserError(f"The a1a split needs adult.data's {ADULT_DATA_ROWS:,} rows in file order, but the file has "
                        f"{n_rows:,}; use datasets.adult.split: random for another file.")
    test = np.loadtxt(A1A_TEST_ROWS, dtype=np.int64, comments="#")
    train = np.setdiff1d(np.arange(n_rows), test)
    return train, test


def parse_uci(text: str) -> pd.DataFrame:
    """Parse adult.data or adult.test: no header, ', ' separators; adult.test has a `|1x3 Cross validator`
    first line and labels ending in '.'; blank lines are skipped."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("|")]
    frame = pd.read_csv(io.StringIO("\n".join(lines)), header=None, names=COLUMNS, sep=",",
                        skipinitialspace=True, dtype=str)
    return _strip(frame)


def parse_fairness_csv(text: str) -> pd.DataFrame:
    """Parse `fairness/data/raw/adult.csv` (adult.data with a header row and ',' separators)."""
    frame = pd.read_csv(io.StringIO(text), dtype=str, skipinitialspace=True)
    if len(frame.columns) != len(COLUMNS):
        raise UserError(f"The embedded adult.csv has {len(frame.columns)} columns, expected {len(COLUMNS)}; the wheel is not fairness==0.1.8.")
    frame.columns = COLUMNS
    return _strip(frame)


def _strip(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.isna().any().any():
        row = int(frame.isna().any(axis=1).to_numpy().argmax())
        raise UserError(f"Adult row {row + 1} has too few fields; the file is truncated or not in the UCI adult format.")
    return frame.apply(lambda c: c.str.strip())


SPLITS = {"uci": "UCI train/test files", "a1a": "LIBSVM's a1a split (train a1a.t, test a1a)",
          "random": "own seeded train/test split"}   # datasets.adult.split: what the label says of each


class Adult(SplitDataset):
    name = "adult"
    embedded_wheel = ADULT_WHEEL
    embedded_label = "embedded: real adult.data rows (fairness wheel)"

    def split(self, settings: DatasetSettings) -> str:
        """`datasets.adult.split`: uci (adult.data / adult.test, real files only), a1a (LIBSVM's a1a.t /
        a1a rows of adult.data, as DPareto's original code) or random (seeded, `test_fraction`).
        Default: uci for the real files, random for the embedded adult.data."""
        split = settings.split or ("uci" if settings.real else "random")
        if split not in SPLITS:
            raise UserError(f"datasets.adult.split is {split!r}; use one of {', '.join(SPLITS)}.")
        if split == "uci" and not settings.real:
            raise UserError("datasets.adult.split: uci needs the real adult.test file; use source: real, or split: a1a or random.")
        return split

    def label(self, settings):
        return f"{super().label(settings)}, {SPLITS[self.split(settings)]}"

    def load(self, settings, files, rng):
        split = self.split(settings)
        if settings.real:
            frame, where = parse_uci(files["adult.data"].read_text()), "UCI adult.data"
            if split == "uci":
                test = parse_uci(files["adult.test"].read_text())
                return {"train": encode(frame), "test": encode(test)}, feature_names(), "UCI adult.data / adult.test", {}
        else:
            frame = parse_fairness_csv(read_member(files[ADULT_WHEEL], ADULT_MEMBER).decode())
            where = f"embedded: {WHEELS[ADULT_WHEEL]['requirement']} wheel, {ADULT_MEMBER} (adult.data)"
        x, y = encode(frame)
        if split == "a1a":
            train, test = a1a_split(len(y))
            parts = {"train": (x[train], y[train]), "test": (x[test], y[test])}
            origin = f"{where}, LIBSVM's a1a split (train a1a.t, test a1a)"
        else:
            parts = seeded_split(x, y, settings.test_fraction, rng)
            origin = f"{where}, seeded split with test fraction {settings.test_fraction}"
        return parts, feature_names(), origin, {"adult_split": split}
