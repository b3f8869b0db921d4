from dptradeoff.problems.tables import concat
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    concat(list(snakemake.input), snakemake.output[0])
