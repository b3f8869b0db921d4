import pyarrow as pa

from dptradeoff.expost.experiments import invocation_curves
from dptradeoff.io import write_table
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    f = snakemake.params.fig1
    curves = invocation_curves(f["eps"], f["eps_prime"], f["max_mean"])
    write_table(pa.Table.from_pandas(curves, preserve_index=False), snakemake.output[0],
                {"what": "paper 004 Fig. 1 invocation statistics", **f})
