"""The tiny configuration: every study of the pipeline at the smallest settings that still exercise each
rule. Its `all` is built once per test session (conftest's `tiny_all`) and read by every test of its
outputs; other tests take sections of it for runs of their own."""
from __future__ import annotations

TINY = {
    "dpareto": {"runs": 1, "initial_points": 4, "iterations": 4, "batch_size": 1, "candidates": 200, "gp_restarts": 1,
                # trainings that stop and resume run in their own pipeline tests (test_pipeline_dpareto, _traces)
                "resume": False, "path_value": False},
    "problems": {
        "adult-logreg-sgd": {"repeats": 1, "grids": [2], "ranges": {"epochs": [1, 1], "lot_size": [256, 512]}},
        "adult-logreg-adam": {"repeats": 1, "grids": [], "ranges": {"epochs": [1, 1], "lot_size": [256, 512]}},
        "adult-svm-sgd": {"repeats": 1, "grids": [], "ranges": {"epochs": [1, 1], "lot_size": [256, 512]}},
        "mnist-mlp1-sgd": {"repeats": 1, "grids": [], "ranges": {"epochs": [1, 1], "lot_size": [1000, 4000]}},
        "mnist-mlp2-sgd": {"repeats": 1, "grids": [], "ranges": {"epochs": [1, 1], "lot_size": [1000, 4000]}},
        "adult-logreg-outpert": {"repeats": 1},
        "svt": {"repeats": 5},
    },
    "random_sampling": {"points": 8, "points_per_job": 8},
    "audit": {"problems": ["adult-logreg-sgd"], "front_points": 2, "runs": 40},
    "illustrations": {"grid": 3, "initial_points": 8, "surface_resolution": 5},
    "statistics": {"comparison_parts": 2, "batch_comparison": {"problem": "adult-logreg-sgd", "batch_size": 2}},
    "expost": {
        "budget": 10, "delta": 1e-6, "grid": {"start": 0.001, "ratio": 1.4142135623730951}, "trials": 2,
        "synthetic": {"samples": [8000], "threads": 300, "exponent": -0.75},
        "fig1": {"eps": 0.1, "eps_prime": 0.01, "max_mean": 120},
        "table1": {"eps_prime": 0.001, "expected_runs": 1.0},
        "table2": {"eps_prime": 0.01, "expected_runs": 0.3, "alpha": 32, "window": 2},
        "table3": {
            "datasets": ["twitter", "mnist", "gisette"], "trials": 1,
            "thresholds": {"twitter": 0.05, "mnist": 0.2, "gisette": 0.4}, "twitter_target_bound": 10.0,
            "grid": {"eps": [0.4, 0.8], "learning_rate": [0.1], "epochs": [1], "batch_size": [256], "clip": [1.0]},
            "eps_prime": 0.01, "alpha": 64, "max_attempts": 3,
            "doubling": {"budgets": [0.4, 0.8], "eta": 1.0, "mean_runs": 2},
            "brownian": {"eps": [0.2, 0.6, 1.0], "above_threshold_eps": 0.01, "ridge": 0.001, "gamma": 0.001},
        },
    },
    "proposetest": {
        "simulation": {"seeds": 20, "candidates": 20, "partitions": 10, "eps0": 0.1, "granularity": 0.01, "u0": 0.0},
        "gaps": {"granularities": [0.01, 0.1], "seeds": 5},
        "adult": {"partitions": 3, "eps0": 0.5, "granularity": 0.05, "u0": 0.5, "epsilon": 1.0, "delta": 1e-5,
                  "delta_prime": 1e-6, "validation_fraction": 0.2,
                  "grid": {"learning_rate": [0.01, 0.1], "epochs": [1], "lot_size": [256], "clip": [1.0]}},
    },
    "taylor": {
        "datasets": ["adult", "gisette"], "losses": ["logistic", "huber"], "c": 0.25, "lambda": 1e-6,
        "readings": [{"name": "default", "solver": "exact", "noise": "dp"},
                     {"name": "paper", "solver": "sgd", "noise": "as_published"}],
        "iterations": 20, "learning_rate": 0.01, "batch_size": 50, "repeats": 2, "samples": 500,
        "targets": {"start": 0.1, "stop": 0.5, "step": 0.1}, "measuring": [0.1, 0.3], "fig1_measuring": [0.1],
        "fig2": {"datasets": ["adult"], "samples": [200, 500], "repeats": 1, "reading": "default"},
    },
}
