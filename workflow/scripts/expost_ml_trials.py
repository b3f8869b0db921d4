from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

import pyarrow as pa  # noqa: E402

from dptradeoff.expost.experiments import load_task, ml_trials  # noqa: E402
from dptradeoff.io import write_table  # noqa: E402
from dptradeoff.problems.tables import read_frame  # noqa: E402

with rule_context(snakemake):
    cfg, dataset = snakemake.params.expost, snakemake.wildcards.dataset
    t3 = cfg["table3"]
    task, meta = load_task(dataset, snakemake.input.train, snakemake.input.test, t3)
    cands = read_frame(snakemake.input.candidates)
    frame = ml_trials(task, cands, float(cands["bottom_rdp"].iloc[0]), cfg, t3["trials"],
                      (snakemake.params.seed, "expost", "ml", dataset))
    write_table(pa.Table.from_pandas(frame, preserve_index=False), snakemake.output[0],
                {**meta, "what": "paper 004 Table 3 trials", "candidates": len(cands)})
