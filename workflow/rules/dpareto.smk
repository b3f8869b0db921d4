# The DPareto chain, per problem and run: the first k0 points of the random run are the shared
# initial points; proposal r is computed from every evaluation before it (not only the last:
# a single-predecessor chain of 256 overflows Python's recursion limit when the DAG is built),
# and its q points are evaluated one job each, so a batch runs in parallel. The chain `dpareto` uses
# dpareto.batch_size; `dpareto-q<q>` is the same chain with q points per round (batch comparison). The
# peers (optuna-tpe, optuna-gp, botorch: a problem's methods, common.smk) run the same chain under their own names.
from dptradeoff import bookkeeping
from dptradeoff.bo import chain_round


rule bo_initial:
    input:
        initial_batches,
    output:
        paths.CHAIN_RUN.initial,
    # Above the running chains': its one small input lost every tie to them (see random_points).
    priority: CHAIN_PRIORITY + 1
    params:
        initial_points=config["dpareto"]["initial_points"],
    localrule: True
    log:
        "logs/dpareto/{problem}/{chain}/{run}/initial.log",
    run:
        bookkeeping.initial_rows(inputs=list(input), initial_points=params.initial_points, output=output[0],
                                 log_path=log[0])


# A `run:` rule (one library call) so that, with profiles/default's force-use-threads, Snakemake
# runs each round as a thread of its own process: TensorFlow (DPareto) and torch (the peers) are
# imported once per workflow run, not once per round (see dptradeoff.bo.chain_round). As separate
# jobs the peers' rounds took 3.9 s each (imports and first-call warm-ups). It runs in the environment
# Snakemake runs in (run: rules take no conda directive), and on a cluster on the head node (localrule).
rule bo_propose:
    input:
        initial=paths.CHAIN_RUN.initial,
        evals=evaluations_before_round,
        previous=previous_proposal,
        data=lambda wildcards: problem_data(wildcards.problem),
    output:
        paths.CHAIN_RUN.proposal("{round}"),
    params:
        problem=lambda wildcards: problem_definition(wildcards.problem),
        utility_floor=lambda wildcards: problem_settings(wildcards.problem).get("utility_floor"),
        steering=lambda wildcards: chain_steering(wildcards.problem, wildcards.chain),
        batch_size=lambda wildcards: chain_batch_size(wildcards.chain),
        method=lambda wildcards: chain_method(wildcards.chain),
        round_seconds=lambda wildcards: chain_round_seconds(wildcards.problem, wildcards.chain),
        pinned_batch_sizes=lambda wildcards: problem_settings(wildcards.problem).get("seconds", {}).get("batch_sizes"),
        seed=config["seed"],
    threads: 1
    priority: CHAIN_PRIORITY
    localrule: True
    log:
        "logs/dpareto/{problem}/{chain}/{run}/proposals/{round}.log",
    run:
        chain_round.propose_in_rule(wildcards, input, output, params, log)


# A `run:` rule for the same reason as bo_propose: run locally, each evaluation is a thread of the
# Snakemake process (dptradeoff.bo.chain_round.evaluate_point); as a script job it spent ~2.5 s
# starting an interpreter, importing and loading data around a ~0.1 s training (default config).
# Not a localrule: on a cluster every evaluation is a job of its own, with its resources.
rule bo_evaluate:
    input:
        proposal=point_proposal,
        # a point may continue one of the initial trainings from the state this file keeps
        initial=paths.CHAIN_RUN.initial,
        data=lambda wildcards: problem_data(wildcards.problem),
    output:
        paths.CHAIN_RUN.evals("{i}"),
    params:
        method=lambda wildcards: chain_method(wildcards.chain).name,
        conversion=ACCOUNTING,
        problem=lambda wildcards: problem_definition(wildcards.problem),
        repeats=lambda wildcards: problem_repeats(wildcards.problem),
        batch_size=lambda wildcards: chain_batch_size(wildcards.chain),
        initial_points=config["dpareto"]["initial_points"],
        seed=config["seed"],
        traces=trace_settings(),
    threads: 1
    priority: CHAIN_PRIORITY
    # a traced evaluation is one training, as long as the proposed point's (its resources)
    resources:
        runtime=evaluation_runtime(chain_point),
        mem_mb=evaluation_mem_mb,
        gpu=evaluation_gpu,
    log:
        "logs/dpareto/{problem}/{chain}/{run}/evals/{i}.log",
    run:
        chain_round.evaluate_in_rule(wildcards, input, output, params, log)


rule bo_gather:
    input:
        initial=paths.CHAIN_RUN.initial,
        evals=chain_evaluations,
    output:
        paths.CHAIN_RUN.evaluations,
    localrule: True
    log:
        "logs/dpareto/{problem}/{chain}/{run}/gather.log",
    run:
        bookkeeping.gather(inputs=list(input), output=output[0], log_path=log[0])
