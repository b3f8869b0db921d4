import pandas as pd

from dptradeoff.plots.dpareto import fig_cost
from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import error_floor
from dptradeoff.problems.tables import read_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, i = snakemake.params, snakemake.input
    # method -> problem -> evaluations, for the problems that run the method only (dptradeoff.study)
    methods = {method: {problem: read_frame(f) for problem, f in files.items()} for method, files in p.evaluations.items()}
    # a derived region: every method's evaluations of the problem pooled (one region for all of them)
    metrics = {problem: p.metrics.metrics(error_floor(resolve(problem, p.definitions[problem]), p.utility_floors[problem]),
                                          problem, pd.concat([f[problem] for f in methods.values() if problem in f]))
               for problem in p.problems}
    fig_cost(methods, metrics, snakemake.output[0], p.config_label)
