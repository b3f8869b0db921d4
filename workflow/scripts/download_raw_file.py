from dptradeoff.data.download import fetch
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    fetch(snakemake.params.spec, snakemake.output[0])
