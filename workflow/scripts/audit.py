import logging

from dptradeoff.audit.study import AuditSettings, audit_study, table_note, violation
from dptradeoff.plots.audit import audit_figure
from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import load_data
from dptradeoff.problems.tables import read_frame
from dptradeoff.seeds import rng
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    w, p, out = snakemake.wildcards, snakemake.params, snakemake.output
    problem = resolve(w.problem, p.problem, p.conversion)
    frames = {method: read_frame(path) for method, path in p.evaluations.items()}
    table, utilities = audit_study(problem, frames, p.points, load_data(problem), rng(p.seed, w.problem, "audit"),
                                   AuditSettings.from_config(p.settings))
    warning = violation(w.problem, table)
    if warning:
        logging.getLogger("dptradeoff").warning("%s", warning)
    write(table, out.csv, out.md, table_note(w.problem, table, p.config_label))
    sources = [s for f in frames.values() if "source_label" in f for s in f["source_label"].tolist()]
    audit_figure(w.problem, table, utilities, out.figure, p.config_label, sources, warning)
