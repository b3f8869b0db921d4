from dptradeoff.io import read_matrix, read_provenance, write_frame
from dptradeoff.seeds import rng
from dptradeoff.taylor.experiments import measure, prepare
from dptradeoff.taylor.settings import TaylorSettings
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    settings, w = TaylorSettings.from_config(snakemake.params.cfg), snakemake.wildcards
    seed = snakemake.params.seed
    how = settings.reading(w.reading)
    x, y = read_matrix(snakemake.input[0])
    x, y = prepare(x, y, int(w.n), rng(seed, "taylor", w.dataset, "rows", w.n))
    frame = measure(x, y, w.loss, how, c=settings.c, lam=settings.lam, repeats=int(w.repeats),
                    targets=settings.targets.values(), measuring=list(settings.measuring),
                    seed_parts=(seed, "taylor", w.dataset, w.loss, w.n))
    write_frame(frame, snakemake.output[0],
                {"what": "paper 002 loss vs eps and first-order estimates", "dataset": w.dataset, "loss": w.loss,
                 "n": int(len(x)), "reading": how.name, "solver": how.solver.describe(), "noise": how.noise.description,
                 "guarantee": how.guarantee,
                 "source_label": read_provenance(snakemake.input[0]).get("source_label", "unknown")})
