"""Paper 002: first-order (Taylor) estimation of the loss of objective perturbation as a function of epsilon."""
