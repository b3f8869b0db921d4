import pandas as pd

from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import error_floor
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.stats.ttest import table2
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p = snakemake.params
    runs, metrics, floors = {}, {}, {}
    for problem, bo_path, random_path in zip(p.problems, snakemake.input.dpareto, snakemake.input.comparison):
        runs[problem] = (read_frame(bo_path), read_frame(random_path))
        floors[problem] = error_floor(resolve(problem, p.definitions[problem]), p.utility_floors[problem])
        metrics[problem] = p.metrics.metrics(floors[problem], problem, pd.concat(runs[problem], ignore_index=True))
    frame = table2(runs, p.part_size, p.parts, metrics, floors)
    sources = sorted(set(s for bo, rnd in runs.values() for s in bo["source_label"]))
    labels = "; ".join(dict.fromkeys(f"{m}: {label}" for m, label in zip(frame["metric"], frame["metric_label"])))
    note = (f"Front-quality differences DPareto - random over {p.parts} random parts of {p.part_size} points each "
            f"(DPareto: its whole chain, initial + BO points), one row per problem and metric ({labels}); "
            f"two-sided 95% CI; one-sample t-test of the mean difference; * p<0.05, ** p<0.01, *** p<0.001; each "
            f"difference split into what the points better than the error floor (majority class) earn and what the "
            f"points at or above it add. Paper 001's Table 2 (mean, 95% CI, all p<0.001; the paper's stated metric is "
            f"raw) and the spread across its 19 parts that its CI implies beside every metric. "
            f"Data: {'; '.join(sources)}. Config: {p.config_label}.")
    write(frame.drop(columns=["metric_label"]), snakemake.output.csv, snakemake.output.md, note)
