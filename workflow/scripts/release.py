from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff import paths  # noqa: E402
from dptradeoff.privacy.accountant import accountant_named  # noqa: E402
from dptradeoff.problems import resolve  # noqa: E402
from dptradeoff.problems.tables import read_frame  # noqa: E402
from dptradeoff.release.run import release, write  # noqa: E402

with rule_context(snakemake, timestamps=False):   # the time between log lines would reveal K
    p, settings = snakemake.params, snakemake.params.settings
    problem = resolve(settings.problem, p.problem, p.conversion)
    private = settings.tuning_problem is None   # a private tuning: no front, no tuning problem
    tuning = None if private else resolve(settings.tuning_problem, p.tuning, p.conversion)
    record = release(problem, tuning, None if private else read_frame(snakemake.input.tuning), settings,
                     accountant_named(p.conversion), utility_floor=p.utility_floor)
    # the diagnostics path too where it is no output (randomness: os): an earlier experiment's file there goes
    write(record, problem, {**paths.ReleaseFiles(settings.problem).files(), **snakemake.output},
          {"config": p.config_label, "tuning": "none (private)" if private else snakemake.input.tuning})
