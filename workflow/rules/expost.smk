# Paper 004 (ex-post private tuning): Fig. 1 and Tables 1-3. Every trial table is Parquet.


rule expost_invocations:
    output:
        paths.EXPOST_INVOCATIONS,
    params:
        fig1=config["expost"]["fig1"],
    resources:
        runtime=per_attempt(60),
        mem_mb=per_attempt(1000),
    log:
        "logs/expost/invocations.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_invocations.py"


rule expost_fig1:
    input:
        paths.EXPOST_INVOCATIONS,
    output:
        report(paths.figure("expost_fig1"), caption="../report/expost_fig1.rst", category="Ex-post tuning"),
    params:
        fig1=config["expost"]["fig1"],
        config_label=config_label(accountant=False),
    localrule: True
    log:
        "logs/figures/expost_fig1.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_fig1.py"


rule expost_thread_trials:
    input:
        lambda wildcards: [paths.data("reddit", "histogram")] if wildcards.row == "Reddit" else [],
    output:
        paths.expost_thread_trials("{table}", "{row}"),
    wildcard_constraints:
        table="table1|table2",
        row=r"Reddit|S[1-9]\d*",
    params:
        expost=config["expost"],
        seed=config["seed"],
    resources:
        runtime=per_attempt(60),
        mem_mb=per_attempt(1000),
    log:
        "logs/expost/{table}/{row}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_thread_trials.py"


rule expost_thread_table:
    input:
        lambda wildcards: [paths.expost_thread_trials(wildcards.table, row) for row in expost_thread_rows(wildcards.table)],
    output:
        csv=report(paths.table("expost_{table}", "csv"), caption="../report/expost_threads.rst", category="Ex-post tuning"),
        md=paths.table("expost_{table}", "md"),
    wildcard_constraints:
        table="table1|table2",
    params:
        rows=lambda wildcards: expost_thread_rows(wildcards.table),
        expost=config["expost"],
        config_label=config_label(accountant=False),
    localrule: True
    log:
        "logs/expost/{table}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_thread_table.py"


rule expost_ml_candidates:
    input:
        train=paths.data("{dataset}", "train"),
        test=paths.data("{dataset}", "test"),
    output:
        paths.expost_ml("{dataset}", "candidates"),
    wildcard_constraints:
        dataset="twitter|mnist|gisette",
    params:
        conversion=PAPER_RDP_CONVERSION,
        expost=config["expost"],
    resources:
        runtime=per_attempt(240),
        mem_mb=per_attempt(2000),
    log:
        "logs/expost/ml/{dataset}/candidates.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_ml_candidates.py"


rule expost_ml_trials:
    input:
        train=paths.data("{dataset}", "train"),
        test=paths.data("{dataset}", "test"),
        candidates=paths.expost_ml("{dataset}", "candidates"),
    output:
        paths.expost_ml("{dataset}", "trials"),
    wildcard_constraints:
        dataset="twitter|mnist|gisette",
    params:
        expost=config["expost"],
        seed=config["seed"],
    resources:
        runtime=expost_ml_trials_runtime,
        mem_mb=per_attempt(2000),
        gpu=expost_ml_gpu,
    log:
        "logs/expost/ml/{dataset}/trials.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_ml_trials.py"


rule expost_table3:
    input:
        [paths.expost_ml(d, "trials") for d in config["expost"]["table3"]["datasets"]],
    output:
        csv=report(paths.table("expost_table3", "csv"), caption="../report/expost_table3.rst", category="Ex-post tuning"),
        md=paths.table("expost_table3", "md"),
    params:
        datasets=config["expost"]["table3"]["datasets"],
        expost=config["expost"],
        config_label=config_label(accountant=False),
    localrule: True
    log:
        "logs/expost/table3.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_table3.py"
