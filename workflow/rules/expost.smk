# Paper 004 (ex-post private tuning): Fig. 1 and Tables 1-3. Every trial table is Parquet.


rule expost_invocations:
    output:
        "results/expost/invocations.parquet",
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
        "results/expost/invocations.parquet",
    output:
        report("figures/expost_fig1.pdf", caption="../report/expost_fig1.rst", category="Ex-post tuning"),
    params:
        fig1=config["expost"]["fig1"],
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/expost_fig1.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_fig1.py"


rule expost_thread_trials:
    input:
        lambda wildcards: ["results/data/reddit/histogram.parquet"] if wildcards.row == "Reddit" else [],
    output:
        "results/expost/{table}/{row}.parquet",
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
        lambda wildcards: [f"results/expost/{wildcards.table}/{row}.parquet" for row in expost_thread_rows(wildcards.table)],
    output:
        csv=report("tables/expost_{table}.csv", caption="../report/expost_threads.rst", category="Ex-post tuning"),
        md="tables/expost_{table}.md",
    wildcard_constraints:
        table="table1|table2",
    params:
        rows=lambda wildcards: expost_thread_rows(wildcards.table),
        expost=config["expost"],
        config_label=config_label(),
    localrule: True
    log:
        "logs/expost/{table}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_thread_table.py"


rule expost_ml_candidates:
    input:
        train="results/data/{dataset}/train.parquet",
        test="results/data/{dataset}/test.parquet",
    output:
        "results/expost/ml/{dataset}/candidates.parquet",
    wildcard_constraints:
        dataset="twitter|mnist|gisette",
    params:
        conversion=RDP_CONVERSION,
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
        train="results/data/{dataset}/train.parquet",
        test="results/data/{dataset}/test.parquet",
        candidates="results/expost/ml/{dataset}/candidates.parquet",
    output:
        "results/expost/ml/{dataset}/trials.parquet",
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
        [f"results/expost/ml/{d}/trials.parquet" for d in config["expost"]["table3"]["datasets"]],
    output:
        csv=report("tables/expost_table3.csv", caption="../report/expost_table3.rst", category="Ex-post tuning"),
        md="tables/expost_table3.md",
    params:
        datasets=config["expost"]["table3"]["datasets"],
        expost=config["expost"],
        config_label=config_label(),
    localrule: True
    log:
        "logs/expost/table3.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/expost_table3.py"
