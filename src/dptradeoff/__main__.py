"""Command line: `python -m dptradeoff COMMAND ...` (see `--help`)."""
from __future__ import annotations

import argparse
import sys

from . import UserError


def _epsilon(args) -> None:
    from .privacy import dpsgd
    from .privacy.accountant import accountant_named

    run = dpsgd.training_event(args.n, args.lot_size, args.epochs, args.noise)
    accountant = accountant_named(_accounting(args))
    eps = accountant.epsilon(run, args.delta)
    print(f"DP-SGD/DP-Adam: n={args.n}, lot size={args.lot_size}, epochs={args.epochs} ({run.count} steps), "
          f"noise multiplier={args.noise}, delta={args.delta}, accountant: {accountant.description}")
    print(eps)


def _calibrate(args) -> None:
    from .privacy import dpsgd

    from .privacy.accountant import accountant_named

    cal = dpsgd.calibrate_noise(args.n, args.lot_size, args.epochs, args.epsilon, args.delta, _accounting(args))
    if cal is None:
        raise UserError(f"No noise multiplier <= {dpsgd.MAX_NOISE:g} makes this run ({args.epsilon}, {args.delta})-DP; "
                        "raise the target epsilon or train fewer epochs.")
    print(f"DP-SGD/DP-Adam: n={args.n}, lot size={args.lot_size}, epochs={args.epochs}, target epsilon={args.epsilon}, "
          f"delta={args.delta}, accountant: {accountant_named(_accounting(args)).description}")
    print(f"noise multiplier: {cal.noise}")
    print(cal.epsilon)


def _front(args) -> None:
    from .cli.front import front

    front(args)


def _release(args) -> None:
    from .cli.release import release_command

    release_command(args)


def _audit(args) -> None:
    from .cli.audit import audit_command

    audit_command(args)


def _compare_runs(args) -> None:
    from pathlib import Path

    from .compare_runs import compare

    for folder in (args.before, args.after):
        if not Path(folder).is_dir():
            raise UserError(f"{folder} is not a folder; give the two working directories the runs wrote into.")
    compared, differences, in_distribution = compare(Path(args.before), Path(args.after))
    print("\n".join(differences + in_distribution))
    expected = (f"; {len(in_distribution)} differ as they may (oracles that are not seedable replay in distribution, "
                f"not bit for bit)" if in_distribution else "")
    same = "no other differences, timing aside" if in_distribution else "identical, timing aside"
    print(f"compared {compared} files: " + (f"{len(differences)} differences" if differences else same) + expected)
    if differences:
        raise SystemExit(1)


def _run_arguments(p) -> None:
    """The arguments that describe a training run and its accounting (both commands share them)."""
    p.add_argument("--n", type=int, required=True, help="training-set size")
    p.add_argument("--lot-size", type=int, required=True, help="lot (mini-batch) size m")
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--accountant", choices=["pld", "rdp"], default="pld",
                   help="pld: the tight accountant (PLD of the symmetrised sampled-Gaussian pair, docs/accounting.md); "
                        "rdp: WBK19's RDP bound, converted by --conversion (the papers' accountant)")
    p.add_argument("--conversion", choices=["dp_accounting", "classic"], default="dp_accounting",
                   help="with --accountant rdp, RDP to (epsilon, delta): dp_accounting's (tighter) or the classic one "
                        "of the original DPareto code")


def _accounting(args) -> str:
    return "pld" if args.accountant == "pld" else args.conversion


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dptradeoff", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("epsilon", help="epsilon of a DP-SGD/DP-Adam training run (fixed-size lots without replacement, replace-one)")
    _run_arguments(p)
    p.add_argument("--noise", type=float, required=True, help="noise multiplier z: N(0, (2 L z)^2) is added to the clipped sum")
    p.set_defaults(func=_epsilon)
    p = sub.add_parser("calibrate", help="the noise multiplier that makes a DP-SGD/DP-Adam run (epsilon, delta)-DP, "
                                         "and its epsilon at exactly that multiplier")
    _run_arguments(p)
    p.add_argument("--epsilon", type=float, required=True, help="target epsilon")
    p.set_defaults(func=_calibrate)
    p = sub.add_parser("front", help="a finished study's Pareto front, or the hyperparameters it answers for a target "
                                     "epsilon or a target utility (searched for its seconds, stated by fresh trainings)")
    p.add_argument("--problem", required=True, help="a problem of the study (built-in or under problems: in the config)")
    p.add_argument("--run", type=int, default=0, help="the DPareto chain run (default 0)")
    target = p.add_mutually_exclusive_group()
    target.add_argument("--epsilon", type=float, help="the hyperparameters of best expected utility at epsilon <= this")
    target.add_argument("--utility", type=float, help="the hyperparameters of least epsilon whose one new training "
                        "reaches this utility with probability 0.9")
    p.add_argument("--seconds", type=float, default=None,
                   help="the question's seconds (default: the config's, as the query rule's, at least "
                        "dpareto.question_trainings trainings' worth; docs/your-algorithm.md#one-answering-rule); "
                        "given, the question is answered now even where the query rule answered it")
    p.add_argument("--configfile", action="append", default=[],
                   help="the config(s) the study ran with, merged over config/config.yaml as Snakemake does (repeatable)")
    p.add_argument("--seed", type=int, default=None,
                   help="root seed of the search (default: the config's `seed`); its trainings are never the query "
                        "rule's")
    p.set_defaults(func=_front)
    p = sub.add_parser("release", help="release a model from a finished tuning study: private selection among the "
                                       "front's points on the private rows, its (epsilon, delta) covering its tuning")
    p.add_argument("--problem", help="the problem to release (default: the config's release.problem)")
    p.add_argument("--epsilon", type=float, help="the total epsilon: trainings, scores and selection (default: release.epsilon)")
    p.add_argument("--delta", type=float, help="the total delta (default: release.delta)")
    p.add_argument("--configfile", action="append", default=[],
                   help="the config(s) the tuning study ran with, merged over config/config.yaml (repeatable)")
    p.add_argument("--out", help="the folder the release is written to (default: results/release/<problem>/cli-eps<E>-delta<D>)")
    p.set_defaults(func=_release)
    p = sub.add_parser("audit", help="audited lower bounds on epsilon (95 %% confidence) beside the proven ones, for a "
                                     "problem's front points or given hyperparameters (docs/audit.md)")
    p.add_argument("--problem", required=True, help="a problem of the study (built-in or under problems: in the config)")
    p.add_argument("--point", nargs="+", metavar="NAME=VALUE",
                   help="hyperparameters to audit (every parameter of the problem's domain) instead of the front's points")
    p.add_argument("--front-points", type=int, help="front points audited (default: audit.front_points; 0 with --point)")
    p.add_argument("--runs", type=int, help="white-box audits: trainings per hypothesis (default: audit.runs)")
    p.add_argument("--configfile", action="append", default=[],
                   help="the config(s) the study ran with, merged over config/config.yaml (repeatable)")
    p.add_argument("--seed", type=int, default=None, help="root seed of the audit's trainings (default: the config's)")
    p.add_argument("--out", help="write the table and figure as OUT.csv, OUT.md and OUT.pdf")
    p.set_defaults(func=_audit)
    p = sub.add_parser("compare-runs", help="two runs' results/, tables/ and figures/ compared on their data, timing "
                                            "columns aside (exit 1 when they differ; differences of problems whose "
                                            "oracle is not seedable are listed apart, as expected)")
    p.add_argument("before", help="the first run's working directory")
    p.add_argument("after", help="the second run's working directory")
    p.set_defaults(func=_compare_runs)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
