"""`dptradeoff front`: print a finished study's front, or answer a question of it by the one rule (bo.query_round:
searched for its seconds, stated by fresh trainings). The front and the best evaluated points are those of every
evaluation of the problem's study (`study.evaluation_files`: its random runs, the chains of every method it ran,
grids), each with the method that found it."""
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
             "correct); utility: measured by fresh trainings after the answer was chosen, not a guarantee")


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
    from ..bo.query import front as pareto_front

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
        from ..bo.fresh_front import describe, front_rows
        from ..io import read_provenance

        restated = paths.fresh_front(args.problem)
        if args.run == 0 and os.path.exists(restated):   # the front_fresh rule's: the front table's own
            table = front_rows(problem, everything, read_frame(restated)).drop(columns=["error"])
            print(f"Pareto front of {problem.name} (every evaluated point of run {args.run}, {len(everything)} "
                  f"evaluations: {found}; method: the one that found the point; epsilon at delta={problem.delta:g}), "
                  f"restated by {describe(read_provenance(restated))} ({restated}): {problem.utility} = the mean of "
                  f"the point's fresh trainings; search_utility = the mean of the trainings that found it:")
        else:
            table = pareto_front(problem, everything)
            print(f"Pareto front of {problem.name} (every evaluated point of run {args.run}, {len(everything)} "
                  f"evaluations: {found}; method: the one that found the point; epsilon at delta={problem.delta:g}), "
                  f"at its search means: {problem.utility} = the mean of the trainings that found the point, by which "
                  f"it was chosen, so a lucky point is listed above what it delivers ({restated} not built: "
                  f"`snakemake --cores 2 {restated}` restates it by fresh trainings):")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        return
    kind, target = ("eps", args.epsilon) if args.epsilon is not None else ("utility", args.utility)
    answered = paths.query(args.problem, kind, f"{float(target):g}")
    if args.run == 0 and args.seed is None and args.seconds is None and os.path.exists(answered):
        print_rule_answer(problem, read_frame(answered).iloc[0], answered)
        _print_best(everything, kind, float(target), problem.names, found)
        return
    # answered now by the one rule (bo.timed_questions), with trainings of a stream the query rule never uses
    from ..bo.propose import Settings
    from ..bo.query_round import answer_and_train

    settings = Settings.from_config(config["dpareto"], config["statistics"])
    entry = config.get("problems", {}).get(args.problem, {}) or {}
    seconds = args.seconds if args.seconds is not None else (entry.get("seconds") or {}).get("question")
    tiers = (entry.get("seconds") or {}).get("tiers") or config["dpareto"].get("question_tiers")
    chain = paths.RunFiles(args.problem, paths.DPARETO, args.run).evaluations
    seed = config["seed"] if args.seed is None else args.seed
    row = answer_and_train(problem, chain, kind, float(target), settings, 0, seed, args.run, seconds=seconds,
                           tiers=tiers, stream=f"{args.run}-command").iloc[0]
    print_rule_answer(problem, row, f"in {row['question_seconds']:.3g} s of its {row['seconds']:.4g}, with trainings "
                                    f"the query rule never made; not saved", now=True)
    _print_best(everything, kind, float(target), problem.names, found)


def _print_best(everything, kind: str, target: float, names, found: str) -> None:
    question = f"epsilon <= {target:g}" if kind == "eps" else f"utility >= {target:g}"
    best = best_evaluated(everything, kind, target, names)
    if best:
        _print_point(f"best evaluated point with {question} by what its trainings support ({SUPPORT_LABEL}; of "
                     f"{len(everything)} evaluations: {found})", best)
    else:
        print(f"No evaluated point's trainings support {question}.")


def interval_digits(*values: float, least: int = 4, most: int = 8) -> int:
    """Decimals that tell `values` apart (an interval's ends near 1 print as [0.9999, 0.9999] at four)."""
    finite = sorted(float(v) for v in values if math.isfinite(float(v)))
    gaps = [b - a for a, b in zip(finite, finite[1:]) if b > a]
    if not gaps:
        return least
    return int(min(most, max(least, math.ceil(-math.log10(min(gaps))) + 1)))


def print_rule_answer(problem, row, where: str, now: bool = False) -> None:
    """An answer of the one rule (bo.query_round) as its row holds it: searched, stated by fresh trainings after the
    choice, and (the query rule's, from its file `where`) retrained R times; `now`: answered by this command."""
    fresh = int(row.get("fresh_trainings", 0) or 0)
    whose = f"answered now ({where})" if now else f"the query rule's answer ({where})"
    print(f"{problem.name}, {row['question']} (delta={problem.delta:g}): {whose}; {GUARANTEE}.")
    if not math.isfinite(float(row["epsilon"])):
        print(f"  No answer: {row.get('failure')}" + (f"; {row['search_note']}" if row.get("search_note") else "") + ".")
        return
    _print_point("suggested", {n: row[n] for n in problem.names})
    source = row.get("probability_source", "")
    if math.isfinite(float(row.get("interval_low", math.nan))):
        low, mean, high = (float(row[k]) for k in ("interval_low", "predicted_utility", "interval_high"))
        d = interval_digits(low, mean, high)
        print(f"  epsilon {row['epsilon']:.4g} (exact); mean {problem.utility} {mean:.{d}f} over {fresh} fresh "
              f"trainings; one training: [{low:.{d}f}, {high:.{d}f}], the {row['interval_level']:.0%} interval from "
              f"{source}" + (" (every fresh training alike)" if low == high else ""))
    else:
        print(f"  epsilon {row['epsilon']:.4g} (exact); mean {problem.utility} {row['predicted_utility']:.4f} over "
              f"{fresh} fresh trainings; NO interval: {source}")
    if row["question"].startswith("utility"):
        p = float(row["reach_probability"])
        below = not p >= float(row.get("reach_level", 0.9) or 0.9)
        print(f"  one new training reaches {row['target']:g} with probability {p:.3f} (their share; Wilson 95 %: "
              f"[{row.get('reach_low', math.nan):.3f}, {row.get('reach_high', math.nan):.3f}])"
              + (f": P BELOW {float(row.get('reach_level', 0.9)):.2g}, the level asked" if below else ""))
    trainings = list(row["trainings"]) if row.get("trainings") is not None else []
    print(f"  rests on {len(trainings)} fresh trainings made after it was chosen (measured): " + trainings_text(trainings))
    if int(row.get("repeats", 0) or 0):
        print(f"  retrained {int(row['repeats'])} times: mean {problem.utility} {row['utility']:.4f} "
              f"(min {row['utility_min']:.4f}, max {row['utility_max']:.4f})")
    print(f"  spent: {int(row.get('search_trainings', 0) or 0)} trainings searching, {fresh} fresh; budget: "
          f"{row.get('budget', '')}" + (f"; {row['search_note']}" if row.get("search_note") else ""))
    if row.get("stopped"):
        print(f"  {row['stopped']}.")
    if row.get("edge"):
        print(f"  At the edge of the domain: {row['edge']}. A wider domain may give a better answer.")
