from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.bo.query_round import answer_and_train  # noqa: E402
from dptradeoff.problems import resolve  # noqa: E402
from dptradeoff.problems.evaluate import replay_provenance  # noqa: E402
from dptradeoff.problems.tables import write_frame  # noqa: E402

with rule_context(snakemake):
    w, p = snakemake.wildcards, snakemake.params
    problem = resolve(w.problem, p.problem, p.conversion)
    row = answer_and_train(problem, snakemake.input.chain, w.kind, float(w.target), p.settings, p.repeats, p.seed, 0,
                           seconds=p.seconds, tiers=p.tiers)
    write_frame(row, snakemake.output[0], {"problem": w.problem, "question": row["question"].iloc[0],
                                           "definition": p.problem, "repeats": p.repeats,
                                           "source_label": row["source_label"].iloc[0], **replay_provenance(problem),
                                           "interval": f"interval_low, interval_high at interval_level "
                                                       f"{row['interval_level'].iloc[0]:g}: "
                                                       f"{row['probability_source'].iloc[0]}"})
