"""`dptradeoff front`: print a finished study's front, or ask it for hyperparameters (bo.query). The front
and the best evaluated points are those of every evaluation of the problem's study (`study.evaluation_files`:
its random runs, the chains of every method it ran, grids), each with the method that found it; the GPs of a
query are fitted to the DPareto chain, as the `query` rule's."""
from __future__ import annotations

import math
import os

from .. import UserError, paths
from ..config import load
from ..problems import definition, resolve
from ..problems.evaluate import load_data
from ..problems.tables import read_frame
from ..study import evaluation_files, every_point
from ..privacy.accountant import accounting_name
from ..bo.query import trainings_text
from ..bo.support import SUPPORT_LABEL

GUARANTEE = ("epsilon: computed by the problem's privacy oracle at its delta (a guarantee, as far as the oracle is "
             "correct); utility: a GP prediction, not a guarantee and not a measurement")


def load_chain(config: dict, name: str, run: int):
    """The problem (as the config defines it), its chain's evaluations and its prepared data."""
    problem = resolve(name, definition(config, name), accounting_name(config["privacy"]))
    path = paths.RunFiles(name, paths.DPARETO, run).evaluations
    if not os.path.exists(path):
        raise UserError(f"{path} does not exist; run `snakemake --cores 2 {path}` (with the study's --configfile) first.")
    return problem, read_frame(path), load_data(problem)


def load_study(config: dict, name: str, run: int) -> tuple[dict, list[str]]:
    """({method: its rows} of the study's evaluation files of run `run` that exist, [those not built])."""
    files = evaluation_files(config, name, run)
    return ({m: read_frame(f) for m, f in files.items() if os.path.exists(f)},
            [f for f in files.values() if not os.path.exists(f)])


def best_evaluated(evals, kind: str, target: float, names) -> dict:
    """The evaluated point that best meets the question by what its own trainings support (as bo.query's:
    `support.best_evaluated`); {} when none does."""
    from ..bo.support import best_evaluated as supported_best

    meeting = supported_best(evals, kind, target)
    if meeting.empty:
        return {}
    row = meeting.iloc[0]
    return {k: row[k] for k in [*names, "epsilon", "utility", "n_trainings", "utility_se", "utility_supported",
                                "method", "index"] if k in row}


def _format(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)


def _print_point(title: str, values: dict) -> None:
    print(f"{title}: " + ", ".join(f"{k}={_format(v)}" for k, v in values.items()))


def front(args) -> None:
    from ..bo.propose import Settings
    from ..bo.query import FrontQuery, front as pareto_front, query_rng
    from ..bo.query_round import ANSWER_TRAININGS

    config = load(args.configfile)
    problem, evals, data = load_chain(config, args.problem, args.run)
    frames, missing = load_study(config, args.problem, args.run)
    everything = every_point(frames)
    counts = everything["method"].value_counts(sort=False)
    found = ", ".join(f"{m} {counts[m]}" for m in dict.fromkeys(everything["method"]))
    if missing:
        print(f"Not built, left out: {', '.join(missing)}.")
    from ..audit.study import recorded_violation

    audited = recorded_violation(args.problem, paths.table(f"audit-{args.problem}", "csv"))
    if audited:
        print(audited)
    from ..problems.evaluate import REPLAY_NOTE, seedable

    if not seedable(problem):
        print(f"{problem.name}: {REPLAY_NOTE}.")
    if args.epsilon is None and args.utility is None:
        table = pareto_front(problem, everything)
        print(f"Pareto front of {problem.name} (every evaluated point of run {args.run}, {len(everything)} evaluations: "
              f"{found}; method: the one that found the point; epsilon at delta={problem.delta:g}, {problem.utility} = "
              f"mean of the measured replications):")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        return
    kind, target = ("eps", args.epsilon) if args.epsilon is not None else ("utility", args.utility)
    answered = paths.query(args.problem, kind, f"{float(target):g}")
    if getattr(args, "seconds", None):   # answered now, by the clock (bo.timed_questions), as the query rule answers
        from ..bo.query_round import answer_and_train

        settings = Settings.from_config(config["dpareto"], config["statistics"])
        chain = paths.RunFiles(args.problem, paths.DPARETO, args.run).evaluations
        seed = config["seed"] if args.seed is None else args.seed
        repeats = config.get("problems", {}).get(args.problem, {}).get("repeats", problem.default_repeats)
        row = answer_and_train(problem, chain, kind, float(target), settings, int(repeats), seed, args.run,
                               seconds=args.seconds).iloc[0]
        print_rule_answer(problem, row, f"answered now in {args.seconds:g} s, not saved")
        _print_best(everything, kind, float(target), problem.names, found)
        return
    if args.run == 0 and args.seed is None and not args.search and os.path.exists(answered):
        print_rule_answer(problem, read_frame(answered).iloc[0], answered)
        _print_best(everything, kind, float(target), problem.names, found)
        return
    seed = config["seed"] if args.seed is None else args.seed
    # the `query` rule's seed rule: the same question on the same chain gets the rule's answer
    settings = Settings.from_config(config["dpareto"], config["statistics"])
    query = FrontQuery(problem, evals, data, settings, query_rng(seed, problem.name, kind, float(target), args.run))
    answer = query.for_epsilon(target, args.search) if kind == "eps" else query.for_utility(target, args.search)
    print(f"{problem.name}, {answer.question} (delta={problem.delta:g}); {GUARANTEE}.")
    if answer.point is None:
        print(f"No hyperparameters in the domain meet {answer.question} by the GP's prediction and the exact oracle, "
              f"and no training of the chain reached it ({answer.exact_epsilons} exact epsilons computed).")
    else:
        _print_point("suggested", answer.point)
        print(f"  epsilon {answer.epsilon:.4g} (exact); predicted {problem.utility} {answer.predicted_utility:.4f} "
              f"+- {answer.predicted_sd:.4f} (GP, not a measurement; sd of a mean of R trainings); one training: "
              f"[{answer.interval_low:.4f}, {answer.interval_high:.4f}], the {answer.interval_level:.0%} predictive "
              f"interval from {answer.probability_source}")
        if kind == "utility":
            below = answer.reach_probability < answer.reach_level
            print(f"  one new training reaches {target:g} with probability {answer.reach_probability:.2f} (from "
                  f"{answer.probability_source})" + (f": BELOW the {answer.reach_level:.0%} an answer asks; no trained point reaches it "
                                   f"at that level, and this one is the likeliest to" if below else ""))
        if answer.trained:
            print(f"  a trained point; its {len(answer.trainings)} trainings in the chain (measured): "
                  + ", ".join(f"{u:.4f}" for u in answer.trainings))
            if len(answer.trainings) < ANSWER_TRAININGS:
                print(f"  Few trainings to rest on: the query rule (the problem's `queries:`) trains an answer to "
                      f"{ANSWER_TRAININGS} trainings of its own and asks again.")
        else:
            print("  not trained (a GP prediction between trained points)")
            _print_point("nearest evaluated point", answer.nearest)
        if answer.edge:
            print(f"  At the edge of the domain, where it binds: {answer.edge}. A wider domain may give a better answer.")
    _print_best(everything, kind, float(target), problem.names, found)


def _print_best(everything, kind: str, target: float, names, found: str) -> None:
    question = f"epsilon <= {target:g}" if kind == "eps" else f"utility >= {target:g}"
    best = best_evaluated(everything, kind, target, names)
    if best:
        _print_point(f"best evaluated point with {question} by what its trainings support ({SUPPORT_LABEL}; of "
                     f"{len(everything)} evaluations: {found})", best)
    else:
        print(f"No evaluated point's trainings support {question}.")


def print_rule_answer(problem, row, path: str) -> None:
    """The `query` rule's answer as its file holds it: the question searched, settled and retrained (bo.query_round)."""
    fresh = int(row.get("fresh_trainings", 0) or 0)
    said = GUARANTEE if not fresh else GUARANTEE.replace(
        "a GP prediction, not a guarantee and not a measurement",
        f"measured by {fresh} fresh trainings after it was chosen, not a guarantee")
    print(f"{problem.name}, {row['question']} (delta={problem.delta:g}): the query rule's answer ({path}); {said}.")
    if not math.isfinite(float(row["epsilon"])):
        print(f"  No answer: {row.get('failure')}.")
        return
    _print_point("suggested", {n: row[n] for n in problem.names})
    print(f"  epsilon {row['epsilon']:.4g} (exact); one training: [{row['interval_low']:.4f}, {row['interval_high']:.4f}], "
          f"the {row['interval_level']:.0%} predictive interval from {row.get('probability_source', 'the GP')}")
    if row["question"].startswith("utility"):
        print(f"  one new training reaches {row['target']:g} with probability {row['reach_probability']:.3f} (from "
              f"{row.get('probability_source', 'the GP')})")
    trainings = list(row["trainings"]) if row.get("trainings") is not None else []
    print(f"  rests on {len(trainings)} " + ("fresh trainings made after it was chosen" if fresh else
                                             "trainings of its own") + " (measured): " + trainings_text(trainings))
    print(f"  retrained {int(row['repeats'])} times: mean {problem.utility} {row['utility']:.4f} "
          f"(min {row['utility_min']:.4f}, max {row['utility_max']:.4f})")
    print(f"  spent: {int(row.get('search_trainings', 0) or 0)} trainings searching, "
          f"{int(row.get('added_trainings', 0) or 0)} settling, {fresh} fresh; budget: {row.get('budget', 'count')}"
          + (f"; {row['search_note']}" if row.get("search_note") else ""))
    if row.get("edge"):
        print(f"  At the edge of the domain, where it binds: {row['edge']}. A wider domain may give a better answer.")
