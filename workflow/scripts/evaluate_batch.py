from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.problems import resolve  # noqa: E402
from dptradeoff.problems.batches import Batches  # noqa: E402
from dptradeoff.problems.evaluate import evaluate, load_data, replay_provenance, source_label  # noqa: E402
from dptradeoff.problems.tables import read_frame, write_frame  # noqa: E402

with rule_context(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    problem = resolve(w.problem, p.problem, p.conversion)
    batches, batch = Batches(p.points_per_job), int(w.batch)
    points = batches.take(read_frame(snakemake.input.points), batch)
    data = load_data(problem)
    rows = evaluate(problem, points, data, p.repeats, p.seed, w.method, int(w.run), batches.first(batch), p.traces)
    write_frame(rows, snakemake.output[0], {"problem": w.problem, "method": w.method, "run": int(w.run),
                                            "definition": p.problem, "repeats": p.repeats, "seed": p.seed,
                                            "source_label": source_label(problem, data), **replay_provenance(problem)})
