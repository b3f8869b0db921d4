from dataclasses import asdict

from dptradeoff.expost.experiments import invocation_curves
from dptradeoff.expost.settings import Fig1Settings
from dptradeoff.io import write_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    fig1 = Fig1Settings(**snakemake.params.fig1)
    curves = invocation_curves(fig1.eps, fig1.eps_prime, fig1.max_mean)
    write_frame(curves, snakemake.output[0], {"what": "paper 004 Fig. 1 invocation statistics", **asdict(fig1)})
