"""Baselines of DPareto: random sampling (paper 001 Tables 3-4) and grid search."""
