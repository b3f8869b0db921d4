"""Propose-test hyperparameter tuning with a doubling step (paper 003, Ding & Wu, Alg. 1)."""
