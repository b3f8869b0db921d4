"""Problems of your own: config entries, their errors, failing points, and the Opacus example's accounting."""
from __future__ import annotations

import inspect
import math
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptradeoff import UserError
from dptradeoff.baselines.random_search import sample
from dptradeoff.privacy import gaussian
from dptradeoff.problems import Problem, resolve, succeeded
from dptradeoff.problems import evaluate as evaluate_module
from dptradeoff.problems.evaluate import evaluate

HERE = Path(__file__).parent
MODULE = str(HERE / "user_problems" / "gaussian_mean.py")
DOMAIN = {"sigma": {"low": 0.001, "high": 1.0, "log": True}, "clip": {"low": 0.1, "high": 1.0}}


def entry(**changes):
    return {"oracle": MODULE, "delta": 1e-6, "utility": "closeness", "domain": DOMAIN, **changes}


def test_a_module_of_two_functions_is_a_problem():
    problem = resolve("gaussian-mean", entry())
    assert problem.names == ["sigma", "clip"] and problem.delta == 1e-6 and problem.dataset is None
    point = {"sigma": 0.01, "clip": 0.5}
    assert evaluate_module.epsilon(problem, point, None) == gaussian.epsilon(0.01, 0.5 / 1000, 1e-6)
    rows = evaluate(problem, pd.DataFrame([point]), None, repeats=4, config_seed=1, method="random", run=0)
    assert len(rows["utility_runs"].iloc[0]) == 4 and 0 < rows["utility"].iloc[0] <= 1
    assert rows["failure"].isna().all() and rows["source_label"].iloc[0] == "gaussian-mean: none: the oracle's own data"


def test_a_class_takes_its_options_and_sampling_distributions_apply():
    problem = resolve("flaky", entry(oracle=f"{MODULE}:Flaky", options={"fail_above": 0.5},
                                     sampling={"clip": {"kind": "uniform", "low": 0.2, "high": 0.3}}))
    assert problem.oracle.target.fail_above == 0.5
    points = sample(problem, 200, np.random.default_rng(0))
    assert points["clip"].between(0.2, 0.3).all()
    assert np.log(points["sigma"]).std() > 1.0      # log-uniform over [0.001, 1]: no distribution given


def test_an_importable_package_object_is_an_oracle():
    sys.path.insert(0, str(HERE / "user_problems"))
    try:
        problem = resolve("flaky", entry(oracle="gaussian_mean:Flaky"))
    finally:
        sys.path.remove(str(HERE / "user_problems"))
    assert problem.oracle.spec == "gaussian_mean:Flaky"


@pytest.mark.parametrize("changes, message", [
    ({"oracle": "no_such_module_xyz:Thing"}, r"problems\.p\.oracle: importing no_such_module_xyz failed \(ModuleNotFoundError"),
    ({"oracle": "missing/file.py:Thing"}, r"problems\.p\.oracle names the file missing/file\.py, which is in neither"),
    ({"oracle": f"{MODULE}:Nothing"}, r"has no 'Nothing'; name an object it defines"),
    ({"oracle": f"{MODULE}:NoEpsilon"}, r"has no epsilon\(point, \*, n, delta\) method"),
    ({"oracle": f"{MODULE}:Flaky", "options": {"bogus": 1}}, r"make problems\.p\.options match its constructor"),
    ({"domain": {}}, r"problems\.p\.domain is missing or empty"),
    ({"domain": {"sigma": {"low": 2, "high": 1}}}, r"problems\.p\.domain\.sigma has low = 2 >= high = 1"),
    ({"domain": {"sigma": {"low": 0, "high": 1, "log": True}}}, r"problems\.p\.domain\.sigma is searched on a log scale"),
    ({"domain": {"k": {"low": 0.5, "high": 3, "integer": True}}}, r"problems\.p\.domain\.k is an integer parameter"),
    ({"sampling": {"clip": {"kind": "gamma", "low": 0.1, "high": 1}}}, r"problems\.p\.sampling\.clip\.kind is 'gamma'"),
    ({"sampling": {"nope": {"kind": "uniform", "low": 0.1, "high": 1}}}, r"problems\.p\.sampling names \['nope'\]"),
    ({"dataset": "reddit"}, r"problems\.p\.dataset is 'reddit'; use one of adult, gisette"),
    ({"ranges": {"clip": [0.1, 0.2]}}, r"edit problems\.p\.domain instead"),
])
def test_bad_entries_stop_with_one_sentence_naming_the_key(changes, message):
    with pytest.raises(UserError, match=message) as caught:
        resolve("p", entry(**changes))
    assert str(caught.value).count("\n") == 0


@pytest.mark.parametrize("oracle, message", [
    ("NaNEpsilon", r"returned epsilon nan .* an epsilon must be a number >= 0"),
    ("NegativeEpsilon", r"returned epsilon -1\.0 .* an epsilon must be a number >= 0"),
    ("UtilityAboveOne", r"returned \[1\.5, 1\.5\] .* 2 utilities in \[0, 1\]"),
])
def test_an_oracle_returning_no_privacy_or_utility_value_stops_the_run(oracle, message):
    problem = resolve("p", entry(oracle=f"{MODULE}:{oracle}"))
    with pytest.raises(UserError, match=message):
        evaluate(problem, pd.DataFrame([{"sigma": 0.1, "clip": 0.5}]), None, 2, 0, "random", 0)


def test_an_oracle_raising_for_one_point_records_that_point_as_failed_and_goes_on():
    problem = resolve("flaky", entry(oracle=f"{MODULE}:Flaky", options={"fail_above": 0.5}))
    points = pd.DataFrame([{"sigma": 0.1, "clip": 0.4}, {"sigma": 0.1, "clip": 0.9}, {"sigma": 0.2, "clip": 0.3}])
    rows = evaluate(problem, points, None, 3, 0, "random", 0)
    failed = rows.iloc[1]
    assert failed["failure"] == "utility oracle: FloatingPointError: training diverged at clip 0.9"
    assert math.isnan(failed["utility"]) and math.isnan(failed["error"]) and len(failed["utility_runs"]) == 0
    assert failed["epsilon"] == gaussian.epsilon(0.1, 0.9 / 1000, 1e-6)     # privacy was computed
    assert rows.drop(index=1)["failure"].isna().all() and rows.drop(index=1)["utility"].between(0, 1).all()
    assert succeeded(rows)["index"].tolist() == [0, 2]


def test_a_privacy_oracle_raising_fails_the_point_without_training_it():
    problem = resolve("acct", entry(oracle=f"{MODULE}:AccountingFails", options={"fail_above": 0.5}))
    cls = type(problem.oracle.target)
    before = cls.trained
    rows = evaluate(problem, pd.DataFrame([{"sigma": 0.1, "clip": 0.4}, {"sigma": 0.1, "clip": 0.8}]), None, 2, 0,
                    "random", 0)
    assert rows["failure"].tolist() == [None, "privacy oracle: OverflowError: RDP overflow"]
    assert math.isnan(rows["epsilon"].iloc[1]) and math.isnan(rows["utility"].iloc[1])
    assert cls.trained - before == 2          # only the first point's two replications were trained


def test_every_row_states_the_neighbouring_relation_of_its_epsilon():
    from dptradeoff.problems import PROBLEMS

    assert PROBLEMS["adult-logreg-sgd"].oracle.neighbouring == "replace-one"
    assert PROBLEMS["adult-logreg-outpert"].oracle.neighbouring == "replace-one"
    rows = evaluate(resolve("m", entry()), pd.DataFrame([{"sigma": 0.1, "clip": 0.4}]), None, 1, 0, "random", 0)
    assert rows["neighbouring"].iloc[0] == "not stated by the oracle"
    assert resolve("cnn", entry(oracle=str(HERE.parent / "examples/opacus_cnn.py") + ":OpacusCNN")).oracle.neighbouring \
        == "add/remove-one (Opacus's relation)"


SECURE = str(HERE / "user_problems" / "secure_noise.py") + ":SecureLaplaceMean"
SCALE = {"scale": {"low": 0.001, "high": 1.0, "log": True}}


def test_an_oracle_with_its_own_noise_generator_says_its_rows_replay_in_distribution_not_bit_for_bit():
    """`seedable = False` (a library's secure noise, which the pipeline's seed cannot reach) reaches every row
    (`seedable`, and the source label every table and figure prints) and the files' provenance; a seedable
    oracle's rows replay bit for bit from their seeds and say so."""
    from dptradeoff.problems.evaluate import NOT_SEEDABLE, replay_provenance

    secure = resolve("secure", {"oracle": SECURE, "domain": SCALE})
    assert secure.utility == "1 - |error|/100"            # the oracle's utility_description, no `utility:` key
    point = pd.DataFrame([{"scale": 0.05}])
    first, second = (evaluate(secure, point, None, 3, config_seed=1, method="random", run=0) for _ in range(2))
    assert (~first["seedable"]).all() and NOT_SEEDABLE in first["source_label"].iloc[0]
    assert first["seed"].tolist() == second["seed"].tolist()
    assert first["utility_runs"].iloc[0] != second["utility_runs"].iloc[0]     # the same seed, other noise
    assert replay_provenance(secure) == {"seedable": False, "replay": first["source_label"].iloc[0].split("; ")[-1]}

    plain = resolve("m", entry())
    again = [evaluate(plain, pd.DataFrame([{"sigma": 0.1, "clip": 0.4}]), None, 3, 1, "random", 0) for _ in range(2)]
    assert again[0]["seedable"].all() and NOT_SEEDABLE not in again[0]["source_label"].iloc[0]
    assert again[0]["utility_runs"].iloc[0] == again[1]["utility_runs"].iloc[0]
    assert replay_provenance(plain)["seedable"] is True


def test_the_config_marks_an_oracle_not_seedable_but_cannot_make_one_seedable():
    assert resolve("m", entry(seedable=False)).oracle.seedable is False
    assert resolve("m", entry(seedable=True)).oracle.seedable is True
    with pytest.raises(UserError, match=r"^problems\.secure\.seedable is true but .* sets seedable = False .*; remove "
                                        r"the key\.$"):
        resolve("secure", {"oracle": SECURE, "domain": SCALE, "seedable": True})
    with pytest.raises(UserError, match=r"^problems\.m\.seedable is 'no'; give true or false\.$"):
        resolve("m", entry(seedable="no"))
    with pytest.raises(UserError, match=r"only a problem of your own takes"):
        resolve("adult-logreg-sgd", {"seedable": False})


def test_evaluate_knows_no_algorithm_by_name():
    """The oracles come from the problem: no branch on a model or problem name in evaluate.py."""
    source = inspect.getsource(evaluate_module)
    assert "model" not in source and not any(name in source for name in ("logreg", "svm", "mlp", "outpert", "svt"))
    assert "model" not in Problem.__dataclass_fields__


# -- the Opacus example ------------------------------------------------------------------------
sys.path.insert(0, str(HERE.parent / "examples"))
import opacus_cnn  # noqa: E402


def _mnist_like(n_train: int, n_test: int):
    from dptradeoff.problems import Data

    rng = np.random.default_rng(0)
    x = rng.random((n_train + n_test, 784)).astype(np.float32)
    y = rng.integers(0, 10, n_train + n_test).astype(np.int8)
    return Data(x[:n_train], y[:n_train], x[n_train:], y[n_train:], "synthetic", "synthetic")


@pytest.mark.parametrize("n, lot, epochs", [(60, 16, 1), (49, 7, 2)])
def test_the_opacus_example_accounts_for_the_sampling_opacus_performs(n, lot, epochs):
    """After a real Opacus training, its accountant's history (sampling rate, steps, noise) is what the
    example's privacy oracle accounts for, and Opacus's own RDP epsilon agrees with dp_accounting's."""
    oracle = opacus_cnn.OpacusCNN(train_rows=n, test_rows=10)
    data = oracle.prepare(_mnist_like(n + 5, 20))
    point = {"epochs": epochs, "lot_size": lot, "learning_rate": 0.1, "noise": 1.3, "clip": 1.0}
    _, engine = oracle.train_with_engine(point, data, np.random.default_rng(0))
    rate, steps = opacus_cnn.poisson_schedule(data.n_train, lot, epochs)
    assert engine.accountant.history == [(1.3, rate, steps)]
    ours = oracle.epsilon(point, n=data.n_train, delta=1e-5)
    assert engine.get_epsilon(1e-5) == pytest.approx(ours, rel=0.02)


def test_the_opacus_example_keeps_a_fixed_subsample_and_trains():
    oracle = opacus_cnn.OpacusCNN(train_rows=40, test_rows=10)
    raw = _mnist_like(100, 30)
    data = oracle.prepare(raw)
    assert data.x_train.shape == (40, 1, 28, 28) and data.n_train == 40 and data.x_test.shape == (10, 1, 28, 28)
    assert np.array_equal(oracle.prepare(raw).y_train, data.y_train)          # the same rows every time
    value = oracle.utility({"epochs": 1, "lot_size": 8, "learning_rate": 0.1, "noise": 1.0, "clip": 1.0}, data,
                           np.random.default_rng(1))
    assert 0.0 <= value <= 1.0


@pytest.mark.parametrize("oracle, thread_safe", [("CountsOverlap", False), ("CountsOverlapThreadSafe", True)])
def test_a_local_run_calls_a_user_oracle_from_one_thread_at_a_time_unless_it_says_it_is_thread_safe(
        tmp_path, oracle, thread_safe):
    """Chain evaluations are threads of the Snakemake process (bo.chain_round.evaluate_point); a
    user's oracle may keep state, so its calls are serialised unless it declares `thread_safe`."""
    import threading

    from dptradeoff.bo.chain_round import evaluate_point
    from dptradeoff.problems.tables import read_frame, write_frame

    definition = entry(oracle=f"{MODULE}:{oracle}")
    problem = resolve("overlap", definition)
    assert problem.oracle.thread_safe is thread_safe
    proposal = str(tmp_path / "proposal.parquet")
    points = sample(problem, 4, np.random.default_rng(0)).assign(clip=0.5)
    write_frame(points.assign(round=0), proposal, {})
    counter = sys.modules[problem.oracle.target.__module__].CountsOverlap
    counter.running = counter.most = 0
    start = threading.Barrier(4)

    def one(i):
        start.wait()
        evaluate_point(method="dpareto", problem="overlap", definition=definition, conversion="dp_accounting",
                       proposal=proposal, output=str(tmp_path / f"{i}.parquet"), log=str(tmp_path / f"{i}.log"),
                       chain="dpareto", index=i, batch_size=4, repeats=8, seed=1, run=0, initial_points=2)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = pd.concat([read_frame(str(tmp_path / f"{i}.parquet")) for i in range(4)])
    assert rows["failure"].isna().all() and list(rows["index"]) == [2, 3, 4, 5]
    # 4 threads x 8 calls of 0.05 s started together: a thread-safe oracle's calls overlap
    assert (counter.most > 1) if thread_safe else (counter.most == 1)


def test_a_problem_of_your_own_runs_dpareto_alone_unless_its_entry_names_more_methods():
    """dptradeoff.study: problems.<name>.methods, else DPareto alone for a problem of your own (and a
    release's tuning split of one), else dpareto.methods for a built-in problem."""
    from dptradeoff.study import check_methods, problem_methods

    config = {"dpareto": {"methods": ["dpareto", "optuna-tpe", "botorch"]},
              "problems": {"mine": entry(), "mine-tuning": {**entry(), "rows": {"of": "mine"}},
                           "asked": entry(methods=["dpareto", "optuna-gp"]), "svt": {"repeats": 3},
                           "svt-tuning": {"repeats": 3, "rows": {"of": "svt"}}}}
    assert problem_methods(config, "mine") == problem_methods(config, "mine-tuning") == ["dpareto"]
    assert problem_methods(config, "asked") == ["dpareto", "optuna-gp"]
    assert problem_methods(config, "svt") == problem_methods(config, "svt-tuning") == ["dpareto", "optuna-tpe", "botorch"]
    assert problem_methods(config, "adult-logreg-sgd") == ["dpareto", "optuna-tpe", "botorch"]   # no entry at all
    check_methods(config)
    config["problems"]["asked"]["methods"] = ["optuna-gp"]
    with pytest.raises(UserError, match=r"problems\.asked\.methods is \[optuna-gp\], without dpareto; add dpareto"):
        check_methods(config)


def test_dptradeoff_front_answers_from_every_evaluated_point_with_the_method_that_found_it(tmp_path, monkeypatch, capsys):
    """The front and the best evaluated point come from every evaluation file of the study (here a random run
    whose point beats every point of the chain at epsilon <= 1), each with its method; the GPs of the
    suggestion are fitted to the DPareto chain alone."""
    import yaml

    from dptradeoff import paths
    from dptradeoff.__main__ import main
    from dptradeoff.problems.tables import write_frame

    problem = resolve("gaussian-mean", entry())
    rng = np.random.default_rng(3)
    points = pd.DataFrame({"sigma": np.exp(rng.uniform(np.log(0.001), 0, 14)), "clip": rng.uniform(0.1, 1.0, 14)})
    random_run = evaluate(problem, points.iloc[:10], None, 2, 1, "random", 0)
    chain = pd.concat([random_run.iloc[:4], evaluate(problem, points.iloc[10:], None, 2, 1, "dpareto", 0, first_index=4)],
                      ignore_index=True)
    # a random point past the chain's initial ones, at epsilon <= 1, measured better than anything the chain has
    best = random_run.index[random_run["epsilon"] <= 1][-1]
    assert best >= 4
    random_run.loc[best, ["utility", "utility_min", "utility_max", "error"]] = [0.999, 0.999, 0.999, 0.001]
    assert chain["utility"].max() < 0.999
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").symlink_to(Path(__file__).resolve().parents[1] / "config")
    for method, frame in (("random", random_run), ("dpareto", chain)):
        path = paths.RunFiles("gaussian-mean", method).evaluations
        os.makedirs(os.path.dirname(path))
        write_frame(frame, path, {})
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"dpareto": {"problems": ["gaussian-mean"], "initial_points": 4, "candidates": 200,
                                                  "gp_restarts": 1},
                                      "random_sampling": {"points": 10, "points_per_job": 5, "uniform": False},
                                      "problems": {"gaussian-mean": entry()}}))
    main(["front", "--problem", "gaussian-mean", "--epsilon", "1", f"--configfile={config}"])
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("best evaluated point with epsilon <= 1"))
    assert "utility=0.999" in line and "method=random" in line and f"index={best}" in line, printed
    assert "of 14 evaluations: random 10, dpareto 4" in line          # the chain's 4 initial rows counted once
    main(["front", "--problem", "gaussian-mean", f"--configfile={config}"])
    listed = capsys.readouterr().out
    assert "every evaluated point of run 0, 14 evaluations" in listed
    front_rows = [line.split() for line in listed.splitlines() if line.split()[-2:-1] in (["random"], ["dpareto"])]
    assert ["random", str(best)] in [row[-2:] for row in front_rows], listed


@pytest.mark.parametrize("name", sorted(__import__("dptradeoff.problems.columns", fromlist=["RESERVED"]).RESERVED)
                         + ["nearest_epsilon", "evaluated_utility", "_cost"])
def test_a_hyperparameter_named_like_a_result_column_is_refused_at_config_time(name):
    from dptradeoff.problems.user import user_problem

    domain = {name: {"low": 0.1, "high": 1.0}, "clip": {"low": 0.1, "high": 1.0}}
    with pytest.raises(UserError, match=rf"problems\.p\.domain\.{name}: the name '{name}' is a result column .* rename "
                                        rf"the hyperparameter"):
        user_problem("p", {"oracle": "tests/user_problems/gaussian_mean.py", "domain": domain})


def test_the_reserved_names_cover_every_column_an_evaluation_writes():
    import pandas as pd

    from dptradeoff.problems.columns import EVALUATION_COLUMNS
    from dptradeoff.problems.evaluate import evaluate
    from dptradeoff.problems.user import user_problem

    domain = {"sigma": {"low": 0.001, "high": 1.0, "log": True}, "clip": {"low": 0.1, "high": 1.0}}
    problem = user_problem("p", {"oracle": "tests/user_problems/gaussian_mean.py", "domain": domain})
    rows = evaluate(problem, pd.DataFrame([{"sigma": 0.1, "clip": 0.5}]), None, 2, config_seed=0, method="random", run=0)
    assert set(rows.columns) - {"sigma", "clip"} == EVALUATION_COLUMNS


def test_a_user_oracles_vectorised_epsilons_reach_the_acquisition(tmp_path):
    import numpy as np

    from dptradeoff.bo import exact_privacy
    from dptradeoff.problems.user import user_problem

    oracle = tmp_path / "vectorised.py"
    oracle.write_text("import numpy as np\n\n"
                      "def epsilon(point, *, n, delta):\n    return point['eps']\n\n"
                      "def epsilons(points, *, n, delta):\n    return np.asarray(points)[:, 0]\n\n"
                      "def utility(point, data, rng):\n    return 0.5\n")
    problem = user_problem("v", {"oracle": str(oracle), "domain": {"eps": {"low": 0.1, "high": 1.0}}})
    model = exact_privacy.for_problem(problem, None, 5000, np.array([[0.5]]))
    assert isinstance(model, exact_privacy.VectorisedOracle)
    assert model.ranking(np.array([[0.3], [0.7]])).tolist() == [0.3, 0.7]


NON_FINITE_PREPARE = '''import dataclasses

import numpy as np


def prepare(data):   # log features: log(0) = -inf, log(-1) = NaN
    with np.errstate(divide="ignore", invalid="ignore"):
        return dataclasses.replace(data, x_train=np.log(data.x_train))


def epsilon(point, *, n, delta):
    return 1.0


def utility(point, data, rng):
    raise AssertionError("trained on non-finite features")
'''


def test_non_finite_features_stop_a_problem_of_your_own_before_any_training(tmp_path):
    """From its data file, or made by its oracle's prepare(): one sentence naming where, and the fix,
    before the first training (every training entry loads its data through `load_data` first).
    Training on them would have made every weight NaN, silently."""
    from dptradeoff import paths
    from dptradeoff.io import matrix_table, write_table
    from dptradeoff.problems.evaluate import load_data

    x = np.ones((6, 3))
    x[2, 1], x[4, 1] = 0.0, -1.0
    for part in ("train", "test"):
        write_table(matrix_table(x, np.arange(6) % 2), paths.data("adult", part, str(tmp_path)), {})
    oracle = tmp_path / "logged.py"
    oracle.write_text(NON_FINITE_PREPARE)
    problem = resolve("logged", {"oracle": str(oracle), "dataset": "adult", "domain": {"clip": {"low": 0.1, "high": 1.0}}})
    with pytest.raises(UserError) as stopped:
        load_data(problem, str(tmp_path))
    assert str(stopped.value) == (
        f"The prepare() of logged's oracle turns the finite features of {tmp_path}/adult/train.parquet into non-finite "
        "ones (NaN or inf) in 2 rows and 1 column, the first at row index 2, column index 1 of its training rows, which "
        "training turns into NaN weights; make prepare() return finite features (impute, clip or drop them).")
    x[5, 0] = np.nan
    write_table(matrix_table(x, np.arange(6) % 2), paths.data("adult", "train", str(tmp_path)), {})
    with pytest.raises(UserError, match=r"adult/train.parquet has non-finite features \(NaN or inf\) in 1 row and 1 "
                                        r"column, the first at row index 5, column index 0"):
        load_data(problem, str(tmp_path))
