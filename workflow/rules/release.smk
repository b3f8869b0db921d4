# From the front to a released model (docs/release.md): the release problem's candidates from its
# tuning front (the DPareto chain of `<problem>-tuning` on the tuning split, or of release.tuning.public),
# or from the domain's prior (release.tuning.private), private selection on the private rows, and the
# released model's record, table and figure.
rule release:
    input:
        unpack(release_inputs),
    output:
        # record, model, candidates, and diagnostics.json only where the randomness is seeded (an experiment)
        **paths.RELEASE.files(diagnostics=RELEASE_DIAGNOSTICS),
    params:
        settings=release_settings,
        problem=lambda wildcards: problem_definition(wildcards.problem),
        tuning=lambda wildcards: release_tuning_definition(release_settings(wildcards)),
        utility_floor=lambda wildcards: release_tuning_settings(release_settings(wildcards)).get("utility_floor"),
        conversion=ACCOUNTING,
        config_label=config_label(),
    threads: 1
    # K ~ TNB trainings plus the reference's one per candidate: a fixed request (its K is not known
    # before it is drawn), memory from the data, a GPU where the problem trains with torch.
    resources:
        runtime=per_attempt(240),
        mem_mb=evaluation_mem_mb,
        gpu=evaluation_gpu,
    # The log's lines carry no time (workflow/scripts/release.py): their spacing would reveal K.
    log:
        "logs/release/{problem}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/release.py"


rule release_report:
    input:
        paths.RELEASE.record,
    output:
        figure=report(paths.figure("release-{problem}"), caption="../report/release.rst", category="Release"),
        csv=report(paths.table("release-{problem}", "csv"), caption="../report/release.rst", category="Release"),
        md=paths.table("release-{problem}", "md"),
    params:
        config_label=config_label(),
    localrule: True
    log:
        "logs/figures/release-{problem}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/release_report.py"
