from dptradeoff.data.build import build
from dptradeoff.data.dataset import DatasetSettings
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    dataset = snakemake.wildcards.get("dataset", "reddit")
    build(dataset, DatasetSettings.from_config(snakemake.params.dataset_config), snakemake.params.seed,
          list(snakemake.input), dict(snakemake.output.items()))
