"""The names a hyperparameter may not take: the columns an evaluation row, a proposal and the tables
built from them write beside the hyperparameters. A hyperparameter of the same name would be
overwritten by (or would overwrite) the result, so `user_problem` refuses it at config time."""
from __future__ import annotations

# What `evaluate` writes for every point (tests compare this with a real row's columns).
EVALUATION_COLUMNS = frozenset({
    "problem", "method", "run", "index", "epsilon", "delta", "conversion", "neighbouring", "utility", "error",
    "utility_min", "utility_max", "utility_runs", "repeats", "failure", "seed", "batch_seed", "seedable", "trace_final",
    "trace_points", "cost_epochs", "cost_examples", "wall_seconds", "data_source", "source_label", "package_version",
    "segment_start", "replayed", "device",
})
# What a chain's proposals and rounds add (bo/propose.py, bo/chain_round.py, peers/base.py, bo/surfaces.py).
PROPOSAL_COLUMNS = frozenset({
    "round", "job_seconds", "acquisition", "predicted_epsilon", "predicted_error", "batch_position", "privacy_model",
    "privacy_jitter", "utility_jitter", "fit_seconds", "acquisition_seconds", "proposal_seconds", "gp_privacy_mean",
    "gp_utility_mean", "gp_privacy_var", "gp_utility_var", "hvpoi", "evaluation", "resumes", "resumes_seed",
    "resumes_from", "resumes_evaluation", "resumes_replayed", "cost_axis", "open_trainings", "stopped_trainings",
})
# What the statistics, front tables and query answers add (stats/, plots/front.py, bo/query.py).
TABLE_COLUMNS = frozenset({
    "trainings", "training_cost", "dpareto_trainings", "dpareto_cost", "part_cost", "kind", "question", "target",
    "predicted_utility", "predicted_sd", "single_sd", "interval_low", "interval_high", "interval_level",
    "runs_in_interval", "exact_epsilons", "reach_probability", "reach_level", "probability_source", "edge",
    "added_trainings", "search_trainings", "search_points", "search_note", "runs_reaching_target", "n_trainings",
    "utility_se", "utility_supported",
})
RESERVED = EVALUATION_COLUMNS | PROPOSAL_COLUMNS | TABLE_COLUMNS
# Query answers name the nearest and best evaluated points' columns with these prefixes.
RESERVED_PREFIXES = ("nearest_", "evaluated_")


def reserved(name: str) -> bool:
    return name in RESERVED or name.startswith(RESERVED_PREFIXES) or name.startswith("_")
