# What every rule file relies on: the library, the validated config, the constants the rules share,
# the wildcards' constraints, and a fix to Snakemake's local scheduler.
import os
import re
import sys

# The workflow imports the library from this checkout; rule jobs import the installed package
# (envs/setup.sh and envs/environment.yaml install this checkout in editable mode).
sys.path.insert(0, os.path.join(workflow.basedir, "src"))

from dptradeoff import UserError, paths
from dptradeoff.config import check as check_config, replace_alternatives
from dptradeoff.data.build import catalog
from dptradeoff.peers import PEERS
from dptradeoff.privacy.accountant import accountant_named, accounting_name
from dptradeoff.problems import PROBLEMS, definition, resolve
from dptradeoff.release.settings import ReleaseSettings
from dptradeoff.stats.front_metrics import MetricSettings
from dptradeoff.stats.region import region_rule

# Snakemake merged each --configfile and --config key by key over config/config.yaml; the mappings that
# hold one alternative (release.tuning, ...) are taken whole from the last that sets one, as
# dptradeoff.config.load does for the command line (config/README.md).
from snakemake.common.configfile import load_configfile

replace_alternatives(config, [load_configfile(str(f)) for f in workflow.overwrite_configfiles]
                     + [dict(workflow.config_settings.config)])
try:
    check_config(config, os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml"))
except UserError as exc:
    raise WorkflowError(str(exc)) from None

CONDA_ENV = "../../envs/environment.yaml"
# Every dataset this config can build, by name: the built-ins and its files of your own (datasets.<name>.source: file).
DATASETS = catalog(config["datasets"])
# A DPareto chain is sequential: its jobs, and those of the random run whose first points start it,
# go first whenever one is ready, so the independent fan-out fills the cores around the chains
# instead of a chain running alone at the end of a run.
CHAIN_PRIORITY = 10
# How every DP-SGD privacy oracle accounts (privacy.accountant, config/README.md): "pld", the tight accountant
# (docs/accounting.md), or under `accountant: rdp` the name of the RDP -> (epsilon, delta) conversion of WBK19's
# RDP bound (dp_accounting's improved one, or the classic one the DPareto paper (autodp) used).
ACCOUNTING = accounting_name(config["privacy"])
# Papers 003 and 004 (propose-test, ex-post tuning) are RDP algorithms: they keep WBK19's RDP, this conversion.
PAPER_RDP_CONVERSION = config["privacy"]["conversion"]
# Grid axes: log-spaced where a parameter is searched on a log scale, or linspace (the original).
GRID_SPACING = config["dpareto"]["grid_spacing"]
# The release's settings (docs/release.md), or None for a config without `release:`.
RELEASE_SETTINGS = ReleaseSettings.from_config(config) if "release" in config else None
# Whether the release writes diagnostics.json (K, its run time, a non-private reference): an experiment's
# only, never under release.randomness: os.
RELEASE_DIAGNOSTICS = RELEASE_SETTINGS is None or RELEASE_SETTINGS.keeps_diagnostics

# Every problem this config can name: the built-ins and those its `problems:` entries define
# (config.check has resolved each definition once already, so these cannot fail).
KNOWN_PROBLEMS = {**PROBLEMS, **{name: resolve(name, definition(config, name), ACCOUNTING)
                                 for name, settings in config["problems"].items() if "oracle" in settings or "rows" in settings}}
# Each problem's region of interest (dptradeoff.stats.region): problems.<name>.region, declared or `auto`;
# unset, a built-in problem's is statistics.region and a problem of your own's is derived (auto).
REGION_RULES = {name: region_rule(config["problems"].get(name, {}), tuple(config["statistics"]["region"]),
                                  "oracle" in config["problems"].get(name, {})) for name in KNOWN_PROBLEMS}
METRIC_SETTINGS = MetricSettings.from_config(
    config["statistics"], REGION_RULES,
    {name: config["problems"].get(name, {}).get("queries", {}).get("epsilon", []) for name in KNOWN_PROBLEMS},
    {name: config["problems"].get(name, {}).get("queries", {}).get("utility", []) for name in KNOWN_PROBLEMS})


wildcard_constraints:
    dataset="|".join(re.escape(name) for name in DATASETS),
    run=r"0|[1-9]\d*",
    batch=r"0|[1-9]\d*",
    round=r"0|[1-9]\d*",
    chain="|".join([re.escape(paths.DPARETO), re.escape(paths.batch_chain("")) + r"[1-9]\d*", *map(re.escape, PEERS)]),
    i=r"0|[1-9]\d*",
    k=r"[1-9]\d*",
    problem="|".join(re.escape(name) for name in KNOWN_PROBLEMS),


# Snakemake 9 (9.27.1 here) starts a 1 s threading.Timer on every pass of its scheduling loop whenever a
# job-rate limiter exists, which the CLI always makes (--max-jobs-per-timespan defaults to 100/1s); each
# timer wakes the loop, which starts another, so the chains of timers multiply with every job that
# finishes. On the default config's ~800 jobs the scheduler spent 17 of the run's first 31 minutes of CPU
# re-evaluating, with 600+ timers alive and 224,000 threads started (py-spy; snakemake/snakemake#3804
# reports such a thread storm). A local run submits to no queue, so the limiter protects nothing: it is
# switched off there (a cluster executor keeps it).
onstart:
    if workflow.local_exec and getattr(workflow, "scheduler", None) is not None:
        workflow.scheduler.job_rate_limiter = None
        print("dptradeoff: Snakemake's job-rate limiter is off for this local run (its timers multiplied; "
              "workflow/rules/setup.smk)", file=sys.stderr)
