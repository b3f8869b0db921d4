"""A pure epsilon-DP mean, as a user brings it: clamp each value of one column of their own data to
[lower, upper], take the mean over the n rows, add Laplace noise of scale `scale`.

Privacy (replace-one neighbours, n public): the clamped mean's sensitivity is (upper - lower) / n, so the
Laplace mechanism is epsilon-DP with epsilon = (upper - lower) / (n scale), for every delta.
Utility: 1 - |released - true mean| / 100 (at least 0), the true mean the column's, unclamped.
Its expectation has a closed form (`expected_utility`): with b the clamping bias and s the scale,
E|b + Laplace(s)| = |b| + s exp(-|b| / s). So the exact front is known (`exact_front`), and a benchmark can
measure how near a search comes to it (benchmarks/query_coverage.py).

The noise is the pipeline's exact Laplace on a grid (`dptradeoff.exact_noise`), drawn from the `rng` it is
handed: the seeded one in a study, the cryptographic one in a release under `release.randomness: os`. The
released number is then exactly the Laplace mechanism's, rounded to the grid (numpy's `rng.laplace` is not:
its floating-point outputs can reveal the mean, Mironov 2012), and its epsilon is the one stated. A library
with its own secure noise (OpenDP's, say) would set `seedable = False`: its rows replay in distribution, not
bit for bit (docs/your-algorithm.md).

The column here is Adult's ages (config/examples/laplace-mean.yaml); write them as a CSV of your own with
    ./in-env python examples/laplace_mean.py data/ages.csv
"""
from __future__ import annotations

import numpy as np

from dptradeoff import exact_noise
from dptradeoff.problems.oracle import Data, Oracle


class ClampedLaplaceMean(Oracle):
    neighbouring = "replace-one"
    utility_description = "1 - |error|/100"

    def __init__(self, column: int = 0, csv: str | None = None, csv_column: str = "age"):
        """`column`: the feature column of the problem's dataset; or, for a problem without one, `csv`: a CSV
        file of the user's whose column `csv_column` is the data."""
        self.column = column
        self.own = None
        if csv is not None:
            import pandas as pd

            self.own = pd.read_csv(csv)[csv_column].to_numpy(float)
            self.own_data = f"{csv}, column {csv_column} ({len(self.own)} rows)"

    def prepare(self, data: Data) -> Data:
        """The one column, train and test alike (the test rows are not used)."""
        pick = lambda x: np.asarray(x, dtype=float)[:, [self.column]]  # noqa: E731
        return Data(pick(data.x_train), data.y_train, pick(data.x_test), data.y_test, data.source, data.source_label)

    def _values(self, data: Data | None) -> np.ndarray:
        return data.x_train[:, 0] if data is not None else self.own

    def epsilon(self, point, *, n, delta):
        n = n if n is not None else len(self.own)
        return (point["upper"] - point["lower"]) / (n * point["scale"])

    @staticmethod
    def released_mean(point, values: np.ndarray, rng) -> float:
        """The clamped mean plus Laplace noise of scale `scale`, sampled exactly on a grid (module doc)."""
        lower, upper = point["lower"], point["upper"]
        grid = exact_noise.laplace(point["scale"], (upper - lower) / len(values), 1, max(abs(lower), abs(upper)))
        return float(grid.release(np.array([np.clip(values, lower, upper).mean()]), rng)[0])

    def utility(self, point, data, rng):
        values = self._values(data)
        return float(max(0.0, 1.0 - abs(self.released_mean(point, values, rng) - values.mean()) / 100.0))

    # A release of the mean (docs/release.md): the "model" is the released number, scored against the true
    # mean of the rows it is scored on (values clamped to [0, 100], so one row moves the score by <= 1/rows).
    def event(self, point, *, n):
        from dptradeoff.privacy.events import EpsilonDpEvent

        return EpsilonDpEvent(self.epsilon(point, n=n, delta=0.0))

    def calibrate(self, point, *, n, epsilon, delta):
        n = n if n is not None else len(self.own)
        return {**point, "scale": (point["upper"] - point["lower"]) / (n * epsilon)}

    def train(self, point, data, rng):
        return self.released_mean(point, self._values(data), rng)

    def score(self, model, data):
        truth = np.clip(np.asarray(data.x_test, dtype=float)[:, 0], 0.0, 100.0).mean()
        return float(max(0.0, 1.0 - abs(model - truth) / 100.0))

    def weights(self, model):
        return {"mean": np.array([model])}

    @staticmethod
    def expected_utility(point, values: np.ndarray) -> float:
        """E[utility] in closed form (the floor at 0 ignored: P(|noise| > 100) <= exp(-10) in the domain)."""
        bias = abs(np.clip(values, point["lower"], point["upper"]).mean() - values.mean())
        scale = point["scale"]
        return float(1.0 - (bias + scale * np.exp(-bias / scale)) / 100.0)


def exact_front(values: np.ndarray, epsilons: np.ndarray, scale=(1e-3, 10.0), lower=(0.0, 35.0), upper=(40.0, 120.0),
                step: float = 0.25) -> np.ndarray:
    """The best expected utility at each epsilon of `epsilons` over the domain (bounds on a `step` grid, the
    scale that spends exactly epsilon, clipped to its range): the exact front, by the closed form."""
    values = np.sort(np.asarray(values, dtype=float))
    n, mean = len(values), values.mean()
    cumulative = np.concatenate([[0.0], np.cumsum(values)])
    lows = np.arange(lower[0], lower[1] + step / 2, step)
    highs = np.arange(upper[0], upper[1] + step / 2, step)
    lo, hi = np.meshgrid(lows, highs, indexing="ij")
    # the clamped mean of sorted values, from prefix sums
    below, above = np.searchsorted(values, lo, "left"), np.searchsorted(values, hi, "right")
    clamped = (lo * below + (cumulative[above] - cumulative[below]) + hi * (n - above)) / n
    bias = np.abs(clamped - mean)
    best = np.empty(len(epsilons))
    for i, eps in enumerate(epsilons):
        s = np.clip((hi - lo) / (n * eps), *scale)
        feasible = (hi - lo) / (n * s) <= eps * (1 + 1e-12)
        utility = 1.0 - (bias + s * np.exp(-bias / s)) / 100.0
        best[i] = utility[feasible].max() if feasible.any() else np.nan
    return best


def reach_probability(bias, scale, tolerance):
    """P(|bias + Laplace(scale)| <= tolerance): the probability that one release's |error| is within `tolerance`
    (utility >= 1 - tolerance / 100), elementwise."""
    b, s, t = np.abs(np.asarray(bias, dtype=float)), np.asarray(scale, dtype=float), float(tolerance)
    with np.errstate(over="ignore"):
        inside = 1.0 - 0.5 * np.exp(-(t - b) / s) - 0.5 * np.exp(-(t + b) / s)
        outside = 0.5 * (np.exp(-(b - t) / s) - np.exp(-(b + t) / s))
    return np.where(b < t, inside, outside)


def least_epsilon_reaching(values: np.ndarray, target: float, probability: float, scale=(1e-3, 10.0),
                           lower=(0.0, 35.0), upper=(40.0, 120.0), step: float = 0.25) -> float:
    """The smallest epsilon at which ONE release reaches utility `target` with `probability` or more, over the
    domain (bounds on a `step` grid; for each, the largest scale that still reaches it, by bisection in log scale:
    the probability falls as the scale grows where the bias is inside the tolerance), by the closed form."""
    values = np.sort(np.asarray(values, dtype=float))
    n, mean = len(values), values.mean()
    cumulative = np.concatenate([[0.0], np.cumsum(values)])
    lo, hi = (a.ravel() for a in np.meshgrid(np.arange(lower[0], lower[1] + step / 2, step),
                                             np.arange(upper[0], upper[1] + step / 2, step), indexing="ij"))
    below, above = np.searchsorted(values, lo, "left"), np.searchsorted(values, hi, "right")
    bias = (lo * below + (cumulative[above] - cumulative[below]) + hi * (n - above)) / n - mean
    tolerance = 100.0 * (1.0 - target)
    small, large = np.full(len(lo), np.log(scale[0])), np.full(len(lo), np.log(scale[1]))
    feasible = reach_probability(bias, scale[0], tolerance) >= probability
    for _ in range(60):   # the largest log scale with probability >= `probability`
        middle = (small + large) / 2
        reaches = reach_probability(bias, np.exp(middle), tolerance) >= probability
        small, large = np.where(reaches, middle, small), np.where(reaches, large, middle)
    epsilon = (hi - lo) / (n * np.exp(small))
    return float(epsilon[feasible].min()) if feasible.any() else float("inf")


def main(argv: list[str] | None = None) -> None:
    """Write the ages of the embedded adult.data's 32,561 people, in years, as a one-column CSV."""
    import argparse
    import os
    import sys

    import pandas as pd

    from dptradeoff.io import atomic_path

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("out", help="the CSV to write, e.g. data/ages.csv")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from adult_income_csv import adult_people

    ages = pd.DataFrame({"age": adult_people()["age"].astype(int)})
    with atomic_path(args.out) as tmp:
        ages.to_csv(tmp, index=False)
    print(f"wrote {args.out}: {len(ages)} ages, mean {ages['age'].mean():.2f}")


if __name__ == "__main__":
    main()
