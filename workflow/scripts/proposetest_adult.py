from dptradeoff.io import read_matrix, read_provenance
from dptradeoff.proposetest.experiments import adult_tables
from dptradeoff.proposetest.settings import AdultRun
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, out = snakemake.params, snakemake.output
    source = read_provenance(snakemake.input.train).get("source_label", "unknown")
    (released, note), (diagnostics, warning) = adult_tables(
        *read_matrix(snakemake.input.train), *read_matrix(snakemake.input.test), source, AdultRun.from_config(p.cfg),
        p.seed, p.conversion, p.config_label)
    write(released, out.csv, out.md, note)
    write(diagnostics, out.diagnostics_csv, out.diagnostics_md, warning)
