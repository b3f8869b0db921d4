from dptradeoff.expost.experiments import ml_table
from dptradeoff.io import read_provenance
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p = snakemake.params
    frames = {d: read_frame(path) for d, path in zip(p.datasets, snakemake.input)}
    frame = ml_table(frames)
    provenance = [read_provenance(path) for path in snakemake.input]
    frame.insert(1, "model", [meta.get("model", "unrecorded") for meta in provenance])
    frame.insert(2, "source", [meta["source_label"] for meta in provenance])
    frame.insert(3, "threshold", [meta["threshold"] for meta in provenance])
    frame.insert(4, "trials", [int(f["trial"].nunique()) for f in frames.values()])
    t3 = p.expost["table3"]
    note = (f"Paper 004 Table 3: *_epsilon = average ex-post (epsilon, {p.expost['delta']})-DP at which a model was "
            f"released, over the trials that released one (*_stopped; *_met = trials whose model meets the bar on the "
            f"test set); *_epsilon_spent_all_trials = the ex-post epsilon actually spent, averaged over all trials (a "
            f"trial that never stopped spent its budget too). Alg. 3 at RDP order {t3['alpha']}, eps' = {t3['eps_prime']}, at most "
            f"{t3['max_attempts']} attempts; doubling over budgets {t3['doubling']['budgets']} with Papernot-Steinke "
            f"(eta = {t3['doubling']['eta']}, E[K] = {t3['doubling']['mean_runs']}; RDP summed at order {t3['alpha']} and "
            f"converted there, like Alg. 3); Brownian + AboveThreshold "
            f"(eps_AT = {t3['brownian']['above_threshold_eps']}). model = what Alg. 3 and doubling train with DP-SGD "
            f"(MNIST: expost.table3.mnist_model, mlp2 = the 784-128-64-10 MLP or cnn = PyTorch's Basic MNIST Example "
            f"CNN, which the paper trains); Brownian releases a linear model in every row (sufficient statistics for "
            f"Twitter, bolt-on PSGD otherwise). paper_* = the "
            f"paper's values (100 trials). Config: {p.config_label}.")
    write(frame, snakemake.output.csv, snakemake.output.md, note)
