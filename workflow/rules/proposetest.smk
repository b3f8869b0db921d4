# Paper 003 (propose-test tuning with a doubling step): simulation figures and an adult run.


rule proposetest_simulation:
    output:
        paths="results/proposetest/paths.parquet",
        gaps="results/proposetest/gaps.parquet",
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
        paths="results/proposetest/paths.parquet",
        gaps="results/proposetest/gaps.parquet",
    output:
        fig1=report("figures/proposetest_fig1.pdf", caption="../report/proposetest.rst", category="Propose-test"),
        fig2=report("figures/proposetest_fig2.pdf", caption="../report/proposetest.rst", category="Propose-test"),
    params:
        cfg=config["proposetest"],
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/proposetest.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/proposetest_figures.py"


rule proposetest_adult:
    input:
        train="results/data/adult/train.parquet",
        test="results/data/adult/test.parquet",
    output:
        csv=report("tables/proposetest_adult.csv", caption="../report/proposetest.rst", category="Propose-test"),
        md="tables/proposetest_adult.md",
        diagnostics_csv="tables/nonprivate/proposetest_adult_diagnostics.csv",
        diagnostics_md="tables/nonprivate/proposetest_adult_diagnostics.md",
    params:
        conversion=RDP_CONVERSION,
        cfg=config["proposetest"]["adult"],
        seed=config["seed"],
        config_label=config_label(),
    resources:
        runtime=per_attempt(60),
        mem_mb=per_attempt(2000),
    log:
        "logs/proposetest/adult.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/proposetest_adult.py"
