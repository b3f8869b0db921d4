from dptradeoff.expost.experiments import thread_table
from dptradeoff.io import read_provenance
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

ORDER_NOTES = {
    "given": "the histogram's own order (synthetic: thread index, the public law's ranking; Reddit: subreddit name), "
             "which reads no count",
    "random": "a seeded random order per trial, which reads no count",
    "by_count": "decreasing TRUE count, as the paper's numbers need: this order reads the private counts, so every "
                "guarantee holds only if that ranking is public (e.g. from last year's counts) and only for neighbours "
                "that keep it; without such a public ranking these numbers are NOT covered by the stated budget",
}

with rule_context(snakemake):
    p, table = snakemake.params, snakemake.wildcards.table
    frames = {row: read_frame(path) for row, path in zip(p.rows, snakemake.input)}
    cfg = p.expost
    frame = thread_table(frames, table, cfg)
    sources = {row: read_provenance(path)["source_label"] for row, path in zip(p.rows, snakemake.input)}
    frame.insert(1, "source", frame["dataset"].map(sources))
    frame.insert(2, "trials", frame["dataset"].map({row: int(f["trial"].nunique()) for row, f in frames.items()}))
    if table == "table1":
        what = (f"Pure DP, Laplace noise of scale 1/eps_i, total budget {cfg['budget']}; Alg. 3 eps' = "
                f"{cfg['table1']['eps_prime']}, each level run {cfg['table1']['expected_runs']} times on average")
    else:
        t2 = cfg["table2"]
        what = (f"Approximate DP, total ({cfg['budget']}, {cfg['delta']}): Gaussian noise of variance 1/eps_i (rho_i = "
                f"eps_i/2); Alg. 3 at RDP order {t2['alpha']} (eps' = {t2['eps_prime']}, windows of {t2['window']} levels)")
    note = (f"Paper 004 {table.replace('table', 'Table ')}: {what}; levels eps_i = {cfg['grid']['start']} * "
            f"{cfg['grid']['ratio']:.4f}^i; the accept test's sigma for Laplace noise is the "
            f"{cfg.get('accept_sigma', 'laplace_scale').replace('_', ' ')}; threads in {ORDER_NOTES[cfg['thread_order']]}; "
            f"precision = fraction of produced answers within 10% of the truth; mean and sd over trials; the guarantee "
            f"column says what each method's numbers are worth (NONE = reproduces the paper, no guarantee); paper_* "
            f"= the paper's values for that method. Config: {p.config_label}.")
    write(frame, snakemake.output.csv, snakemake.output.md, note)
