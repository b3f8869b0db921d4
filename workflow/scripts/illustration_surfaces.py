from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.bo.propose import Settings, propose  # noqa: E402
from dptradeoff.bo.surfaces import surfaces  # noqa: E402
from dptradeoff.io import read_provenance  # noqa: E402
from dptradeoff.problems import get_problem  # noqa: E402
from dptradeoff.problems.tables import read_frame, write_frame  # noqa: E402
from dptradeoff.seeds import rng  # noqa: E402

with rule_context(snakemake):
    p = snakemake.params
    problem = get_problem(p.problem)
    evals = read_frame(snakemake.input[0])
    settings = Settings(candidates=p.candidates, gp_restarts=p.gp_restarts, reference=p.reference)
    meta = {**read_provenance(snakemake.input[0]), "observed": len(evals), "settings": settings.__dict__}
    write_frame(surfaces(problem, evals, p.resolution, settings, rng(p.seed, p.problem, "surfaces")), snakemake.output.surfaces, meta)
    write_frame(propose(problem, evals, 1, settings, rng(p.seed, p.problem, "surfaces", "next")).points, snakemake.output.next_point, meta)
