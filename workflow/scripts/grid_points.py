from dptradeoff.baselines.grid import grid
from dptradeoff.problems import get_problem
from dptradeoff.problems.tables import write_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    w = snakemake.wildcards
    points = grid(get_problem(w.problem, snakemake.params.ranges), int(w.k), snakemake.params.spacing)
    write_frame(points, snakemake.output[0], {"problem": w.problem, "method": f"grid{w.k}", "ranges": snakemake.params.ranges,
                                              "spacing": snakemake.params.spacing})
