# Paper 003 (propose-test tuning with a doubling step): simulation figures and an adult run.


rule proposetest_simulation:
    output:
        paths=paths.proposetest("paths"),
        gaps=paths.proposetest("gaps"),
    params:
        cfg=config["proposetest"],
        seed=config["seed"],
    resources:
        runtime=per_attempt(60),
        mem_mb=per_attempt(1000),
    log:
        "logs/proposetest/simulation.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/proposetest_simulation.py"


rule proposetest_figures:
    input:
        paths=paths.proposetest("paths"),
        gaps=paths.proposetest("gaps"),
    output:
        fig1=report(paths.figure("proposetest_fig1"), caption="../report/proposetest.rst", category="Propose-test"),
        fig2=report(paths.figure("proposetest_fig2"), caption="../report/proposetest.rst", category="Propose-test"),
    params:
        cfg=config["proposetest"],
        config_label=config_label(accountant=False),
    localrule: True
    log:
        "logs/figures/proposetest.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/proposetest_figures.py"


rule proposetest_adult:
    input:
        train=paths.data("adult", "train"),
        test=paths.data("adult", "test"),
    output:
        csv=report(paths.table("proposetest_adult", "csv"), caption="../report/proposetest.rst", category="Propose-test"),
        md=paths.table("proposetest_adult", "md"),
        diagnostics_csv=paths.table("nonprivate/proposetest_adult_diagnostics", "csv"),
        diagnostics_md=paths.table("nonprivate/proposetest_adult_diagnostics", "md"),
    params:
        conversion=PAPER_RDP_CONVERSION,
        cfg=config["proposetest"]["adult"],
        seed=config["seed"],
        config_label=config_label(accountant=False),
    resources:
        runtime=per_attempt(60),
        mem_mb=per_attempt(2000),
    log:
        "logs/proposetest/adult.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/proposetest_adult.py"
