from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.problems import get_problem  # noqa: E402
from dptradeoff.problems.evaluate import evaluate, load_data, source_label  # noqa: E402
from dptradeoff.problems.tables import read_frame, write_frame  # noqa: E402

with rule_context(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    problem = get_problem(p.problem).with_conversion(p.conversion)
    data = load_data(problem)
    rows = evaluate(problem, read_frame(snakemake.input.points), data, p.repeats, p.seed, f"illustration-{w.design}", 0)
    write_frame(rows, snakemake.output[0], {"problem": p.problem, "design": w.design, "repeats": p.repeats,
                                            "source_label": source_label(problem, data)})
