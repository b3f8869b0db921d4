import logging

import pandas as pd

from dptradeoff.bo.fresh_front import describe
from dptradeoff.bo.support import SUPPORT_LABEL
from dptradeoff.io import read_provenance

from dptradeoff.audit.study import recorded_violation
from dptradeoff.plots.front import (chain_privacy, front_figure, front_table, shaded_region, trivial_predictor,
                                    trivial_warning)
from dptradeoff.problems import resolve
from dptradeoff.problems.evaluate import REPLAY_NOTE, load_data, seedable
from dptradeoff.problems.tables import read_frame
from dptradeoff.stats.tables import write
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    w, p, i = snakemake.wildcards, snakemake.params, snakemake.input
    problem = resolve(w.problem, p.problem)
    evaluations = {method: read_frame(path) for method, path in p.evaluations.items()}
    queries = [read_frame(path) for path in i.queries]
    fresh = read_frame(i.fresh)                                     # the front restated by fresh trainings
    trivial = trivial_predictor(problem, load_data(problem), p.utility_floor)
    error_floor = 1.0 - trivial[0] if trivial is not None else 1.0
    pooled = pd.concat(evaluations.values(), ignore_index=True)   # every method's rows: the metrics' region
    proposals = [read_frame(path) for path in i.proposals]           # DPareto's chain: the region it searched
    region = shaded_region(proposals, p.metrics.region(error_floor, w.problem, pooled), p.metrics.region_how(w.problem))
    front_figure(w.problem, problem.utility, evaluations, queries, snakemake.output.figure, p.config_label, trivial,
                 region, fresh, problem)
    warnings = [recorded_violation(w.problem, path) for path in i.audit] + [trivial_warning(evaluations, trivial)]
    warning = " ".join(text for text in warnings if text)
    if warning:
        logging.getLogger("dptradeoff").warning("%s: %s", w.problem, warning)
    floor = (f" The {trivial[1]}'s utility is {trivial[0]:.4g} (error {1 - trivial[0]:.4g}): a front point is worth "
             f"having only below that error." if trivial else " The trivial predictor's utility is not known.")
    replay = "" if seedable(problem) else f" {REPLAY_NOTE[0].upper()}{REPLAY_NOTE[1:]}."
    write(front_table(problem, evaluations, queries, fresh), snakemake.output.csv, snakemake.output.md,
          f"{w.problem}: the front of every evaluated point ({', '.join(evaluations)}; method: the one that found the "
          f"point), restated by {describe(read_provenance(i.fresh))}: epsilon exact; utility the mean of the point's "
          f"listing trainings, made after the front was chosen, n_trainings how many, utility_se the standard error of "
          f"their mean ({SUPPORT_LABEL}); chosen_utility: the fresh trainings that chose the front; search_utility and "
          f"search_n_trainings: the mean and count of the trainings that found the point, by which the search chose it "
          f"(lucky where they are above utility). Then the query answers, each by the one rule (searched for its "
          f"seconds, stated by trainings made after the choice): predicted_utility the mean of its fresh trainings "
          f"(stated_by), reach_probability their share reaching a utility target (below_level where under 0.9; settled "
          f"false where no level settled) and the interval from probability_source: measurements, not guarantees; "
          f"trainings: the fresh trainings it rests on; search_trainings those of its search, budget its seconds and cost "
          f"tiers, search_note where the search ended short, stopped where the wall clock stopped it; utility: measured "
          f"by training the answer again){floor} Region of interest: {region[1]}, "
          f"epsilon in [{region[0].epsilon_low:.3g}, {region[0].epsilon_high:.3g}], error below "
          f"{region[0].error_floor:.3g}.{' ' + region[2] if region[2] else ''} {chain_privacy(proposals)} "
          f"Config: {p.config_label}.{replay}" + (f" {warning}" if warning else ""))
