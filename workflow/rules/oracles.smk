# Oracle evaluations fanned out as Parquet: a random sample of N points per problem and run,
# evaluated `points_per_job` points per job (see README: interpreter start-up vs work).


rule random_sample:
    output:
        "results/dpareto/{problem}/random/{run}/sample.parquet",
    params:
        ranges=lambda wildcards: problem_settings(wildcards.problem).get("ranges", {}),
        points=config["random_sampling"]["points"],
        seed=config["seed"],
    log:
        "logs/dpareto/{problem}/random/{run}/sample.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/random_sample.py"


rule evaluate_random_batch:
    input:
        sample="results/dpareto/{problem}/random/{run}/sample.parquet",
        data=problem_data,
    output:
        "results/dpareto/{problem}/random/{run}/evals/{batch}.parquet",
    params:
        ranges=lambda wildcards: problem_settings(wildcards.problem).get("ranges", {}),
        repeats=lambda wildcards: problem_repeats(wildcards.problem),
        points_per_job=config["random_sampling"]["points_per_job"],
        seed=config["seed"],
    threads: 1
    log:
        "logs/dpareto/{problem}/random/{run}/evals/{batch}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/evaluate_batch.py"


rule gather_random:
    input:
        lambda wildcards: [
            f"results/dpareto/{wildcards.problem}/random/{wildcards.run}/evals/{b}.parquet"
            for b in range(random_batches())
        ],
    output:
        "results/dpareto/{problem}/random/{run}/evaluations.parquet",
    log:
        "logs/dpareto/{problem}/random/{run}/gather.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/concat_tables.py"
