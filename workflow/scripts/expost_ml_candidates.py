from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.expost.ml_experiments import load_task, ml_candidates  # noqa: E402
from dptradeoff.expost.settings import ExpostSettings  # noqa: E402
from dptradeoff.io import write_frame  # noqa: E402

with rule_context(snakemake):
    settings, conversion = ExpostSettings.from_config(snakemake.params.expost), snakemake.params.conversion
    task, meta = load_task(snakemake.wildcards.dataset, snakemake.input.train, snakemake.input.test, settings.table3)
    frame = ml_candidates(task, settings.table3, settings.delta, conversion)
    write_frame(frame, snakemake.output[0], {**meta, "what": "paper 004 Table 3 DP-SGD candidates",
                                             "alpha": settings.table3.alpha, "conversion": conversion})
