"""Privacy oracles: (hyperparameters) -> epsilon at a fixed delta."""
