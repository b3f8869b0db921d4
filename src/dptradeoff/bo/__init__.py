"""DPareto: multi-objective Bayesian optimisation of privacy (epsilon) and utility (error)."""
