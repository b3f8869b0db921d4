from dptradeoff.expost.experiments import thread_table
from dptradeoff.io import read_provenance
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

ORDER_NOTES = {
    "given": "the histogram's own order (synthetic: thread index, the public law's ranking; Reddit: subreddit name), "
             "which reads no count",
    "random": "a seeded random order per trial, which reads no count",
    "by_count": "decreasing TRUE count: this order reads the private counts and assumes that ranking is public; "
                "without such a public ranking these numbers are NOT covered by the stated budget",
}

with rule_context(snakemake):
    p, table = snakemake.params, snakemake.wildcards.table
    frames = {row: read_frame(path) for row, path in zip(p.rows, snakemake.input)}
    frame = thread_table(frames, table)
    frame.insert(1, "source", [read_provenance(path)["source_label"] for path in snakemake.input])
    frame.insert(2, "trials", [int(f["trial"].nunique()) for f in frames.values()])
    cfg = p.expost
    if table == "table1":
        what = (f"Pure DP (Laplace), total budget {cfg['budget']}, eps' = {cfg['table1']['eps_prime']}, "
                f"Alg. 3 runs each budget {cfg['table1']['expected_runs']} times on average")
    else:
        t2 = cfg["table2"]
        what = (f"Approximate DP, total ({cfg['budget']}, {cfg['delta']}); Alg. 3 at RDP order {t2['alpha']} "
                f"(eps' = {t2['eps_prime']}, windows of {t2['window']} budgets); Brownian: ex-post (eps, delta/threads) per "
                f"thread from the linear boundary, basic composition")
    note = (f"Paper 004 {table.replace('table', 'Table ')}: {what}; budgets {cfg['grid']['start']} * "
            f"{cfg['grid']['ratio']:.4f}^i; threads in {ORDER_NOTES[cfg['thread_order']]}; precision = fraction of produced "
            f"answers within 10% of the truth; mean and sd over trials; paper_* columns are the paper's values. "
            f"Config: {p.config_label}.")
    write(frame, snakemake.output.csv, snakemake.output.md, note)
