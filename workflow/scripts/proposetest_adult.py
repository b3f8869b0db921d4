import pandas as pd

from dptradeoff.io import read_matrix, read_provenance
from dptradeoff.proposetest.experiments import end_to_end
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    cfg = snakemake.params.cfg
    x, y = read_matrix(snakemake.input.train)
    xt, yt = read_matrix(snakemake.input.test)
    conversion = snakemake.params.conversion
    released, diagnostics = end_to_end(x, 2.0 * y - 1.0, xt, 2.0 * yt - 1.0, cfg, (snakemake.params.seed, "proposetest"),
                                       conversion)
    source = read_provenance(snakemake.input.train).get("source_label", "unknown")
    note = (f"Paper 003 Alg. 1 on adult logistic regression: {cfg['partitions']} partitions trained without noise, "
            f"eps0 = {cfg['eps0']}, g = {cfg['granularity']}, u0 = {cfg['u0']}; final DP-SGD calibrated to "
            f"({cfg['epsilon']}, {cfg['delta']}) by the {conversion} RDP conversion, epsilon_train = its epsilon at the "
            f"noise used. (epsilon_total, "
            f"delta_total) is the DP guarantee of everything in this table: epsilon_train plus the tuning's advanced "
            f"composition (delta' = {cfg['delta_prime']}) over the guarded bound on iterations. "
            f"epsilon_total_realised_not_a_guarantee composes only the iterations that ran (the paper's empirical view; "
            f"the count depends on the data). test_accuracy is on the held-out test split. Data: {source}. "
            f"Config: {snakemake.params.config_label}.")
    write(pd.DataFrame([{"dataset": "adult", "source": source, "trials": 1, **released}]),
          snakemake.output.csv, snakemake.output.md, note)
    warning = ("NOT COVERED BY ANY DP GUARANTEE: non-private statistics of the private training data (validation "
               "utilities of the candidates' partition models, trained without noise). For diagnosis only; do not "
               f"release. Config: {snakemake.params.config_label}.")
    write(pd.DataFrame([{"dataset": "adult", **diagnostics}]), snakemake.output.diagnostics_csv,
          snakemake.output.diagnostics_md, warning)
