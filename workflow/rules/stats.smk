# Statistics from the evaluation Parquet files: Table 2 (t-tests), BO overhead, batch vs sequential.


rule table2:
    input:
        dpareto=lambda wildcards: [paths.RunFiles(p, paths.DPARETO).evaluations for p in table2_problems()],
        comparison=lambda wildcards: [paths.RunFiles(p, "comparison").evaluations for p in table2_problems()],
        data=lambda wildcards: sorted({f for p in table2_problems() for f in problem_data(p)}),
    output:
        csv=report(paths.table("table2", "csv"), caption="../report/table2.rst", category="Tables"),
        md=paths.table("table2", "md"),
    params:
        problems=table2_problems(),
        definitions={p: problem_definition(p) for p in table2_problems()},
        utility_floors={p: problem_settings(p).get("utility_floor") for p in table2_problems()},
        metrics=METRIC_SETTINGS,
        parts=config["statistics"]["comparison_parts"],
        part_size=comparison_part_size(),
        config_label=config_label(),
    localrule: True
    log:
        "logs/stats/table2.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/table2.py"


rule overhead_table:
    input:
        proposals=lambda wildcards: [f for p in config["dpareto"]["problems"] for f in chain_files(p)["proposals"]],
        evaluations=lambda wildcards: [chain_files(p)["evaluations"] for p in config["dpareto"]["problems"]],
        study=lambda wildcards: [f for p in config["dpareto"]["problems"] for f in problem_study_files(p)],
    output:
        csv=report(paths.table("overhead", "csv"), caption="../report/overhead.rst", category="Tables"),
        md=paths.table("overhead", "md"),
    params:
        problems=config["dpareto"]["problems"],
        study_files=[len(problem_study_files(p)) for p in config["dpareto"]["problems"]],
        rounds=bo_rounds(paths.DPARETO),
        config_label=config_label(),
    localrule: True
    log:
        "logs/stats/overhead.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/overhead_table.py"


rule batch_vs_sequential:
    input:
        sequential=lambda wildcards: [chain_files(config["statistics"]["batch_comparison"]["problem"])[k] for k in ("initial", "evaluations")]
        + chain_files(config["statistics"]["batch_comparison"]["problem"])["proposals"],
        batch=lambda wildcards: [chain_files(config["statistics"]["batch_comparison"]["problem"], batch_chain())[k] for k in ("initial", "evaluations")]
        + chain_files(config["statistics"]["batch_comparison"]["problem"], batch_chain())["proposals"],
    output:
        csv=report(paths.table("batch_vs_sequential", "csv"), caption="../report/batch.rst", category="Tables"),
        md=paths.table("batch_vs_sequential", "md"),
        figure=report(paths.figure("batch_vs_sequential"), caption="../report/batch.rst", category="Figures"),
    params:
        sequential_q=chain_batch_size(paths.DPARETO),
        batch_q=config["statistics"]["batch_comparison"]["batch_size"],
        config_label=config_label(),
    localrule: True
    log:
        "logs/stats/batch_vs_sequential.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/batch_vs_sequential.py"


# Every method's front side by side (front metrics, gap to the front of everything evaluated, where the
# proposals went, optimiser seconds per proposal).
rule front_quality:
    input:
        study=lambda wildcards: [f for p in config["dpareto"]["problems"] for f in problem_study_files(p)],
        proposals=lambda wildcards: [f for p in config["dpareto"]["problems"] for c in problem_methods(p)
                                     for f in chain_files(p, c)["proposals"]],
        data=lambda wildcards: sorted({f for p in config["dpareto"]["problems"] for f in problem_data(p)}),
    output:
        csv=report(paths.table("front_quality", "csv"), caption="../report/front_quality.rst", category="Tables"),
        md=paths.table("front_quality", "md"),
    params:
        problems=config["dpareto"]["problems"],
        files={p: front_quality_files(p) for p in config["dpareto"]["problems"]},
        definitions={p: problem_definition(p) for p in config["dpareto"]["problems"]},
        utility_floors={p: problem_settings(p).get("utility_floor") for p in config["dpareto"]["problems"]},
        conversion=ACCOUNTING,
        metrics=METRIC_SETTINGS,
        initial_points=config["dpareto"]["initial_points"],
        config_label=config_label(),
    localrule: True
    log:
        "logs/stats/front_quality.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/front_quality.py"
