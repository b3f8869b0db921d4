import pyarrow as pa

from dptradeoff.io import read_matrix, read_provenance, write_table
from dptradeoff.seeds import rng
from dptradeoff.taylor.experiments import measure, prepare, reading, targets_from
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    cfg, w = snakemake.params.cfg, snakemake.wildcards
    seed = snakemake.params.seed
    how = reading(cfg, w.reading)
    x, y = read_matrix(snakemake.input[0])
    x, y = prepare(x, y, int(w.n), rng(seed, "taylor", w.dataset, "rows", w.n))
    frame = measure(x, y, w.loss, how, {**cfg, "repeats": int(w.repeats)}, targets_from(cfg), cfg["measuring"],
                    (seed, "taylor", w.dataset, w.loss, w.n))
    write_table(pa.Table.from_pandas(frame, preserve_index=False), snakemake.output[0],
                {"what": "paper 002 loss vs eps and first-order estimates", "dataset": w.dataset, "loss": w.loss,
                 "n": int(len(x)), "reading": how.name, "solver": how.solver.describe(), "noise": how.noise.description,
                 "guarantee": how.guarantee,
                 "source_label": read_provenance(snakemake.input[0]).get("source_label", "unknown")})
