"""Ex-post private selection and hyperparameter tuning (paper 004, Ghazi et al.): AboveThreshold
with per-query budgets (Alg. 1), random dropping (Algs. 2-3), the ex-post RDP filter (Alg. 4),
the baselines it is compared with, and the experiments of its Fig. 1 and Tables 1-3."""
