"""Planted privacy bugs in each trainer, each of which the parallel test suite must catch.

For every bug: a copy of the working tree (src/, tests/, config/, workflow/, examples/, Snakefile,
pyproject.toml) with that one change, and pytest run there as the README runs it (pytest-xdist, every
core) on the quick tier's mechanism and trainer tests. A bug passes the check when pytest fails.

Run:  ./in-env python tests/break_checks.py [--only NAME ...] [--files tests/test_x.py ...]
Last line: caught=<bugs whose tests failed>/<bugs planted>.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COPIED = ["src", "tests", "config", "workflow", "examples", "Snakefile", "pyproject.toml"]
FILES = ["tests/test_mechanisms.py", "tests/test_trainers.py", "tests/test_cnn.py", "tests/test_traces.py",
         "tests/test_audit.py"]
LINEAR, MLP, CNN, BATCH = ("src/dptradeoff/train/linear.py", "src/dptradeoff/train/mlp.py",
                           "src/dptradeoff/train/cnn.py", "src/dptradeoff/train/batch.py")
NOISE_STD = "[2.0 * h.clip * h.noise for h in self.hypers]"
NOISE_DRAW = "noise = torch.randn(grad.shape, generator=generator, device=grad.device, dtype=grad.dtype)"
CPU_LOTS = "np.stack([source.choice(n, m, replace=False) for _ in range(width)])"
GPU_KEYS = "keys = torch.randint(0, 2**62, (width, n), generator=source, device=dev)"
# name: [(file, the text as it is, the text with the bug)]
BUGS = {
    "linear: noise halved": [(LINEAR, "e = 2.0 * clip * z * rng.standard_normal()", "e = clip * z * rng.standard_normal()")],
    "linear: bias un-noised": [(LINEAR, "e = 2.0 * clip * z * rng.standard_normal()",
                                "e = 2.0 * clip * z * rng.standard_normal() if f < d else 0.0")],
    "linear: clipping removed": [(LINEAR, "c = np.copysign(min(abs(c), limit[i]), c)", "c = c")],
    "linear: one step too many": [(LINEAR, "steps, m = hp.steps(n), hp.lot_size", "steps, m = hp.steps(n) + 1, hp.lot_size")],
    "linear: lots not uniform": [(LINEAR, "j = k + _below(state, n - k)", "j = k + _below(state, n - k - 1)")],
    # the MLP and the CNN share batch.py: its noise, steps and lots are both trainers'
    "mlp+cnn: noise halved": [(BATCH, NOISE_STD, "[h.clip * h.noise for h in self.hypers]")],
    "mlp+cnn: noise halved in network 1 of a batch": [
        (BATCH, NOISE_STD, "[(1.0 if i == 1 else 2.0) * h.clip * h.noise for i, h in enumerate(self.hypers)]")],
    "mlp+cnn: biases un-noised": [(BATCH, NOISE_DRAW, f"{NOISE_DRAW} if grad.dim() > 2 else torch.zeros_like(grad)")],
    "mlp+cnn: one step too many": [(BATCH, "return self.hypers[0].steps(n)", "return self.hypers[0].steps(n) + 1")],
    "mlp+cnn: lots not uniform (CPU lots)": [(BATCH, CPU_LOTS, CPU_LOTS.replace("choice(n, m", "choice(n - 1, m"))],
    "mlp+cnn: the networks of a batch share their lots (CPU lots)": [
        (BATCH, CPU_LOTS, "np.stack([source.choice(n, m, replace=False)] * width)")],
    "lots not uniform (GPU keys)": [(BATCH, "return keys.topk(m, dim=1, sorted=False).indices",
                                     "return keys[:, 1:].topk(m, dim=1, sorted=False).indices + 1")],
    "the networks of a batch share their lots (GPU keys)": [(BATCH, GPU_KEYS, GPU_KEYS.replace("(width, n)", "(1, n)")
                                                             + ".expand(width, n)")],
    "mlp: clipping removed": [(MLP, "scale = torch.clamp(per_network(clip, norms) / norms.clamp_min(1e-12), max=1.0)",
                               "scale = torch.ones_like(norms)")],
    "mlp: every network clipped at network 0's L": [
        (MLP, "scale = torch.clamp(per_network(clip, norms) / norms.clamp_min(1e-12), max=1.0)",
         "scale = torch.clamp(clip[0] / norms.clamp_min(1e-12), max=1.0)")],
    "cnn: clipping removed": [(CNN, "scale = torch.clamp(per_network(clip, norm) / norm.clamp_min(1e-12), max=1.0)",
                               "scale = torch.ones_like(norm)")],
}
# Bugs in what the answers and the acquisition promise (issue ASK), each checked against its own tests.
ANSWERS = ["tests/test_least_epsilon_answers.py", "tests/test_answers.py"]
QUERY, ROUND, PRIVACY, REGION = ("src/dptradeoff/bo/query.py", "src/dptradeoff/bo/query_round.py",
                                 "src/dptradeoff/bo/exact_privacy.py", "src/dptradeoff/stats/region.py")
ANSWER_BUGS = {
    "answers: a slow oracle's epsilon learned by the GP again": [
        (PRIVACY, "    screened = ScreenedOracle(problem, n, per_call)\n", "    return None\n")],
    "answers: the GP's epsilon used without a warning": [
        (PRIVACY.replace("exact_privacy", "propose"), "            log.warning(", "            log.info(")],
    "answers: no answer below the reach level": [(QUERY, "            if met.any():", "            if False:")],
    "answers: utility targets outside the region": [(REGION, "        for target in query_utilities:",
                                                     "        for target in ():")],
    "answers: the mean, not one training, reaches the target": [
        (QUERY, "        mean, var = self.single_training(points, self.inflation(2 * level - 1))",
         "        mean, var = self.surrogates.utility.predict(self.scaler.to_unit(points))")],
}
LINEAR, EVALUATE = "src/dptradeoff/train/linear.py", "src/dptradeoff/problems/evaluate.py"
RESUME_BUGS = {
    "resume: the noise generator not restored": [(LINEAR, "        rng = resume.generator_now()\n",
                                                  "        rng = rng if rng is not None else resume.generator_now()\n")],
    "resume: the shuffle restarted": [(LINEAR, "perm, splitmix = start.permutation.copy(), start.splitmix.copy()",
                                       "perm, splitmix = np.arange(n, dtype=np.uint32), start.splitmix.copy()")],
    "resume: a continued training's epochs paid again": [(EVALUATE, "n, repeats, wall, 0 if replayed else reached)",
                                                          "n, repeats, wall, 0)")],
    "resume: epsilon of the added epochs only": [
        (EVALUATE, "        at = [point if e is None else {**point, oracle.trace_axis: e} for e in checkpoints]",
         "        at = [point if e is None else {**point, oracle.trace_axis: e - reached} for e in checkpoints]")],
    "resume: continuations valued as new trainings": [("src/dptradeoff/bo/resume.py",
                                                       "cost.append(ends - reached if native else ends.astype(float))",
                                                       "cost.append(ends.astype(float))")],
    "resume: a path's later checkpoints forget what its earlier ones dominate": [
        ("src/dptradeoff/bo/propose.py", "floor = np.minimum.accumulate(np.where(valid, mean, np.inf), axis=1)",
         "floor = np.where(valid, mean, np.inf)")],
    "resume: MOASHA trains new configurations to max_t": [("src/dptradeoff/peers/moasha.py", "axis: rungs[0]}",
                                                           "axis: rungs[-1]}")],
}
COMPOSED = "src/dptradeoff/audit/composed.py"
AUDIT_BUGS = {
    "audit: the step's sensitivity taken as c, not 2 c": [(COMPOSED, "noise_std / (2 * contribution)",
                                                          "noise_std / contribution")],
    "audit: the noise bounded from below, not above": [(COMPOSED, "stats.chi2.ppf(alpha, len(noise)",
                                                        "stats.chi2.ppf(1 - alpha, len(noise)")],
    "audit: a lot's copies of the canary counted as one": [(COMPOSED, "/ self.counts[hit]", "/ 1")],
    "audit: the lots' canary counts not the trained lots": [("src/dptradeoff/audit/whitebox.py",
                                                            "counts = (lots >= len(y_in) - copies).sum(axis=2)",
                                                            "counts = (lots >= len(y_in) - 1).sum(axis=2)")],
}
SECURE_BUGS = {
    "secure release: lots from the SplitMix64 stream": [(LINEAR, "(rng.integers(0, n - k) if secure else _below(state, n - k))",
                                                         "_below(state, n - k)")],
    "secure release: the linear noised sum not on the exact grid": [(LINEAR, "        if spacing > 0.0:",
                                                                     "        if False:")],
    "secure release: the MLP's noise from torch's float32 stream": [
        ("src/dptradeoff/train/batch.py", "        if self.secure is not None:\n            if self.width != 1",
         "        if False:\n            if self.width != 1")],
    "secure release: the trials' generator seeded by PCG64": [("src/dptradeoff/release/run.py",
                                                              "        return secure_random.generator()",
                                                              "        return np.random.default_rng()")],
}
BUGS.update(ANSWER_BUGS)
BUGS.update(RESUME_BUGS)
BUGS.update(AUDIT_BUGS)
BUG_FILES = {name: ANSWERS for name in ANSWER_BUGS}   # a bug's own tests, where they are not FILES
BUG_FILES.update({name: ["tests/test_resume.py"] for name in RESUME_BUGS})
BUG_FILES.update({name: ["tests/test_audit_composed.py"] for name in AUDIT_BUGS})
BUGS.update(SECURE_BUGS)
BUG_FILES.update({name: ["tests/test_secure_release.py"] for name in SECURE_BUGS})
NOISE = "src/dptradeoff/exact_noise.py"
NOISE_BUGS = {   # issues 59, 65: what is released is the distribution the accountant analyses
    "noise: Karney's fraction trial (the tail's) a (2k + 3)-sided die": [(NOISE, "_below(src, state, width, digits, counts, 2 * k + 2)",
                                                             "_below(src, state, width, digits, counts, 2 * k + 3)")],
    "noise: a cell's die one face short": [(NOISE, "or face > np.uint64(below) or", "or face >= np.uint64(below) or")],
    "noise: the fast path keeps v whatever the cell's die": [(NOISE, "    if face > 2 * low:", "    if True:")],
    "noise: the fast path's bisection misses a boundary it ties": [
        (NOISE, "while low < _NORMAL_CELLS and _NORMAL_FIRST[low + 1] <= first:",
         "while low < _NORMAL_CELLS and _NORMAL_FIRST[low + 1] < first:")],
    "noise: the grid's rounding not paid for": [(NOISE, "return self.scale / (1.0 - 2.0 ** (1 - self.grid_bits)) * _SAFETY",
                                                 "return self.scale")],
    "noise: the MLP's float64 noise rounded to float32, no grid": [
        ("src/dptradeoff/train/batch.py", "released = self.grid.place(values, self._noise(values.size))",
         "released = values + self.grid.drawn_scale * self.sources[0].standard_normal(values.shape)")],
    "noise: the score's noise added in floating point": [
        ("src/dptradeoff/release/run.py", "return float(score_grid.release(np.array([score]), rng)[0]), (chosen, model)",
         "return score + rng.normal(0.0, settings.score_noise), (chosen, model)")],
    "noise: the Laplace example's noise from numpy": [
        ("examples/laplace_mean.py", "return float(grid.release(np.array([np.clip(values, lower, upper).mean()]), rng)[0])",
         "return float(np.clip(values, lower, upper).mean() + rng.laplace(0.0, point['scale']))")],
    "audit: the trainer's noise record subtracted from the releases": [
        (COMPOSED, "return (self.releases * self._signs())[hit] / self.counts[hit]",
         "return ((self.releases - (0 if self.noise is None else self.noise)) * self._signs())[hit] / self.counts[hit]")],
}
BUGS.update(NOISE_BUGS)
EXACT, STATISTIC = "tests/test_exact_noise.py", "tests/test_release_statistic.py"
BUG_FILES.update(zip(NOISE_BUGS, ([EXACT], [EXACT], [EXACT], [EXACT], [EXACT], ["tests/test_secure_release.py"],
                                  [STATISTIC], [STATISTIC], ["tests/test_audit_composed.py"])))

TIMED, BATCH_ROUNDS = "src/dptradeoff/bo/timed_questions.py", "src/dptradeoff/bo/batch_rounds.py"
BUDGET_BUGS = {   # issue BUDGET: what a timed answer states, and the batches a round trains
    "budget: the answer stated by the search trainings that chose it": [
        (ROUND, "    fresh = search.fresh(found.point)\n",
         "    fresh = np.asarray(next(a for a in search.arms if np.allclose(a.point, point)).runs)\n")],
    "budget: the interval for one training needs no 19 draws": [(TIMED, "    if k < 1:\n        return None\n",
                                                                 "    k = max(k, 1)\n")],
    "budget: a level settled without the confirmation": [(TIMED, "                    if self._confirmed(arm, settle):",
                                                          "                    if True:")],
    # issue HONEST: one rule for every problem
    "honest: a settled level's margin for its fresh trainings dropped": [
        (TIMED, "    return min(1.0, level + ACCEPT_Z * math.sqrt(level * (1 - level) / max(fresh, 1)))",
         "    return level")],
    "honest: without calibrate, candidates kept below the level": [
        (TIMED, "                if ea >= level * (1 - LEVEL_TOLERANCE):", "                if True:")],
    "honest: calibrate's None read as the point unchanged": [
        ("src/dptradeoff/release/trainers.py", "    if answer is None:\n        return None\n    if not isinstance",
         "    if answer is None:\n        return dict(point)\n    if not isinstance")],
    "honest: the wall clock ignored": [(TIMED, "        if self.pinned or self.elapsed() + seconds <= until_share * self.seconds:",
                                        "        if True:")],
    "honest: the measuring probe stopped by its own clock": [
        (TIMED, 'QuestionClock(float(seconds), 1e-9, 1e-9, pinned=True), seed, "measure")',
         'QuestionClock(float(seconds), 1.0, 1.0), seed, "measure")')],
    "honest: a dear training's budget not raised": [(TIMED, "    budget = max(float(seconds), least_trainings * (training + candidate / BLOCK) + overhead)",
                                                     "    budget = float(seconds)")],
    "budget: a batch round's perturbations repeat evaluated points": [(BATCH_ROUNDS, "        if key not in taken:",
                                                                        "        if True:")],
}
BUGS.update(BUDGET_BUGS)
BUG_FILES.update({name: ["tests/test_timed_questions.py"] for name in BUDGET_BUGS})
FRESH_FRONT = "src/dptradeoff/bo/fresh_front.py"
FRONT_BUGS = {   # issue HONEST: the front a user reads
    "honest: the front listed by the trainings that chose it (no listing round)": [
        (FRESH_FRONT, "    if len(todo):\n        trained = train_points(problem, todo, data, count, seed, run, LISTING)",
         "    if False:\n        trained = train_points(problem, todo, data, count, seed, run, LISTING)")],
    "honest: the front table lists the search means": [
        (FRESH_FRONT, 'rows.append({"epsilon": row["epsilon"], "utility": float(source["utility"]),',
         'rows.append({"epsilon": row["epsilon"], "utility": float(row["search_utility"]),')],
}
BUGS.update(FRONT_BUGS)
BUG_FILES.update({name: ["tests/test_fresh_front.py"] for name in FRONT_BUGS})
LEVELS = "src/dptradeoff/bo/levels.py"
LEVEL_BUGS = {   # issue LEAD: the search on epsilon levels
    "lead: an unreachable level clipped to the noise range": [
        (LEVELS, "        unit[reachable, self.column] = high[reachable]", "        unit[:, self.column] = high")],
    "lead: the utility GP over the noise, not epsilon": [
        (LEVELS, "        unit[:, self.column] = (self.log_epsilon(unit) - self.low) / (self.high - self.low)\n",
         "")],
    "lead: the level placed on the low side (spends more than it)": [
        (LEVELS, "            above = at(middle) > log_levels", "            above = at(middle) > log_levels + 0.1")],
}
BUGS.update(LEVEL_BUGS)
BUG_FILES.update({name: ["tests/test_levels.py"] for name in LEVEL_BUGS})

ACCOUNTING, WOR_GENERAL, RUN = ("src/dptradeoff/release/accounting.py", "src/dptradeoff/privacy/wor_general.py",
                                "src/dptradeoff/release/run.py")
SEARCH_EVENT = "return ComposedDpEvent([SampledWithoutReplacementDpEvent(self.private_rows, self.rows, search),"
ROWS_BUGS = {   # issue ROWS: the release tuned privately
    "rows: the search's trials not charged": [(ACCOUNTING, SEARCH_EVENT, "return ComposedDpEvent([")],
    "rows: the final training not charged": [
        (ACCOUNTING, "                                RandomChoiceDpEvent(tuple(self.event_of(point) for point in finals))])",
         "                                ])")],
    "rows: the subsample drawn from the config seed": [
        (RUN, "chosen = np.sort(rng.choice(n, m, replace=False))",
         "chosen = np.sort(derived_rng(settings.seed, 'subsample').choice(n, m, replace=False))")],
    "rows: Thm 9 without its factor 2": [
        (WOR_GENERAL, "terms.extend(math.log(2.0) + j * math.log(q)", "terms.extend(j * math.log(q)")],
    "rows: Thm 9's sum stopped one order short": [(WOR_GENERAL, "j = np.arange(3, alpha + 1)", "j = np.arange(3, alpha)")],
}
BUGS.update(ROWS_BUGS)
BUG_FILES.update({name: ["tests/test_private_tuning.py"] for name in ROWS_BUGS})


def planted(tree: Path, changes: list[tuple[str, str, str]]) -> None:
    for file, before, after in changes:
        path = tree / file
        text = path.read_text()
        if text.count(before) < 1:
            raise SystemExit(f"{file} no longer holds {before!r}: update tests/break_checks.py")
        path.write_text(text.replace(before, after))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="bug names (default: every one)")
    parser.add_argument("--files", nargs="+", help="the test files run against each bug (default: FILES, or the "
                        "bug's own in BUG_FILES)")
    args = parser.parse_args()
    caught = 0
    names = args.only or list(BUGS)
    for name in names:
        with tempfile.TemporaryDirectory(prefix="break-check-") as folder:
            tree = Path(folder)
            for item in COPIED:
                source = REPO / item
                (shutil.copytree if source.is_dir() else shutil.copy)(
                    source, tree / item, **({"ignore": shutil.ignore_patterns("__pycache__")} if source.is_dir() else {}))
            planted(tree, BUGS[name])
            done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "not slow",
                                   "-o", "addopts=-n auto --dist loadgroup",
                                   *(args.files or BUG_FILES.get(name, FILES))],
                                  cwd=tree, capture_output=True, text=True)
            failed = sorted(set(re.findall(r"^FAILED (\S+?)(?:\[| - |$)", done.stdout, re.MULTILINE)))
            summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
            caught += done.returncode != 0
            print(f"{name}: {'CAUGHT' if done.returncode else 'MISSED'} ({summary}); failing: {', '.join(failed) or '-'}",
                  flush=True)
    print(f"caught={caught}/{len(names)}")


if __name__ == "__main__":
    main()
