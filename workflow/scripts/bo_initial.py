import pandas as pd

from dptradeoff.io import read_provenance
from dptradeoff.problems.tables import read_frame, write_frame
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    # The first k0 evaluations of the random run: shared by random sampling and DPareto (paper 001 §4);
    # with traces, every row of their trainings.
    evaluated = pd.concat([read_frame(p) for p in snakemake.input], ignore_index=True)
    initial = evaluated[evaluated["index"] < snakemake.params.initial_points]
    write_frame(initial, snakemake.output[0], {**read_provenance(snakemake.input[0]), "method": "dpareto-initial"})
