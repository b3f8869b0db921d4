from dataclasses import asdict

from dptradeoff.io import write_frame
from dptradeoff.proposetest.experiments import iterations_vs_gap, simulate_paths
from dptradeoff.proposetest.settings import ProposeTestSettings
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    settings = ProposeTestSettings.from_config(snakemake.params.cfg)
    sim, gaps = settings.simulation, settings.gaps
    parts = (snakemake.params.seed, "proposetest")
    paths = simulate_paths(sim.seeds, sim.candidates, sim.partitions, sim.eps0, sim.granularity, sim.u0, parts)
    write_frame(paths, snakemake.output.paths, {"what": "paper 003 Fig. 1 (u, step) paths", **asdict(sim)})
    frame = iterations_vs_gap(list(gaps.granularities), gaps.seeds, sim.candidates, sim.partitions, sim.eps0, sim.u0, parts)
    write_frame(frame, snakemake.output.gaps, {"what": "paper 003 Fig. 2 iterations vs gap", **asdict(sim), "seeds": gaps.seeds})
