from dptradeoff.io import read_frame
from dptradeoff.plots.proposetest_taylor import proposetest_fig1, proposetest_fig2
from dptradeoff.proposetest.settings import ProposeTestSettings
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    sim = ProposeTestSettings.from_config(snakemake.params.cfg).simulation
    proposetest_fig1(read_frame(snakemake.input.paths), sim.u0, sim.granularity, snakemake.output.fig1,
                     snakemake.params.config_label)
    proposetest_fig2(read_frame(snakemake.input.gaps), snakemake.output.fig2, snakemake.params.config_label)
