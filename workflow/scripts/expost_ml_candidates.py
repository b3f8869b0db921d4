from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

import pyarrow as pa  # noqa: E402

from dptradeoff.expost.experiments import load_task, ml_candidates  # noqa: E402
from dptradeoff.io import write_table  # noqa: E402

with rule_context(snakemake):
    cfg = snakemake.params.expost
    t3 = cfg["table3"]
    task, meta = load_task(snakemake.wildcards.dataset, snakemake.input.train, snakemake.input.test, t3)
    conversion = snakemake.params.conversion
    frame = ml_candidates(task, t3["grid"], t3["alpha"], t3["eps_prime"], cfg["delta"], conversion)
    write_table(pa.Table.from_pandas(frame, preserve_index=False), snakemake.output[0],
                {**meta, "what": "paper 004 Table 3 DP-SGD candidates", "alpha": t3["alpha"], "conversion": conversion})
