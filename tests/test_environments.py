"""Packages a user's algorithm needs: beside the pipeline's pins (envs/extra-requirements.txt, a conflict
refused before anything is installed), or in the problem's own environment, where its oracle runs in a
worker process (problems.<name>.environment). Offline: pip reads a local wheelhouse (the numpy 2 wheel
envs/setup.sh downloads, and wheels built here), never an index."""
from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptradeoff import UserError, environments
from dptradeoff.problems.evaluate import evaluate
from dptradeoff.problems.oracle import Data

HERE = Path(__file__).parent
REPO = HERE.parent
sys.path.insert(0, str(HERE / "user_problems"))   # the in-process reference imports the oracle's sibling model
import centroid_model  # noqa: E402

# one xdist worker: its module fixtures build environments once
pytestmark = pytest.mark.xdist_group("environments")

ORACLE = "tests/user_problems/numpy2_centroid.py:NumpyTwoCentroid"
DOMAIN = {"eps": {"low": 0.01, "high": 10.0, "log": True}, "clip": {"low": 0.05, "high": 5.0, "log": True}}
NEEDS_NUMPY2 = '''"""Needs numpy >= 2: refuses to import under numpy 1, and uses numpy 2's vector_norm."""
import numpy as np

if int(np.__version__.split(".")[0]) < 2:
    raise ImportError(f"needs_numpy2 needs numpy >= 2, found {np.__version__}")


def l1_norms(x):
    return np.linalg.vector_norm(x, ord=1, axis=1)
'''


def _wheel(folder: Path, name: str, version: str, requires: list[str], files: dict[str, str]) -> Path:
    """A minimal pure-Python wheel (what `pip wheel` would build), written by hand: no build backend needed."""
    dist = f"{name.replace('-', '_')}-{version}"
    info = f"{dist}.dist-info"
    content = dict(files)
    content[f"{info}/METADATA"] = "Metadata-Version: 2.1\n" f"Name: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    content[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: dptradeoff-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for path, text in content.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    content[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name_in_zip, text in content.items():
            archive.writestr(name_in_zip, text)
    return path


@pytest.fixture(scope="module")
def offline_pip(tmp_path_factory):
    """pip reads only a local wheelhouse; problems' environments are built in a temporary folder."""
    house = tmp_path_factory.mktemp("wheelhouse")
    numpy_two = sorted((REPO / ".venv" / "test-wheels").glob("numpy-2*.whl"))
    assert numpy_two, "envs/setup.sh downloads the numpy 2 wheel into .venv/test-wheels; run ./in-env true"
    shutil.copy(numpy_two[0], house)
    _wheel(house, "needs-numpy2", "0.1", ["numpy>=2"], {"needs_numpy2/__init__.py": NEEDS_NUMPY2})
    _wheel(house, "plain-extra", "0.1", [], {"plain_extra/__init__.py": "VALUE = 1\n"})
    saved = {k: os.environ.get(k) for k in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "DPTRADEOFF_ENVS")}
    os.environ.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(house), DPTRADEOFF_ENVS=str(tmp_path_factory.mktemp("envs")))
    yield house
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _requirements(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "requirements.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_package_that_needs_numpy_2_is_refused_beside_the_pins_before_anything_is_installed(
        offline_pip, tmp_path, monkeypatch):
    commands = []
    run = environments._run

    def only_dry_runs(command, env=None):   # an install that is not a dry run would replace the pinned numpy
        commands.append(command)
        assert "--dry-run" in command, f"would install: {command}"
        return run(command, env)

    monkeypatch.setattr(environments, "_run", only_dry_runs)
    with pytest.raises(UserError, match=r"cannot be installed beside the pipeline's pinned packages \(pip: .*numpy") as err:
        environments.install_extra(_requirements(tmp_path, "needs-numpy2==0.1"))
    assert "nothing was installed" in str(err.value) and "problems.<name>.environment" in str(err.value)
    assert str(err.value).count(". ") == 0                      # one sentence
    assert len(commands) == 1
    assert np.__version__ == "1.26.4"
    version = subprocess.run([sys.executable, "-c", "import numpy; print(numpy.__version__)"], capture_output=True,
                             text=True).stdout.strip()
    assert version == "1.26.4"


def test_a_package_that_accepts_the_pins_passes_the_dry_run(offline_pip, tmp_path):
    environments.install_extra(_requirements(tmp_path, "plain-extra==0.1"), dry_run_only=True)


def test_setup_installs_the_extra_requirements_file_with_the_pins():
    script = (REPO / "envs" / "setup.sh").read_text()
    assert "envs/extra-requirements.txt" in script and "dptradeoff.environments extra" in script
    assert "extra-requirements.txt" in script.split("stamp=")[1].split("\n")[1]   # a change reinstalls


def _entry(requirements: str) -> dict:
    return {"oracle": ORACLE, "environment": requirements, "domain": DOMAIN, "repeats": 3}


@pytest.fixture(scope="module")
def own_problem(offline_pip, tmp_path_factory):
    from dptradeoff.problems.user import user_problem

    requirements = tmp_path_factory.mktemp("req") / "centroid.txt"
    requirements.write_text("needs-numpy2==0.1\n")
    return user_problem("centroid", _entry(str(requirements)))


def _data(seed=0, n=400, d=5) -> Data:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=2 * n)
    x = rng.normal(size=(2 * n, d)) + y[:, None] * 0.8
    x /= np.abs(x).sum(axis=1, keepdims=True)
    return Data(x[:n], y[:n], x[n:], y[n:], "synthetic", "synthetic rows")


def _reference_utilities(point, data, repeats, rng):
    """The oracle's utilities computed here, under numpy 1, from the same Generator."""
    seeds = rng.integers(0, 2**62, size=repeats)
    norms = np.abs(data.x_train).sum(axis=1)
    return np.array([centroid_model.accuracy(centroid_model.train(data.x_train, data.y_train, point["eps"],
                                                                  point["clip"], norms, np.random.default_rng(int(s))),
                                             data.x_test, data.y_test) for s in seeds])


def test_an_oracle_in_its_own_environment_runs_under_numpy_2_and_draws_what_it_would_draw_here(own_problem):
    from dptradeoff.problems.user import load_object

    with pytest.raises(UserError, match="No module named 'needs_numpy2'"):   # it cannot run beside the pins
        load_object(ORACLE, "problems.centroid.oracle")
    data, point = _data(), {"eps": 2.0, "clip": 1.0}
    rng, same = np.random.default_rng(7), np.random.default_rng(7)
    measured = own_problem.oracle.utilities(point, data, 3, rng)
    assert np.allclose(measured, _reference_utilities(point, data, 3, same), rtol=0, atol=1e-12)
    assert rng.bit_generator.state == same.bit_generator.state
    one, here = np.random.default_rng(11), np.random.default_rng(11)   # one call: its Generator comes back advanced
    value = own_problem.oracle.target.utility(point, data, one)
    expected = centroid_model.accuracy(centroid_model.train(data.x_train, data.y_train, 2.0, 1.0,
                                                            np.abs(data.x_train).sum(axis=1), here), data.x_test, data.y_test)
    assert value == pytest.approx(expected, abs=1e-12) and one.bit_generator.state == here.bit_generator.state
    assert own_problem.oracle.epsilon(point, n=data.n_train, delta=1e-5) == 2.0
    assert own_problem.oracle.neighbouring == "replace-one"
    assert own_problem.oracle.trivial_utility(data) == pytest.approx(np.mean(data.y_test == 1) if data.y_train.mean() >= 0.5
                                                                     else np.mean(data.y_test == 0))


def test_evaluation_rows_of_an_oracle_in_its_own_environment_are_those_of_any_problem(own_problem):
    points = pd.DataFrame([{"eps": 0.05, "clip": 1.0}, {"eps": 5.0, "clip": 1.0}])
    rows = evaluate(own_problem, points, _data(), 3, config_seed=1, method="random", run=0)
    assert list(rows["epsilon"]) == [0.05, 5.0] and rows["failure"].isna().all()
    assert rows["utility"].iloc[1] > rows["utility"].iloc[0]     # more epsilon, less noise
    again = evaluate(own_problem, points, _data(), 3, config_seed=1, method="random", run=0)
    assert list(again["utility_runs"].map(tuple)) == list(rows["utility_runs"].map(tuple))   # seeded like any problem


def test_an_exception_in_the_workers_oracle_is_a_failed_point_named_by_its_own_class(own_problem):
    points = pd.DataFrame([{"eps": 1.0, "clip": 1.0}])
    rows = evaluate(own_problem, points, None, 2, config_seed=1, method="random", run=0)   # no data: the oracle raises
    assert rows["failure"].iloc[0].startswith("utility oracle: AttributeError: ")
    assert np.isnan(rows["utility"].iloc[0])


def test_an_oracle_in_its_own_environment_can_be_released(own_problem):
    from dptradeoff.privacy.accountant import Accountant
    from dptradeoff.privacy.events import EpsilonDpEvent
    from dptradeoff.release.trainers import calibrated, check_releasable, oracle_target, training_event, weights

    check_releasable(own_problem)
    assert training_event(own_problem, {"eps": 0.3, "clip": 1.0}, 100) == EpsilonDpEvent(0.3)
    point, eps = calibrated(own_problem, Accountant(), {"eps": 4.0, "clip": 1.0}, n=100, epsilon=0.7, delta=1e-5)
    assert point == {"eps": 0.7, "clip": 1.0} and eps == 0.7
    data = _data()
    target = oracle_target(own_problem)
    model = target.train(point, data, np.random.default_rng(3))
    assert 0 <= target.score(model, data) <= 1
    saved = weights(own_problem, model)
    assert saved["centroids"].shape == (2, data.x_train.shape[1])


def test_an_oracle_in_its_own_environment_can_be_audited(own_problem):
    """Its worker forwards losses(): the black-box one-run audit trains there once and reads the canaries'
    losses, which equal the ones the same model gives here."""
    from dptradeoff.audit import blackbox
    from dptradeoff.release.trainers import oracle_target

    data, point = _data(), {"eps": 1.0, "clip": 1.0}
    target = oracle_target(own_problem)
    model = target.train(point, data, np.random.default_rng(3))
    here = centroid_model.train(data.x_train, data.y_train, 1.0, 1.0, np.abs(data.x_train).sum(axis=1),
                                np.random.default_rng(3))
    assert np.allclose(target.losses(model, data), centroid_model.losses(here, data.x_test, data.y_test), atol=1e-12)
    result = blackbox.one_run(own_problem, point, data, np.random.default_rng(4), canaries=100, guesses=20, delta=1e-5)
    assert result.trainings == 1 and result.guesses == 20 and 0 <= result.epsilon_lb <= 1.0


def test_a_missing_requirements_file_or_a_failing_install_is_one_sentence(offline_pip, tmp_path):
    from dptradeoff.problems.user import user_problem

    with pytest.raises(UserError, match=r"problems\.c\.environment names the file nowhere\.txt, which is in neither"):
        user_problem("c", _entry("nowhere.txt"))
    with pytest.raises(UserError, match=r"problems\.c\.environment: installing .* failed \(pip: .*no-such-package"):
        user_problem("c", _entry(_requirements(tmp_path, "no-such-package==9.9")))


def test_an_oracle_file_imports_modules_beside_it():
    from dptradeoff.problems.user import user_problem

    sys.modules.pop("centroid_model", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if p != str(HERE / "user_problems")]
    try:
        problem = user_problem("sibling", {"oracle": "tests/user_problems/sibling_import.py", "domain": DOMAIN})
    finally:
        sys.path[:] = saved
    assert problem.oracle.utilities({"eps": 5.0, "clip": 1.0}, _data(), 2, np.random.default_rng(0)).shape == (2,)


@pytest.mark.slow
def test_a_problem_in_its_own_environment_runs_through_the_workflow_and_is_released(offline_pip, tmp_path, run_snakemake):
    """The README's steps with a library that needs numpy >= 2: random sampling and a DPareto chain of
    its tuning split through Snakemake (Parquet rows, a rerun that finds nothing to do), then the release.
    Runs Snakemake itself: its problem runs in an environment of its own, and a second run must find nothing to do."""
    import json

    import yaml

    from dptradeoff.problems.tables import read_frame

    requirements = tmp_path / "centroid.txt"
    requirements.write_text("needs-numpy2==0.1\n")
    config = {
        "studies": ["release"],
        # one point a round (this oracle is cheap enough for batch rounds: tests/test_pipeline_user_problems.py's)
        "dpareto": {"initial_points": 6, "iterations": 3, "candidates": 200, "gp_restarts": 1, "batch_rounds": False},
        "problems": {"centroid": {**_entry(str(requirements)), "dataset": "adult", "repeats": 2}},
        "random_sampling": {"points": 6, "points_per_job": 3, "uniform": False},
        "release": {"problem": "centroid", "tuning": {"split": 0.3}, "validation": 0.25, "epsilon": 1.0, "delta": 1e-5,
                    "selection": {"method": "random-stopping", "eta": 1.0, "mean_trials": 2}, "score_noise": 0.05,
                    "candidates": {"max": 3, "perturbations": 0, "scale": 0.2}},
    }
    path = tmp_path / "centroid.yaml"
    path.write_text(yaml.safe_dump(config))
    work = tmp_path / "work"
    done = run_snakemake(work, "all", "--cores", "2", f"--configfile={path}", timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    ran = {p.name for p in (work / "results/dpareto/centroid-tuning").iterdir()}
    assert ran == {"random", "dpareto"}                                   # DPareto only, by default
    chain = read_frame(str(work / "results/dpareto/centroid-tuning/dpareto/0/evaluations.parquet"))
    assert len(chain) == 9 and chain["failure"].isna().all() and (chain["epsilon"] == chain["eps"]).all()
    record = json.loads((work / "results/release/centroid/release.json").read_text())
    released = record["released"]
    assert record["guarantee"]["epsilon"] <= 1.0
    assert released["hyperparameters"]["eps"] == released["training_epsilon"] <= record["eps0"]
    assert set(np.load(work / "results/release/centroid/model.npz").files) == {"centroids"}
    again = run_snakemake(work, "all", "--cores", "2", f"--configfile={path}", timeout=600)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_the_diffprivlib_example_states_its_privacy_as_the_release_needs():
    """examples/diffprivlib_logreg.py without diffprivlib (which needs numpy 2): its rows scaled to norm
    <= 1 (diffprivlib's data_norm), its pure-epsilon event and calibrate, its trivial predictor; and the
    example config validates with its problem releasable."""
    import yaml

    from dptradeoff.config import SCHEMA
    from dptradeoff.privacy.accountant import Accountant
    from dptradeoff.privacy.descriptions import event_from_description
    from dptradeoff.problems.user import load_object

    oracle = load_object("examples/diffprivlib_logreg.py:DiffprivlibLogisticRegression", "example")()
    data = _data()
    data = Data(data.x_train * 40, data.y_train, data.x_test * 40, data.y_test, "s", "s")
    prepared = oracle.prepare(data)
    assert np.linalg.norm(prepared.x_train, axis=1).max() <= 1 + 1e-12
    point = {"eps": 3.0, "C": 1.0}
    assert oracle.epsilon(point, n=100, delta=0.0) == 3.0
    assert Accountant().epsilon(event_from_description(oracle.event(point, n=100)), 1e-5) == 3.0
    assert oracle.calibrate(point, n=100, epsilon=0.25, delta=1e-5) == {"eps": 0.25, "C": 1.0}
    assert 0.5 <= oracle.trivial_utility(prepared) <= 1
    import jsonschema
    from snakemake.utils import update_config

    with open("config/config.yaml") as f:
        merged = yaml.safe_load(f)
    with open("config/examples/diffprivlib-logreg.yaml") as f:
        example = yaml.safe_load(f)
    update_config(merged, example)   # as Snakemake merges it (resolving it would build the environment: online)
    with open(SCHEMA) as f:
        jsonschema.validate(merged, yaml.safe_load(f))
    assert example["problems"]["diffprivlib-logreg"]["environment"] == "examples/diffprivlib-requirements.txt"
    assert "numpy==2" in Path("examples/diffprivlib-requirements.txt").read_text()


def test_one_worker_serves_every_resolution_of_a_problem_in_a_process(own_problem, offline_pip, tmp_path_factory):
    """A problem is resolved again for every evaluation and round: each must not start a worker of its own."""
    from dptradeoff.problems.user import user_problem

    requirements = tmp_path_factory.getbasetemp() / "req0" / "centroid.txt"
    again = user_problem("centroid", _entry(str(requirements)))
    assert again.oracle.target is own_problem.oracle.target
