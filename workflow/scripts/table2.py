from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.stats.ttest import table2
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p = snakemake.params
    runs = {}
    for problem, bo_path, random_path in zip(p.problems, snakemake.input.bo, snakemake.input.comparison):
        runs[problem] = (read_frame(bo_path), read_frame(random_path))
    frame = table2(runs, p.part_size, p.parts)
    sources = sorted(set(s for bo, rnd in runs.values() for s in bo["source_label"]))
    note = (f"Hypervolume differences DPareto - random over {p.parts} random parts of {p.part_size} points each "
            f"(DPareto: its whole chain, initial + BO points), anti-ideal point (epsilon 10, error 1); two-sided 95% CI; "
            f"one-sample t-test of the mean difference; * p<0.05, ** p<0.01, *** p<0.001. Paper 001's Table 2 "
            f"(mean, 95% CI, all p<0.001) beside ours. "
            f"Data: {'; '.join(sources)}. Config: {p.config_label}.")
    write(frame, snakemake.output.csv, snakemake.output.md, note)
