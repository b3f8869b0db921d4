from dptradeoff.workflow_support import job_seconds, limit_threads, rule_context

limit_threads(snakemake.threads)

import pandas as pd  # noqa: E402

from dptradeoff.bo.propose import Settings, propose  # noqa: E402
from dptradeoff.problems import get_problem  # noqa: E402
from dptradeoff.problems.tables import read_frame, write_frame  # noqa: E402
from dptradeoff.seeds import rng  # noqa: E402

with rule_context(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    problem = get_problem(w.problem, p.ranges)
    evals = pd.concat([read_frame(snakemake.input.initial)] + [read_frame(f) for f in snakemake.input.evals], ignore_index=True)
    settings = Settings(candidates=p.candidates, gp_restarts=p.gp_restarts, reference=p.reference)
    proposal = propose(problem, evals, p.batch_size, settings, rng(p.seed, w.problem, "dpareto", w.run, w.round))
    proposal.insert(0, "round", int(w.round))
    proposal["job_seconds"] = job_seconds()  # the whole job so far, interpreter start-up included
    write_frame(proposal, snakemake.output[0], {"problem": w.problem, "method": "dpareto", "run": int(w.run),
                                                "round": int(w.round), "observed": len(evals), "settings": settings.__dict__})
