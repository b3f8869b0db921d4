import numpy as np

from dptradeoff.io import read_frame, read_provenance
from dptradeoff.plots.proposetest_taylor import taylor_fig2
from dptradeoff.stats.tables import read
from dptradeoff.taylor.settings import TaylorSettings
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    settings = TaylorSettings.from_config(snakemake.params.cfg)
    name = settings.fig2.reading
    table = read(snakemake.input.table)
    table = table[(table["reading"] == name) & (table["derivative"] == "eq6")].set_index(["dataset", "loss"])
    frames = {}
    for (_, dataset, loss, n), path in zip(snakemake.params.runs, snakemake.input.runs):
        frame = read_frame(path)
        best = float(table.loc[(dataset, loss), "best_measuring"])   # Table 1's best measuring point (eq. 6)
        frames[(dataset, loss, read_provenance(path)["n"])] = frame[np.isclose(frame["measuring"], best)]
    sources = list(dict.fromkeys(read_provenance(p)["source_label"] for p in snakemake.input.runs))
    taylor_fig2(frames, settings.reading(name).label, sources, snakemake.output[0], snakemake.params.config_label)
