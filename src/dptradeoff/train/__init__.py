"""Differentially private trainers (paper 001 Alg. 3/4) and the output-perturbation baseline."""
