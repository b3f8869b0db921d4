# Paper 002 (Taylor estimation of loss vs epsilon for objective perturbation): Fig. 1, Table 1, Fig. 2,
# for every reading of its protocol in taylor.readings (a solver and a noise law, by name).


rule taylor_measure:
    input:
        "results/data/{dataset}/train.parquet",
    output:
        "results/taylor/{reading}/{dataset}/{loss}/n{n}-r{repeats}.parquet",
    wildcard_constraints:
        reading=r"[a-z0-9][a-z0-9_-]*",
        dataset="adult|kddcup99|gisette",
        loss="logistic|huber",
        n=r"[1-9]\d*",
        repeats=r"[1-9]\d*",
    params:
        cfg=config["taylor"],
        seed=config["seed"],
    resources:
        runtime=per_attempt(60),
        mem_mb=per_attempt(2000),
    log:
        "logs/taylor/{reading}/{dataset}/{loss}/n{n}-r{repeats}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/taylor_measure.py"


rule taylor_fig1_table1:
    input:
        [f"results/taylor/{r}/{d}/{l}/n{config['taylor']['samples']}-r{config['taylor']['repeats']}.parquet"
         for r, d, l in taylor_panels()],
    output:
        fig=report("figures/taylor_fig1.pdf", caption="../report/taylor.rst", category="Taylor estimation"),
        csv=report("tables/taylor_table1.csv", caption="../report/taylor.rst", category="Taylor estimation"),
        md="tables/taylor_table1.md",
    params:
        panels=taylor_panels(),
        cfg=config["taylor"],
        config_label=config_label(),
    localrule: True
    log:
        "logs/taylor/fig1_table1.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/taylor_fig1_table1.py"


rule taylor_fig2:
    input:
        table="tables/taylor_table1.csv",
        runs=[f"results/taylor/{r}/{d}/{l}/n{n}-r{config['taylor']['fig2']['repeats']}.parquet" for r, d, l, n in taylor_fig2_runs()],
    output:
        report("figures/taylor_fig2.pdf", caption="../report/taylor.rst", category="Taylor estimation"),
    params:
        runs=taylor_fig2_runs(),
        cfg=config["taylor"],
        config_label=config_label(),
    localrule: True
    log:
        "logs/taylor/fig2.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/taylor_fig2.py"
