"""`dptradeoff release`: release a model from a finished tuning study, at a total (epsilon, delta)
that covers the tuning on the private rows (`release.run`), outside Snakemake. What it prints, as
what it writes, states no number of trials and no time."""
from __future__ import annotations

import os

from .. import UserError, paths
from ..config import load
from ..privacy.accountant import accountant_named, accounting_name
from ..problems import definition, resolve
from ..problems.tables import read_frame
from ..release.run import release, write
from ..release.settings import ReleaseSettings
from ..release.trainers import check_releasable


def output_folder(problem: str, epsilon: float, delta: float) -> str:
    return f"{paths.ReleaseFiles(problem).folder}/cli-eps{epsilon:g}-delta{delta:g}"


def release_command(args) -> None:
    from ..plots.release import release_figure, release_table
    from ..stats.tables import write as write_table

    overrides = {key: value for key, value in (("problem", args.problem), ("epsilon", args.epsilon),
                                               ("delta", args.delta)) if value is not None}
    config = load(args.configfile, overrides={"release": overrides})
    settings = ReleaseSettings.from_config(config)
    conversion = accounting_name(config["privacy"])
    problem = resolve(settings.problem, definition(config, settings.problem), conversion)
    check_releasable(problem)
    if settings.tuning_problem is None:   # a private tuning: the search runs on the private rows, no front
        tuning, frame, evaluations, floor = None, None, "none (private)", None
    else:
        tuning = resolve(settings.tuning_problem, definition(config, settings.tuning_problem), conversion)
        evaluations = paths.RunFiles(settings.tuning_problem, paths.DPARETO, 0).evaluations
        if not os.path.exists(evaluations):
            raise UserError(f"The tuning front {evaluations} does not exist; build it first with `snakemake --cores 2 "
                            f"{evaluations}` and a --configfile whose release.problem is {settings.problem}.")
        frame, floor = read_frame(evaluations), config["problems"].get(settings.tuning_problem, {}).get("utility_floor")
    record = release(problem, tuning, frame, settings, accountant_named(conversion), utility_floor=floor)
    folder = args.out or output_folder(settings.problem, settings.epsilon, settings.delta)
    label = f"dptradeoff release --problem {settings.problem} --epsilon {settings.epsilon:g} --delta {settings.delta:g}"
    files = {name: f"{folder}/{path.rsplit('/', 1)[1]}" for name, path in paths.ReleaseFiles(settings.problem).files().items()}
    write(record, problem, files, {"config": label, "tuning": evaluations})
    table, note = release_table(record, label)
    write_table(table, f"{folder}/release.csv", f"{folder}/release.md", note)
    release_figure(record, f"{folder}/release.pdf", label)
    guarantee = record["guarantee"]
    print(f"released {settings.problem}: ({guarantee['epsilon']:.4g}, {guarantee['delta']:g})-DP, {guarantee['neighbouring']}")
    print(f"covers: {guarantee['covers']}")
    print("hyperparameters: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                          for k, v in record["released"]["hyperparameters"].items()))
    print(f"eps0 (one trial's training alone, not the guarantee): {record['eps0']:.4g}")
    print(f"test {record['utility']} (measured on {record['test_rows']} test rows, not covered): {record['test_utility']:.4f}")
    print(f"{guarantee['not_covered']}")
    kept = ("; diagnostics.json holds K, the run time and a non-private reference: keep it private"
            if record["diagnostics"] is not None else "")
    print(f"files: {folder}/ (release.json, model.npz, candidates.parquet, release.md, release.pdf{kept})")
