# Figures 1-8 (PDF), each built only from the Parquet files it needs.

rule fig_oracles:
    input:
        figure_illustration("grid"),
    output:
        report(paths.figure("fig{n}"), caption="../report/fig_oracles.rst", category="Figures"),
    wildcard_constraints:
        n="1|2",
    params:
        name=lambda wildcards: EXAMPLE_NAMES[FIGURE_EXAMPLE[wildcards.n]],
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/fig{n}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/fig_oracles.py"


rule fig_surfaces:
    input:
        random=figure_illustration("random"),
        surfaces=figure_illustration("surfaces"),
        next_point=figure_illustration("next"),
        grid=figure_illustration("grid"),
    output:
        report(paths.figure("fig{n}"), caption="../report/fig_surfaces.rst", category="Figures"),
    wildcard_constraints:
        n="3|4",
    params:
        name=lambda wildcards: EXAMPLE_NAMES[FIGURE_EXAMPLE[wildcards.n]],
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/fig{n}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/fig_surfaces.py"


rule fig5:
    input:
        **method_evaluations(),
        comparison=[paths.RunFiles(p, "comparison").evaluations for p in table2_problems() if p == "adult-logreg-sgd"],
        data=sorted({f for p in config["dpareto"]["problems"] for f in problem_data(p)}),
    output:
        report(paths.figure("fig5"), caption="../report/fig5.rst", category="Figures"),
    params:
        problems=config["dpareto"]["problems"],
        evaluations=study_evaluations(),
        definitions={p: problem_definition(p) for p in config["dpareto"]["problems"]},
        utility_floors={p: problem_settings(p).get("utility_floor") for p in config["dpareto"]["problems"]},
        metrics=METRIC_SETTINGS,
        initial_points=config["dpareto"]["initial_points"],
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/fig5.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/fig5.py"


# Fig. 5's companion: the region metric against training cost, every method (traced or not).
rule front_cost:
    input:
        **method_evaluations(),
        data=sorted({f for p in config["dpareto"]["problems"] for f in problem_data(p)}),
    output:
        report(paths.figure("front_cost"), caption="../report/front_cost.rst", category="Figures"),
    params:
        problems=config["dpareto"]["problems"],
        evaluations=study_evaluations(),
        definitions={p: problem_definition(p) for p in config["dpareto"]["problems"]},
        utility_floors={p: problem_settings(p).get("utility_floor") for p in config["dpareto"]["problems"]},
        metrics=METRIC_SETTINGS,
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/front_cost.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/front_cost.py"


rule fig6:
    input:
        dpareto=[paths.RunFiles(p, paths.DPARETO).evaluations for p in grid_problems()],
        grids=[paths.RunFiles(p, f"grid{k}").evaluations for p, ks in grid_problems().items() for k in ks],
    output:
        report(paths.figure("fig6"), caption="../report/fig6.rst", category="Figures"),
    params:
        grids=grid_problems(),
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/fig6.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/fig6.py"


rule fig_fronts:
    input:
        dpareto=lambda wildcards: [paths.RunFiles(p, paths.DPARETO).evaluations for p in figure_problems(wildcards.n)],
    output:
        report(paths.figure("fig{n}"), caption="../report/fig_fronts.rst", category="Figures"),
    wildcard_constraints:
        n="7|8",
    params:
        problems=lambda wildcards: figure_problems(wildcards.n),
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/fig{n}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/fig_fronts.py"
