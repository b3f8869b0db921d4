from dptradeoff.workflow_support import job_seconds, limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.problems import get_problem  # noqa: E402
from dptradeoff.problems.evaluate import evaluate, load_data  # noqa: E402
from dptradeoff.problems.tables import read_frame, write_frame  # noqa: E402

with rule_context(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    problem = get_problem(w.problem, p.ranges)
    i = int(w.i)
    proposal = read_frame(snakemake.input.proposal)
    point = proposal.iloc[[i % p.batch_size]][problem.names]
    data = load_data(problem)
    rows = evaluate(problem, point, data, p.repeats, p.seed, "dpareto", int(w.run), p.initial_points + i, p.conversion)
    rows["round"] = int(proposal["round"].iloc[0])
    rows["job_seconds"] = job_seconds()
    write_frame(rows, snakemake.output[0], {"problem": w.problem, "method": "dpareto", "run": int(w.run), "chain": w.chain,
                                            "repeats": p.repeats, "ranges": p.ranges,
                                            "source_label": data.source_label if data else "svt: simulated queries"})
