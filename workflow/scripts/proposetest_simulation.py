import pyarrow as pa

from dptradeoff.io import write_table
from dptradeoff.proposetest.experiments import iterations_vs_gap, simulate_paths
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    sim, gaps = snakemake.params.cfg["simulation"], snakemake.params.cfg["gaps"]
    parts = (snakemake.params.seed, "proposetest")
    paths = simulate_paths(sim["seeds"], sim["candidates"], sim["partitions"], sim["eps0"], sim["granularity"], sim["u0"], parts)
    write_table(pa.Table.from_pandas(paths, preserve_index=False), snakemake.output.paths,
                {"what": "paper 003 Fig. 1 (u, step) paths", **sim})
    frame = iterations_vs_gap(gaps["granularities"], gaps["seeds"], sim["candidates"], sim["partitions"], sim["eps0"],
                              sim["u0"], parts)
    write_table(pa.Table.from_pandas(frame, preserve_index=False), snakemake.output.gaps,
                {"what": "paper 003 Fig. 2 iterations vs gap", **sim, "seeds": gaps["seeds"]})
