from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.bo.fresh_front import run_rule  # noqa: E402
from dptradeoff.problems import resolve  # noqa: E402
from dptradeoff.problems.evaluate import load_data  # noqa: E402
from dptradeoff.problems.tables import read_frame  # noqa: E402
from dptradeoff.study import every_point  # noqa: E402

with rule_context(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    problem = resolve(w.problem, p.problem, p.conversion)
    evaluations = every_point({method: read_frame(path) for method, path in p.evaluations.items()})
    run_rule(problem, evaluations, load_data(problem), int(p.repeats), int(p.seed), snakemake.output[0])
