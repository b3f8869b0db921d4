# What the jobs ask a scheduler for (dptradeoff.resources; docs/cluster.md), as the rules' `resources:`
# functions. The jobs that train: runtime from the job's own points, memory from the shape of its data,
# a GPU where config asks and the oracle trains with torch. Each grows with `attempt`, so a job retried
# after running out gets more.
import pandas as pd

from dptradeoff import resources
from dptradeoff.problems.tables import read_frame


def evaluation_runtime(points_of):
    """A rule's `runtime`: `points_of(wildcards, input)` are the points the job trains."""

    def runtime(wildcards, input, attempt):
        problem = KNOWN_PROBLEMS[wildcards.problem]
        return resources.evaluation_runtime(problem, points_of(wildcards, input), problem_repeats(wildcards.problem),
                                            resources.training_rows(list(input.data)), attempt)

    return runtime


def question_runtime(wildcards, input, attempt):
    """A `query` job's minutes: the question's seconds (at least dpareto.question_trainings trainings), its retrainings."""
    problem = KNOWN_PROBLEMS[wildcards.problem]
    seconds = problem_settings(wildcards.problem).get("seconds", {}).get("question",
                                                                         config["dpareto"].get("question_seconds", 10))
    return resources.question_runtime(problem, float(seconds or 0), int(config["dpareto"].get("question_trainings", 200)),
                                      problem_repeats(wildcards.problem), resources.training_rows(list(input.data)),
                                      attempt)


def evaluation_mem_mb(wildcards, input, attempt):
    return resources.evaluation_mem_mb(list(input.data), attempt)


def audit_mem_mb(wildcards, input, attempt):
    """An evaluation job's memory plus the training states a white-box audit holds at once
    (audit.whitebox.MEMORY bytes)."""
    import math

    from dptradeoff.audit.whitebox import MEMORY

    return evaluation_mem_mb(wildcards, input, attempt) + math.ceil(attempt * MEMORY / 2**20 / 100) * 100


def evaluation_gpu(wildcards):
    return int(config["cluster"]["gpu"] and KNOWN_PROBLEMS[wildcards.problem].oracle.uses_gpu)


# The points each kind of evaluation job trains, for evaluation_runtime.
def batch_points(wildcards, input):
    return evaluation_batches().take(read_frame(input.points), int(wildcards.batch))


def chain_point(wildcards, input):
    i = int(wildcards.i) % chain_batch_size(wildcards.chain)
    return read_frame(input.proposal).iloc[i:i + 1]


def costliest_point(wildcards, input):
    problem = resolve(wildcards.problem, problem_definition(wildcards.problem), ACCOUNTING)
    return pd.DataFrame([resources.costliest_point(problem)])


# Table 3's trial jobs (expost_ml_trials): runtime from the job's candidates and network.
def expost_ml_model(wildcards):
    """The network (or linear model) Table 3 trains on the dataset: MNIST's is expost.table3.mnist_model."""
    return config["expost"]["table3"]["mnist_model"] if wildcards.dataset == "mnist" else None


def expost_ml_trials_runtime(wildcards, input, attempt):
    """Minutes from the job's own candidates, n and the model's measured cost (resources.py)."""
    return resources.table3_trials_runtime(read_frame(input.candidates), resources.training_rows([input.train]),
                                           expost_ml_model(wildcards), config["expost"]["table3"], attempt)


def expost_ml_gpu(wildcards):
    """One GPU for the MNIST trials (torch) where config asks (cluster.gpu)."""
    return int(config["cluster"]["gpu"] and wildcards.dataset == "mnist")


def per_attempt(amount):
    """A fixed request (minutes or MB) that grows with each retry. The rules that simulate or build
    data use these: peak RSS measured on the default config through SLURM is 0.2-1.6 GB and run
    times 10-90 s (docs/cluster.md); the requests leave room for the paper configs."""
    return lambda wildcards, attempt: amount * attempt


# The front_fresh job's runtime (workflow/rules/front.smk).
def fresh_front_points(wildcards, input):
    """For a scheduler's runtime: the front_fresh job trains about FRESH_RUNTIME_POINTS points (its rounds and its listing), each at most
    the costliest point's cost with R >= its fresh trainings' FRESH_LEAST (a guess; the job's log has the count)."""
    from dptradeoff.bo.fresh_front import FRESH_LEAST

    points = costliest_point(wildcards, input)
    scale = max(1, -(-FRESH_LEAST // max(1, problem_repeats(wildcards.problem))))
    return pd.concat([points] * (FRESH_RUNTIME_POINTS * scale), ignore_index=True)


FRESH_RUNTIME_POINTS = 160   # the rounds and the listing: 119-153 points on the default adult problems
