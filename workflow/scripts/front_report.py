from dptradeoff.plots.front import front_figure, front_table
from dptradeoff.problems import resolve
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    w, p, i = snakemake.wildcards, snakemake.params, snakemake.input
    problem = resolve(w.problem, p.problem)
    evaluations = {method: read_frame(i[method]) for method in p.methods}
    queries = [read_frame(path) for path in i.queries]
    front_figure(w.problem, problem.utility, evaluations, queries, snakemake.output.figure, p.config_label)
    write(front_table(problem, evaluations, queries), snakemake.output.csv, snakemake.output.md,
          f"{w.problem}: the front of every evaluated point (epsilon exact, utility the mean of the measured "
          f"replications), then the query answers (predicted_utility: GP prediction, not a guarantee; utility: "
          f"measured by training the suggestion). Config: {p.config_label}.")
