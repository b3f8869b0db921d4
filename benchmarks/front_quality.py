"""Which optimiser finds the privacy-utility front best on the same budget? DPareto (the default config's
settings) beside the optimisers practitioners would otherwise use (Optuna TPE, Optuna's GPSampler,
BoTorch qLogNEHVI: `dptradeoff.peers`, configured as their documentation recommends) and random
sampling from the paper's Tables 3-4, on the same oracles, initial points and seeds.

For each problem and seed, 16 initial points are drawn from Tables 3-4 (SVT: its domain) and shared
by every method; each method then makes 48 sequential proposals (q = 1), each evaluated at once.
Common random numbers: an evaluation's replications are seeded by (seed, problem, the point), so two
methods proposing the same point see the same utilities (and the point is trained once). Problems at
the default config's scale (embedded data; R = 3 and epochs <= 16 on adult, R = 1 and epochs <= 4 on
MNIST) and SVT (R = 50, whose exact front the illustration grid gives).

Per metric (`dptradeoff.stats.front_metrics`: raw, log-epsilon, region, best error at epsilon <= 0.1,
0.3, 1, 3): each method's mean over seeds with a 95 % t interval, the paired difference DPareto -
method with its 95 % interval and two-sided p (paired t-test over seeds), and the optimiser's seconds
per proposal (median; no training). Also the share of proposals whose utility is within 0.01 of the
floor (the majority-class error; SVT: F1 0), per block of 16 rounds.

Results are cached per (problem, method, seed) in --work/front_quality/, so a killed run resumes and
subsets can run in parallel processes. Needs the default config's data in --work:
  ./in-env snakemake --cores 2 --directory DIR results/data/adult/train.parquet results/data/mnist/train.parquet
Run:  ./in-env python benchmarks/front_quality.py --work DIR [--problems ...] [--seeds 8] [--methods ...]
      [--summary-only]
Last line: region_hv_default_minus_best_peer=<paired mean over seeds> on adult LogReg+SGD (DPareto minus
the peer with the best mean region metric there).
"""
from __future__ import annotations

import argparse
import os
import time

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402
from scipy import stats  # noqa: E402

from dptradeoff.baselines.random_search import sample  # noqa: E402
from dataclasses import replace  # noqa: E402

from dptradeoff.bo.propose import Context, DPareto, Settings  # noqa: E402
from dptradeoff.peers import PEERS  # noqa: E402
from dptradeoff.problems import get_problem  # noqa: E402
from dptradeoff.problems.evaluate import evaluate, load_data  # noqa: E402
from dptradeoff.seeds import derive_seed, rng  # noqa: E402
from dptradeoff.stats.front_metrics import MetricSettings  # noqa: E402
from dptradeoff.stats.front_quality import FLOOR_MARGIN  # noqa: E402

K0, BLOCK = 16, 16
PROBLEMS = ["adult-logreg-sgd", "adult-logreg-adam", "mnist-mlp2-sgd", "svt"]
METHODS = ["dpareto", "optuna-tpe", "optuna-gp", "botorch", "random"]
# DPareto variants (the config's settings with these changed); `dpareto` is the config's default.
VARIANTS = {
    # Each differs from the config's default (`dpareto`: exact privacy, HVPoI in the region, full refits in
    # the first 16 rounds and every 16th) in the settings it names.
    "dpareto-previous": {"privacy_model": "gp", "acquisition": "hvpoi", "full_refits_first": 0},  # the previous default
    "dpareto-hvpoi": {"privacy_model": "gp", "acquisition": "hvpoi"},  # the paper's algorithm, this config's refits
    "dpareto-exact-hvpoi-region": {"full_refits_first": 0},            # no early full refits
    "dpareto-exact-hvpoi-region-refit1": {"refit_every": 1},           # full refits every round
    "dpareto-exact-ehvi-error": {"acquisition": "ehvi"},
    "dpareto-exact-ehvi-logit": {"acquisition": "ehvi-logit"},
    "dpareto-exact-ehvi-error-refit1": {"acquisition": "ehvi", "refit_every": 1},
    "dpareto-exact-hvpoi-region-replications": {"utility_noise": "replications"},
    "dpareto-exact-hvpoi-region-cap": {"utility_cap": "floor"},
    "dpareto-margin": {"floor_margin": 0.01},   # improvement counted from 0.01 below the floor
}
CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config", "config.yaml")


class Oracle:
    """A problem's oracles with common random numbers and a cache: one training per distinct point."""

    def __init__(self, problem, data, repeats: int, seed: int):
        self.problem, self.data, self.repeats, self.seed = problem, data, repeats, seed
        self.cache: dict[tuple, pd.DataFrame] = {}

    def __call__(self, points: pd.DataFrame) -> pd.DataFrame:
        rows = []
        for _, point in points[self.problem.names].iterrows():
            key = tuple(np.round(point.to_numpy(float), 12))
            if key not in self.cache:
                index = derive_seed(self.seed, "crn", *key) % 2**31   # the point's own replication seeds
                self.cache[key] = evaluate(self.problem, point.to_frame().T, self.data, self.repeats, self.seed, "crn",
                                           0, index)
            rows.append(self.cache[key])
        return pd.concat(rows, ignore_index=True)


def run_chain(method: str, problem, oracle: Oracle, initial: pd.DataFrame, settings: Settings, seed: int,
              rounds: int, context: Context) -> pd.DataFrame:
    """K0 + rounds evaluations of one method (its proposal seconds in `proposal_seconds`)."""
    if method == "random":
        points = sample(problem, K0 + rounds, rng(seed, problem.name, "front_quality", "initial"))
        return oracle(points).assign(proposal_seconds=0.0)
    if method == "dpareto":
        proposer = DPareto(settings)
    elif method in VARIANTS:
        proposer = DPareto(replace(settings, **VARIANTS[method]))
    else:
        proposer = PEERS[method]
    evals, previous = initial.assign(proposal_seconds=np.nan), None
    for r in range(rounds):
        points, record = proposer.round(problem, evals, 1, seed, 0, r, K0, previous, context=context)
        previous = record
        new = oracle(points[problem.names]).assign(proposal_seconds=float(points["proposal_seconds"].iloc[0]))
        evals = pd.concat([evals, new], ignore_index=True)
    return evals


def summarise(evals: pd.DataFrame, metric_settings: MetricSettings, floor: float) -> dict:
    """Every metric of the method's K0 + rounds evaluations, the share of proposals at the floor per block
    of BLOCK rounds, and the median optimiser seconds per proposal."""
    out = {}
    for metric in metric_settings.metrics(floor):
        out[metric.name] = metric.value(evals["epsilon"], evals["error"])
    after = evals.iloc[K0:]
    for block in range(-(-len(after) // BLOCK)):
        part = after.iloc[block * BLOCK:(block + 1) * BLOCK]
        out[f"at_floor_rounds_{block * BLOCK}_{(block + 1) * BLOCK - 1}"] = float(np.mean(part["error"] >= floor - FLOOR_MARGIN))
    out["seconds_per_proposal"] = float(after["proposal_seconds"].median())
    return out


def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """Mean of a - b over seeds, its 95 % t interval, two-sided p of the paired t-test (NaN when every
    difference is equal: no spread to test against)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if len(d) < 2 or np.all(d == d[0]):
        return float(d.mean()), float(d.mean()), float(d.mean()), float("nan")
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half), float(stats.ttest_1samp(d, 0.0).pvalue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--problems", nargs="+", default=PROBLEMS)
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=48, help="proposals after the 16 initial points")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--summary-only", action="store_true", help="only summarise what --work holds")
    args = parser.parse_args()
    os.chdir(args.work)
    os.makedirs("front_quality", exist_ok=True)
    config = yaml.safe_load(open(CONFIG))
    settings = Settings.from_config(config["dpareto"], config["statistics"])
    metric_settings = MetricSettings.from_config(config["statistics"])
    rows = []
    for name in args.problems:
        problem_config = config["problems"].get(name, {})
        problem = get_problem(name, problem_config.get("ranges"))
        data = load_data(problem)
        floor = problem.error_floor(data)
        context = Context(data.n_train if data is not None else None, floor)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            oracle = Oracle(problem, data, problem_config.get("repeats", problem.default_repeats), seed)
            initial = None
            for method in args.methods:
                path = f"front_quality/{name}_{method}_{seed}_r{args.rounds}.parquet"
                if not os.path.exists(path):
                    if args.summary_only:
                        continue
                    if initial is None:
                        initial = oracle(sample(problem, K0, rng(seed, name, "front_quality", "initial")))
                    start = time.perf_counter()
                    evals = run_chain(method, problem, oracle, initial, settings, seed, args.rounds, context)
                    evals.to_parquet(path + ".tmp")
                    os.replace(path + ".tmp", path)
                    print(f"{name} seed {seed} {method}: {time.perf_counter() - start:.0f} s", flush=True)
                evals = pd.read_parquet(path)
                rows.append({"problem": name, "method": method, "seed": seed, "floor": floor,
                             **summarise(evals, metric_settings, floor)})
    table = pd.DataFrame(rows)
    table.to_csv("front_quality/per_seed.csv", index=False)
    report(table, metric_settings, args.rounds)
    compact_report(table)
    check_targets(table, metric_settings)


def check_targets(table: pd.DataFrame, metric_settings: MetricSettings) -> None:
    """Issue ACQ's comparisons, per problem: a peer better than DPareto (p < 0.05) on `region` or at a
    best-error level; DPareto better than the best peer on `region`; DPareto worse than the previous
    default (`dpareto-previous`) on `raw` or `log-epsilon` (p < 0.05)."""
    print("\n### Targets\n")
    levels = [m.name for m in metric_settings.metrics(0.5) if m.name.startswith("best-error")]
    for name, group in table.groupby("problem", sort=False):
        wide = {m: g.set_index("seed") for m, g in group.groupby("method", sort=False)}
        if "dpareto" not in wide:
            continue
        default = wide["dpareto"]

        def diff(method, metric):
            seeds = default.index.intersection(wide[method].index)
            return paired(default.loc[seeds, metric].to_numpy(float), wide[method].loc[seeds, metric].to_numpy(float))

        peers = [m for m in wide if m in PEERS or m == "random"]
        lines = []
        for peer in peers:
            mean, _, _, p = diff(peer, "region")
            if mean < 0 and p < 0.05:
                lines.append(f"{peer} better on region by {-mean:.4f} (p = {p:.2g})")
            for level in levels:
                mean, _, _, p = diff(peer, level)
                if mean > 0 and p < 0.05:   # a lower best error is better
                    lines.append(f"{peer} reaches a lower {level} by {mean:.4f} (p = {p:.2g})")
        if peers:
            best = max(peers, key=lambda m: wide[m]["region"].mean())
            mean, _, _, p = diff(best, "region")
            lines.append(f"best peer on region: {best}; DPareto − it {mean:+.4f} (p = {p:.2g}): "
                         + ("better" if mean > 0 and p < 0.05 else "not shown better"))
        if "dpareto-previous" in wide:
            for metric in ("raw", "log-epsilon"):
                mean, _, _, p = diff("dpareto-previous", metric)
                verdict = "worse" if mean < 0 and p < 0.05 else "not worse"
                lines.append(f"{metric} against the previous default: {mean:+.4f} (p = {p:.2g}), {verdict}")
        print(f"- **{name}**: " + "; ".join(lines))


def compact_report(table: pd.DataFrame, metric: str = "region") -> None:
    """Per problem, one row per method: its seeds, mean ± 95 % half-width on `metric`, the paired
    difference DPareto − it over the seeds both have (95 % interval, p), the share of proposals at
    the floor per block of rounds, and the median seconds per proposal."""
    for name, group in table.groupby("problem", sort=False):
        default = group[group["method"] == "dpareto"].set_index("seed")[metric]
        blocks = [c for c in group.columns if c.startswith("at_floor")]
        print(f"\n### {name}, {metric}\n")
        print(f"| method | seeds | {metric} | DPareto − it (95 % CI), p | at the floor, rounds "
              + " / ".join(c.removeprefix("at_floor_rounds_").replace("_", "–") for c in blocks) + " | s per proposal |")
        print("|---|---|---|---|---|---|")
        for method, g in group.groupby("method", sort=False):
            v = g.set_index("seed")[metric]
            half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan
            if method == "dpareto":
                diff = "—"
            else:
                seeds = default.index.intersection(v.index)
                mean, lo, hi, p = paired(default[seeds].to_numpy(), v[seeds].to_numpy())
                diff = f"{mean:+.4f} ({lo:+.4f}, {hi:+.4f}), p = {p:.2g}" + ("" if len(seeds) == len(v) else f" ({len(seeds)} seeds)")
            floors = " / ".join(f"{g[c].mean():.2f}" for c in blocks)
            print(f"| {method} | {len(v)} | {v.mean():.4f} ± {half:.4f} | {diff} | {floors} | "
                  f"{g['seconds_per_proposal'].median():.3g} |")


def report(table: pd.DataFrame, metric_settings: MetricSettings, rounds: int) -> None:
    metric_names = [m.name for m in metric_settings.metrics(0.5)]
    lines = []
    for name, group in table.groupby("problem", sort=False):
        wide = {m: g.set_index("seed") for m, g in group.groupby("method", sort=False)}
        seeds = sorted(set.intersection(*(set(g.index) for g in wide.values())))
        print(f"\n## {name}: {len(seeds)} seeds, {K0} + {rounds} evaluations")
        print("| metric | " + " | ".join(wide) + " |")
        print("|---|" + "---|" * len(wide))
        for metric in metric_names:
            cells = []
            for method, g in wide.items():
                v = g.loc[seeds, metric].to_numpy(float)
                if method == "dpareto" or "dpareto" not in wide:
                    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan
                    cells.append(f"{v.mean():.4f} ± {half:.4f}")
                else:
                    mean, lo, hi, p = paired(wide["dpareto"].loc[seeds, metric].to_numpy(float), v)
                    cells.append(f"{v.mean():.4f}; DPareto − it {mean:+.4f} ({lo:+.4f}, {hi:+.4f}) p={p:.2g}")
                    lines.append({"problem": name, "metric": metric, "method": method, "difference": mean, "p": p})
            print(f"| {metric} | " + " | ".join(cells) + " |")
        for column in [c for c in group.columns if c.startswith("at_floor")] + ["seconds_per_proposal"]:
            print(f"| {column} | " + " | ".join(f"{g.loc[seeds, column].mean():.3g}" for g in wide.values()) + " |")
    pd.DataFrame(lines).to_csv("front_quality/paired.csv", index=False)
    adult = table[table["problem"] == "adult-logreg-sgd"]
    peers = [m for m in adult["method"].unique() if m in PEERS]
    if "dpareto" in set(adult["method"]) and peers:
        best = max(peers, key=lambda m: adult.loc[adult["method"] == m, "region"].mean())
        d = adult[adult["method"] == "dpareto"].set_index("seed")["region"]
        b = adult[adult["method"] == best].set_index("seed")["region"]
        seeds = d.index.intersection(b.index)
        mean, lo, hi, p = paired(d[seeds].to_numpy(), b[seeds].to_numpy())
        print(f"\nbest peer on adult-logreg-sgd (region): {best}; DPareto - it {mean:+.4f} ({lo:+.4f}, {hi:+.4f}), "
              f"p = {p:.3g}, {len(seeds)} seeds")
        print(f"region_hv_default_minus_best_peer={mean:.4f}")


if __name__ == "__main__":
    main()
