# Audited epsilon beside the proven one (docs/audit.md): per problem of audit.problems, its front's points
# (audit.front_points of them) and audit.points.<problem>, each audited by the trainings the audit runs.


rule audit:
    input:
        unpack(audit_inputs),
    output:
        figure=report(paths.figure("audit-{problem}"), caption="../report/audit.rst", category="Audit"),
        csv=report(paths.table("audit-{problem}", "csv"), caption="../report/audit.rst", category="Audit"),
        md=paths.table("audit-{problem}", "md"),
    params:
        problem=lambda wildcards: problem_definition(wildcards.problem),
        evaluations=lambda wildcards: front_evaluations(wildcards.problem),
        points=lambda wildcards: config["audit"].get("points", {}).get(wildcards.problem, []),
        settings=lambda wildcards: {"audit": config["audit"]},
        conversion=ACCOUNTING,
        seed=config["seed"],
        config_label=config_label(),
    threads: 1
    # One long job (~90 s on the default config): started as soon as its front is evaluated, it overlaps
    # the rest of `all` rather than running alone at its end.
    priority: CHAIN_PRIORITY + 1
    resources:
        runtime=per_attempt(60),
        mem_mb=audit_mem_mb,
        gpu=evaluation_gpu,
    log:
        "logs/audit/{problem}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/audit.py"
