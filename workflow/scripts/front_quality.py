import pandas as pd

from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import error_floor, load_data, training_rows
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.front_quality import front_quality_table, minimum_epsilon
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    p, i = snakemake.params, snakemake.input
    tables, regions = [], []
    for problem in p.problems:
        chosen = resolve(problem, p.definitions[problem], p.conversion)
        data = load_data(chosen)
        floor = chosen.error_floor(data, p.utility_floors[problem])
        files = p.files[problem]
        chains = {m: read_frame(f) for m, f in files["chains"].items()}
        proposals = {m: pd.concat([read_frame(f) for f in fs], ignore_index=True) for m, fs in files["proposals"].items()}
        sampling = {m: read_frame(f) for m, f in files["sampling"].items()}
        others = [read_frame(f) for f in files["others"]]
        pooled = pd.concat([*chains.values(), *sampling.values(), *others], ignore_index=True)   # one region for all
        tables.append(front_quality_table(problem, chains, proposals, sampling, others, p.initial_points,
                                          p.metrics.metrics(floor, problem, pooled), p.metrics.region(floor, problem, pooled),
                                          minimum_epsilon(chosen, training_rows(data))))
        regions.append(f"{problem}: {p.metrics.region_label(problem, pooled, floor)}")
    frame = pd.concat(tables, ignore_index=True)
    note = (f"Front quality of every method on the same budget (the chains: {p.initial_points} shared initial points + "
            f"their proposals; random and uniform sampling: their first points, as many): every metric of "
            f"statistics.metrics (raw: hypervolume in (epsilon, error), anti-ideal (10, 1); log-epsilon: the original "
            f"code's pf_utils, ln epsilon from the leftmost point; region: share of the problem's region of interest "
            f"({'; '.join(regions)}; epsilon on a log scale) dominated, 0 to 1; best-error@L: lowest error at epsilon <= L, the floor when none beats it); "
            f"region_gap_to_reference: region of the front of everything evaluated for the problem minus the method's; "
            f"at_min_epsilon_corner / at_utility_floor: shares of the points after the initial ones with epsilon within "
            f"1 % of the domain's smallest (its corners) / error within 0.01 of the floor (error_floor: the majority "
            f"class's, or problems.<name>.utility_floor); seconds_per_proposal: the optimiser's median seconds per round "
            f"(no training). One run per method: a single seed, not a significance test (benchmarks/front_quality.py "
            f"pairs seeds). Config: {p.config_label}.")
    write(frame, snakemake.output.csv, snakemake.output.md, note)
