"""The oracle fan-out, run by Snakemake on a tiny config."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest
import yaml

from dptradeoff.io import read_provenance
from dptradeoff.privacy import dpsgd

pytestmark = pytest.mark.slow


def test_random_sample_fanned_out_and_gathered(run_snakemake, tmp_path):
    """Runs Snakemake itself: untraced and under the classic conversion, where the tiny all is traced and uses
    dp_accounting's."""
    cfg = {
        # untraced: one row per point (tests/test_pipeline_traces.py runs the traced random run)
        "dpareto": {"problems": ["adult-logreg-sgd", "mnist-mlp2-sgd", "svt"], "initial_points": 4, "traces": False},
        "problems": {"adult-logreg-sgd": {"repeats": 2, "ranges": {"epochs": [1, 2]}},
                     "mnist-mlp2-sgd": {"repeats": 1, "ranges": {"epochs": [1, 1], "lot_size": [200, 4000]}},
                     "svt": {"repeats": 10}},
        "random_sampling": {"points": 5, "points_per_job": 2},
        "privacy": {"accountant": "rdp", "conversion": "classic"},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    work = tmp_path / "work"
    targets = [f"results/dpareto/{p}/random/0/evaluations.parquet" for p in cfg["dpareto"]["problems"]]
    done = run_snakemake(work, *targets, "--cores", "2", "--configfile", str(path))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    for problem, target in zip(cfg["dpareto"]["problems"], targets):
        table = pq.read_table(work / target).to_pandas()
        assert table["index"].tolist() == [0, 1, 2, 3, 4]
        assert (table["problem"] == problem).all() and (table["epsilon"] > 0).all()
        assert table["utility"].between(0, 1).all()
        # 5 points, 2 per job: batches 0, 1, 2
        assert sorted(p.name for p in (work / target).parent.glob("evals/*.parquet")) == ["0.parquet", "1.parquet", "2.parquet"]
    meta = read_provenance(work / targets[0])
    assert "embedded" in meta["source_label"] and meta["repeats"] == 2
    assert pq.read_table(work / targets[0]).to_pandas()["epochs"].max() <= 2
    # privacy.accountant rdp and its conversion reach the oracle: every DP-SGD epsilon is WBK19's, classically converted
    adult = pq.read_table(work / targets[0]).to_pandas()
    n_train = pq.read_metadata(work / "results/data/adult/train.parquet").num_rows
    assert (adult["conversion"] == "classic").all()
    for row in adult.itertuples():
        classic = dpsgd.epsilon(n_train, row.lot_size, row.epochs, row.noise, row.delta, "classic")
        assert row.epsilon == classic > dpsgd.epsilon(n_train, row.lot_size, row.epochs, row.noise, row.delta)
