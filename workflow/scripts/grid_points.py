from dptradeoff.baselines.grid import grid
from dptradeoff.problems import resolve
from dptradeoff.problems.tables import write_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    w = snakemake.wildcards
    points = grid(resolve(w.problem, snakemake.params.problem), int(w.k), snakemake.params.spacing)
    write_frame(points, snakemake.output[0], {"problem": w.problem, "method": f"grid{w.k}", "definition": snakemake.params.problem,
                                              "spacing": snakemake.params.spacing})
