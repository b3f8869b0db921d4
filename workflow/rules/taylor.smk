# Paper 002 (Taylor estimation of loss vs epsilon for objective perturbation): Fig. 1, Table 1, Fig. 2,
# for every reading of its protocol in taylor.readings (a solver and a noise law, by name).


rule taylor_measure:
    input:
        paths.data("{dataset}", "train"),
    output:
        paths.taylor_run("{reading}", "{dataset}", "{loss}", "{n}", "{repeats}"),
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
        [paths.taylor_run(r, d, l, config["taylor"]["samples"], config["taylor"]["repeats"]) for r, d, l in taylor_panels()],
    output:
        fig=report(paths.figure("taylor_fig1"), caption="../report/taylor.rst", category="Taylor estimation"),
        csv=report(paths.table("taylor_table1", "csv"), caption="../report/taylor.rst", category="Taylor estimation"),
        md=paths.table("taylor_table1", "md"),
    params:
        panels=taylor_panels(),
        cfg=config["taylor"],
        config_label=config_label(accountant=False),
    localrule: True
    log:
        "logs/taylor/fig1_table1.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/taylor_fig1_table1.py"


rule taylor_fig2:
    input:
        table=paths.table("taylor_table1", "csv"),
        runs=[paths.taylor_run(r, d, l, n, config["taylor"]["fig2"]["repeats"]) for r, d, l, n in taylor_fig2_runs()],
    output:
        report(paths.figure("taylor_fig2"), caption="../report/taylor.rst", category="Taylor estimation"),
    params:
        runs=taylor_fig2_runs(),
        cfg=config["taylor"],
        config_label=config_label(accountant=False),
    localrule: True
    log:
        "logs/taylor/fig2.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/taylor_fig2.py"
