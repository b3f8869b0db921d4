# dptradeoff: privacy-utility trade-offs of differentially private algorithms.
# Thin by design: configuration, its validation, and the rule files; the work is in src/dptradeoff.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/setup.smk"
include: "workflow/rules/common.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/oracles.smk"
include: "workflow/rules/dpareto.smk"
include: "workflow/rules/illustrations.smk"
include: "workflow/rules/stats.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/front.smk"
include: "workflow/rules/expost.smk"
include: "workflow/rules/proposetest.smk"
include: "workflow/rules/taylor.smk"
include: "workflow/rules/release.smk"
include: "workflow/rules/audit.smk"
include: "workflow/rules/targets.smk"


rule all:
    input:
        all_targets(),
    default_target: True
