from dptradeoff.expost.experiments import ml_table
from dptradeoff.io import read_provenance
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p = snakemake.params
    frames = {d: read_frame(path) for d, path in zip(p.datasets, snakemake.input)}
    frame = ml_table(frames)
    frame.insert(1, "source", [read_provenance(path)["source_label"] for path in snakemake.input])
    frame.insert(2, "threshold", [read_provenance(path)["threshold"] for path in snakemake.input])
    frame.insert(3, "trials", [int(f["trial"].nunique()) for f in frames.values()])
    t3 = p.expost["table3"]
    note = (f"Paper 004 Table 3: *_epsilon = average ex-post (epsilon, {p.expost['delta']})-DP at which a model was "
            f"released, over the trials that released one (*_stopped; *_met = trials whose model meets the bar on the "
            f"test set); *_epsilon_spent_all_trials = the ex-post epsilon actually spent, averaged over all trials (a "
            f"trial that never stopped spent its budget too). Alg. 3 at RDP order {t3['alpha']}, eps' = {t3['eps_prime']}, at most "
            f"{t3['max_attempts']} attempts; doubling over budgets {t3['doubling']['budgets']} with Papernot-Steinke "
            f"(eta = {t3['doubling']['eta']}, E[K] = {t3['doubling']['mean_runs']}; RDP summed at order {t3['alpha']} and "
            f"converted there, like Alg. 3); Brownian + AboveThreshold "
            f"(eps_AT = {t3['brownian']['above_threshold_eps']}). MNIST model: mlp2 (paper: CNN). paper_* = the "
            f"paper's values (100 trials). Config: {p.config_label}.")
    write(frame, snakemake.output.csv, snakemake.output.md, note)
