import pandas as pd

from dptradeoff.io import read_matrix, read_provenance
from dptradeoff.proposetest.experiments import end_to_end
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    cfg = snakemake.params.cfg
    x, y = read_matrix(snakemake.input.train)
    xt, yt = read_matrix(snakemake.input.test)
    row = end_to_end(x, 2.0 * y - 1.0, xt, 2.0 * yt - 1.0, cfg, (snakemake.params.seed, "proposetest"))
    source = read_provenance(snakemake.input.train).get("source_label", "unknown")
    frame = pd.DataFrame([{"dataset": "adult", "source": source, "trials": 1, **row}])
    note = (f"Paper 003 Alg. 1 on adult logistic regression: {cfg['partitions']} partitions trained without noise, "
            f"eps0 = {cfg['eps0']}, g = {cfg['granularity']}, u0 = {cfg['u0']}; final DP-SGD at ({cfg['epsilon']}, "
            f"{cfg['delta']}); tuning by advanced composition with delta' = {cfg['delta_prime']}: epsilon_total_worst_case "
            f"over the guarded bound on iterations (the DP guarantee), epsilon_total_realised over the iterations that ran "
            f"(the paper's empirical view; not a DP guarantee, since the count depends on the data). Data: {source}. Config: {snakemake.params.config_label}.")
    write(frame, snakemake.output.csv, snakemake.output.md, note)
