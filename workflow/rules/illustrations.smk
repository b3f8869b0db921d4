# The two illustrative examples of paper 000 (§2.2, §3.3): output-perturbation logistic
# regression on Adult and the sparse vector technique. A fine grid gives the "exact" front;
# GP means, the HVPoI surface and the next point are computed after k0 random initial points.

# The examples ({example}) and their problems.
ILLUSTRATIONS = {"outpert": "adult-logreg-outpert", "svt": "svt"}


wildcard_constraints:
    example="|".join(ILLUSTRATIONS),


rule illustration_points:
    output:
        paths.illustration("{example}", "{design}_points"),
    wildcard_constraints:
        design="grid|random",
    params:
        problem=lambda wildcards: ILLUSTRATIONS[wildcards.example],
        grid=config["illustrations"]["grid"],
        initial_points=config["illustrations"]["initial_points"],
        seed=config["seed"],
    localrule: True
    log:
        "logs/illustrations/{example}/{design}_points.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/illustration_points.py"


rule illustration_evaluate:
    input:
        points=paths.illustration("{example}", "{design}_points"),
        data=lambda wildcards: problem_data(ILLUSTRATIONS[wildcards.example]),
    output:
        paths.illustration("{example}", "{design}"),
    wildcard_constraints:
        design="grid|random",
    params:
        conversion=ACCOUNTING,
        problem=lambda wildcards: ILLUSTRATIONS[wildcards.example],
        repeats=lambda wildcards: problem_repeats(ILLUSTRATIONS[wildcards.example]),
        seed=config["seed"],
    threads: 1
    resources:
        runtime=per_attempt(120),
        mem_mb=per_attempt(4000),
    log:
        "logs/illustrations/{example}/{design}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/illustration_evaluate.py"


rule illustration_surfaces:
    input:
        paths.illustration("{example}", "random"),
    output:
        surfaces=paths.illustration("{example}", "surfaces"),
        next_point=paths.illustration("{example}", "next"),
    params:
        problem=lambda wildcards: ILLUSTRATIONS[wildcards.example],
        resolution=config["illustrations"]["surface_resolution"],
        candidates=config["dpareto"]["candidates"],
        gp_restarts=config["dpareto"]["gp_restarts"],
        reference=config["dpareto"]["reference"],
        inputs=config["dpareto"]["inputs"],
        seed=config["seed"],
    threads: 1
    resources:
        runtime=per_attempt(60),
        mem_mb=per_attempt(3000),
    log:
        "logs/illustrations/{example}/surfaces.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/illustration_surfaces.py"
