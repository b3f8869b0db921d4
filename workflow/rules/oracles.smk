# Oracle evaluations fanned out as Parquet. A method's points (random sample, grid) are written
# once, then evaluated `points_per_job` points per job (docs/outputs.md#cost: interpreter start-up vs work).
# The points and the gathers are `run:` rules: threads of the Snakemake process (dptradeoff.bookkeeping).
from dptradeoff import bookkeeping


rule random_points:
    output:
        paths.METHOD_RUN.points,
    wildcard_constraints:
        method="random|comparison",
    # Above the chains': among jobs of equal priority Snakemake's greedy scheduler prefers those with
    # the largest inputs, and this one has none, so a busy chain starved the next chain's start.
    priority: CHAIN_PRIORITY + 1
    params:
        problem=lambda wildcards: problem_definition(wildcards.problem),
        points=lambda wildcards: method_points(wildcards.problem, wildcards.method),
        seed=config["seed"],
    localrule: True
    log:
        "logs/dpareto/{problem}/{method}/{run}/points.log",
    run:
        bookkeeping.random_points(problem=wildcards.problem, definition=params.problem, method=wildcards.method,
                                  run=wildcards.run, points=params.points, seed=params.seed, output=output[0],
                                  log_path=log[0])


rule uniform_points:
    output:
        paths.RunFiles("{problem}", "uniform", "{run}").points,
    params:
        problem=lambda wildcards: problem_definition(wildcards.problem),
        points=lambda wildcards: method_points(wildcards.problem, "uniform"),
        seed=config["seed"],
    localrule: True
    log:
        "logs/dpareto/{problem}/uniform/{run}/points.log",
    run:
        bookkeeping.uniform_points(problem=wildcards.problem, definition=params.problem, run=wildcards.run,
                                   points=params.points, seed=params.seed, output=output[0], log_path=log[0])


rule grid_points:
    output:
        paths.RunFiles("{problem}", "grid{k}", "{run}").points,
    params:
        problem=lambda wildcards: problem_definition(wildcards.problem),
        spacing=GRID_SPACING,
    localrule: True
    log:
        "logs/dpareto/{problem}/grid{k}/{run}/points.log",
    run:
        bookkeeping.grid_points(problem=wildcards.problem, definition=params.problem, k=wildcards.k,
                                spacing=params.spacing, output=output[0], log_path=log[0])


rule evaluate_batch:
    input:
        points=paths.METHOD_RUN.points,
        data=lambda wildcards: problem_data(wildcards.problem),
    output:
        paths.METHOD_RUN.evals("{batch}"),
    wildcard_constraints:
        method=r"uniform|grid\d+",
    params:
        conversion=ACCOUNTING,
        problem=lambda wildcards: problem_definition(wildcards.problem),
        repeats=lambda wildcards: problem_repeats(wildcards.problem),
        points_per_job=config["random_sampling"]["points_per_job"],
        seed=config["seed"],
        traces=None,
    threads: 1
    # After the chains' jobs, before the other studies': the audit reads a problem's grids and uniform
    # sample, and behind everything else they left the audit to run alone at the end of `all`.
    priority: CHAIN_PRIORITY - 1
    resources:
        runtime=evaluation_runtime(batch_points),
        mem_mb=evaluation_mem_mb,
        gpu=evaluation_gpu,
    log:
        "logs/dpareto/{problem}/{method}/{run}/evals/{batch}.log",
    # a `run:` rule, as bo_evaluate: each batch a thread of the Snakemake process (chain_round.evaluate_batch)
    run:
        chain_round.evaluate_batch_in_rule(wildcards, input, output, params, log)


# The random run's first points are DPareto's initial points: its batches go first (see CHAIN_PRIORITY).
# With dpareto.traces the random run and Table 2's sample are traced (each point at its own epochs):
# random sampling with traces.
use rule evaluate_batch as evaluate_random_batch with:
    wildcard_constraints:
        method="random|comparison",
    params:
        conversion=ACCOUNTING,
        problem=lambda wildcards: problem_definition(wildcards.problem),
        repeats=lambda wildcards: problem_repeats(wildcards.problem),
        points_per_job=config["random_sampling"]["points_per_job"],
        seed=config["seed"],
        traces=trace_settings(),
    priority: CHAIN_PRIORITY


rule gather_evaluations:
    input:
        method_batches,
    output:
        paths.METHOD_RUN.evaluations,
    wildcard_constraints:
        method=r"random|uniform|comparison|grid\d+",
    localrule: True
    log:
        "logs/dpareto/{problem}/{method}/{run}/gather.log",
    run:
        bookkeeping.gather(inputs=list(input), output=output[0], log_path=log[0])
