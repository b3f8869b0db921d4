from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.bo.propose import Settings  # noqa: E402
from dptradeoff.bo.surfaces import surfaces  # noqa: E402
from dptradeoff.io import read_provenance  # noqa: E402
from dptradeoff.problems import get_problem  # noqa: E402
from dptradeoff.problems.tables import read_frame, write_frame  # noqa: E402
from dptradeoff.seeds import rng  # noqa: E402

with rule_context(snakemake):
    p = snakemake.params
    problem = get_problem(p.problem)
    evals = read_frame(snakemake.input[0])
    settings = Settings(candidates=p.candidates, gp_restarts=p.gp_restarts, reference=p.reference, inputs=p.inputs)
    meta = {**read_provenance(snakemake.input[0]), "observed": len(evals), "settings": settings.__dict__}
    # The surfaces and the next point (the figure's star) come from one GP fit.
    surface, next_point = surfaces(problem, evals, p.resolution, settings, rng(p.seed, p.problem, "surfaces"))
    write_frame(surface, snakemake.output.surfaces, meta)
    write_frame(next_point, snakemake.output.next_point, meta)
