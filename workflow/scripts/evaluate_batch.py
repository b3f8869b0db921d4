from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.problems import get_problem  # noqa: E402
from dptradeoff.problems.evaluate import evaluate, load_data  # noqa: E402
from dptradeoff.problems.tables import read_frame, write_frame  # noqa: E402

with rule_context(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    problem = get_problem(w.problem, p.ranges)
    first = int(w.batch) * p.points_per_job
    points = read_frame(snakemake.input.points).iloc[first:first + p.points_per_job]
    data = load_data(problem)
    rows = evaluate(problem, points, data, p.repeats, p.seed, w.method, int(w.run), first, p.conversion)
    write_frame(rows, snakemake.output[0], {"problem": w.problem, "method": w.method, "run": int(w.run),
                                            "ranges": p.ranges, "repeats": p.repeats, "seed": p.seed,
                                            "source_label": data.source_label if data else "svt: simulated queries"})
