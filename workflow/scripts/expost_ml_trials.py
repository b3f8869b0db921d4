from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.expost.ml_experiments import load_task, ml_trials  # noqa: E402
from dptradeoff.expost.settings import ExpostSettings  # noqa: E402
from dptradeoff.io import read_frame, write_frame  # noqa: E402

with rule_context(snakemake):
    settings, dataset = ExpostSettings.from_config(snakemake.params.expost), snakemake.wildcards.dataset
    task, meta = load_task(dataset, snakemake.input.train, snakemake.input.test, settings.table3)
    cands = read_frame(snakemake.input.candidates)
    frame = ml_trials(task, cands, settings, (snakemake.params.seed, "expost", "ml", dataset))
    write_frame(frame, snakemake.output[0], {**meta, "what": "paper 004 Table 3 trials", "candidates": len(cands)})
