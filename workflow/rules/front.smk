# Asking a finished study's front (README, "Characterise your own algorithm"): per problem, the
# answers to its configured queries (problems.<name>.queries), each suggestion trained R times, and
# a figure and table of the front of every point its study evaluated (dptradeoff.study, as
# `dptradeoff front`) with the answers and the trivial predictor's error.


rule query:
    input:
        chain=lambda wildcards: chain_files(wildcards.problem)["evaluations"],
        data=lambda wildcards: problem_data(wildcards.problem),
    output:
        paths.query("{problem}", "{kind}", "{target}"),
    wildcard_constraints:
        kind="eps|utility",
        target=r"\d+(\.\d+)?(e-?\d+)?",
    params:
        problem=lambda wildcards: problem_definition(wildcards.problem),
        conversion=ACCOUNTING,
        settings=lambda wildcards: bo_settings(),
        seconds=lambda wildcards: problem_settings(wildcards.problem).get("seconds", {}).get("question"),
        repeats=lambda wildcards: problem_repeats(wildcards.problem),
        seed=config["seed"],
    threads: 1
    resources:
        runtime=evaluation_runtime(costliest_point),
        mem_mb=evaluation_mem_mb,
        gpu=evaluation_gpu,
    log:
        "logs/dpareto/{problem}/query/{kind}{target}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/query.py"


rule front_report:
    input:
        unpack(front_inputs),
    output:
        figure=report(paths.figure("front-{problem}"), caption="../report/front.rst", category="Fronts",
                      subcategory="{problem}"),
        csv=report(paths.table("front-{problem}", "csv"), caption="../report/front.rst", category="Fronts",
                   subcategory="{problem}"),
        md=paths.table("front-{problem}", "md"),
    params:
        problem=lambda wildcards: problem_definition(wildcards.problem),
        evaluations=lambda wildcards: front_evaluations(wildcards.problem),
        utility_floor=lambda wildcards: problem_settings(wildcards.problem).get("utility_floor"),
        metrics=METRIC_SETTINGS,
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/front-{problem}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/front_report.py"
