from dptradeoff.workflow_support import job_seconds, limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.problems import resolve  # noqa: E402
from dptradeoff.problems.evaluate import evaluate, load_data, source_label  # noqa: E402
from dptradeoff.problems.tables import read_frame, write_frame  # noqa: E402

with rule_context(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    problem = resolve(w.problem, p.problem, p.conversion)
    i = int(w.i)
    proposal = read_frame(snakemake.input.proposal)
    point = proposal.iloc[[i % p.batch_size]][problem.names]
    data = load_data(problem)
    rows = evaluate(problem, point, data, p.repeats, p.seed, p.method, int(w.run), p.initial_points + i)
    rows["round"] = int(proposal["round"].iloc[0])
    rows["job_seconds"] = job_seconds()
    write_frame(rows, snakemake.output[0], {"problem": w.problem, "method": p.method, "run": int(w.run), "chain": w.chain,
                                            "repeats": p.repeats, "definition": p.problem,
                                            "source_label": source_label(problem, data)})
