from dptradeoff.io import read_frame, read_provenance
from dptradeoff.plots.proposetest_taylor import taylor_fig1
from dptradeoff.stats.tables import write
from dptradeoff.taylor.settings import TaylorSettings
from dptradeoff.taylor.table1 import table1_report
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, out = snakemake.params, snakemake.output
    settings = TaylorSettings.from_config(p.cfg)
    frames = {tuple(panel): read_frame(path) for panel, path in zip(p.panels, snakemake.input)}
    provenance = [read_provenance(path) for path in snakemake.input]
    labels = {name: settings.reading(name).label for name in dict.fromkeys(name for name, _, _ in frames)}
    sources = list(dict.fromkeys(meta["source_label"] for meta in provenance))
    taylor_fig1(frames, labels, list(settings.fig1_measuring), sources, out.fig, p.config_label)
    frame, note = table1_report(frames, provenance, settings, p.config_label)
    write(frame, out.csv, out.md, note)
