"""`all` on the tiny configuration (tests/tiny.py): every rule of the pipeline, every figure and table, end to
end. The run is conftest's `tiny_all`, built once per session; each test here reads part of it."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dptradeoff.stats.tables import read

# the tiny `all` is built once per session (conftest's tiny_all); these tests read its outputs
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("tiny")]


@pytest.fixture(scope="module")
def work(tiny_all):
    work, done = tiny_all
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return work


def test_all_on_a_tiny_config_runs_with_clean_logs(tiny_all):
    work, done = tiny_all
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    # clean logs: no TensorFlow/CUDA start-up noise on the terminal or in any job log
    noise = ("Unable to register cu", "absl::InitializeLog", "oneDNN custom operations", "cpu_feature_guard",
             "Could not find cuda drivers", "TF-TRT")
    for text in [done.stdout + done.stderr] + [log.read_text() for log in (work / "logs").rglob("*.log")]:
        assert not any(n in text for n in noise), [line for line in text.splitlines() if any(n in line for n in noise)]


def test_paper_000_and_001_figures_and_tables(work):
    for n in range(1, 9):
        pdf = (work / f"figures/fig{n}.pdf").read_bytes()
        source = b"simulated queries" if n in (2, 4) else b"embedded"  # SVT has no dataset
        assert pdf.startswith(b"%PDF") and source in pdf and b"seed" in pdf, n  # provenance in the metadata
    assert (work / "figures/batch_vs_sequential.pdf").exists()
    table = read(str(work / "tables/table2.csv"))
    assert set(table["problem"]) == {"adult-logreg-sgd", "adult-logreg-adam", "adult-svm-sgd"}
    assert (table["parts"] == 2).all() and (table["part_size"] == 8).all()   # k0 + k: config.yaml's part_size budget
    # one row per problem and metric, the paper's values beside every metric's, the split of each difference
    assert set(table["metric"]) == {"raw", "log-epsilon", "region", "best-error@0.1", "best-error@0.3",
                                    "best-error@1", "best-error@3"} and len(table) == 3 * 7
    assert (table["paper_mean_difference"] > 0).all()
    parts = table["difference_from_points_better_than_floor"] + table["difference_from_points_at_or_above_floor"]
    assert np.allclose(parts, table["mean_difference"])
    assert table["error_floor"].between(0.2, 0.3).all()   # adult's majority-class error
    # every chain of dpareto.methods beside random and uniform sampling, on every problem
    quality = read(str(work / "tables/front_quality.csv"))
    assert set(quality["method"]) == {"dpareto", "optuna-tpe", "optuna-gp", "botorch", "random", "uniform"}
    assert len(quality) == 5 * 6 and (quality["evaluations"] == 8).all()
    assert quality["region"].between(0, 1).all() and (quality["region_gap_to_reference"] >= 0).all()
    assert quality["at_utility_floor"].between(0, 1).all() and quality["at_min_epsilon_corner"].between(0, 1).all()
    chains = quality[quality["method"] != "random"].dropna(subset=["seconds_per_proposal"])
    assert set(chains["method"]) == {"dpareto", "optuna-tpe", "optuna-gp", "botorch"}
    assert "embedded" in (work / "tables/table2.csv").read_text().splitlines()[0]
    overhead = read(str(work / "tables/overhead.csv"))
    assert len(overhead) == 5 and overhead["bo_fraction_of_iteration"].between(0, 1).all()
    assert (overhead["iterations"] == 4).all() and overhead["bo_share_of_study"].between(0, 1).all()
    assert (overhead["bo_share_of_study"] < overhead["bo_share_of_chain"]).all()   # the study trains more than the chain
    batch = read(str(work / "tables/batch_vs_sequential.csv"))
    assert set(batch["batch_size"]) == {1, 2}
    assert (work / "tables/table2.md").read_text().startswith("| problem")


def test_paper_004_figure_and_tables(work):
    assert (work / "figures/expost_fig1.pdf").read_bytes().startswith(b"%PDF")
    for n, rows in ((1, {"S8000", "Reddit"}), (2, {"S8000"}), (3, {"twitter", "mnist", "gisette"})):
        path = work / f"tables/expost_table{n}.csv"
        table = read(str(path))
        assert set(table["dataset"]) == rows and "source" in table and "trials" in table, n
        assert "Config:" in path.read_text().splitlines()[0]
    table1 = read(str(work / "tables/expost_table1.csv"))
    by_method = table1.set_index(["dataset", "method"])
    assert (table1["trials"] == 2).all() and by_method.loc[("S8000", "doubling"), "answers"] > 0
    # every method is labelled with its guarantee; the as-published mode with none; the default thread
    # order reads the true counts, and both the note and the guarantees say so
    assert by_method.loc[("S8000", "alg3_as_published"), "guarantee"].startswith("NONE")
    assert "ranking of the threads by count is public" in by_method.loc[("S8000", "alg3"), "guarantee"]
    assert "reads the private counts" in (work / "tables/expost_table1.csv").read_text().splitlines()[0]
    assert by_method.loc[("S8000", "doubling"), "paper_answers"] == 14.77
    assert "embedded" in by_method.loc[("Reddit", "doubling"), "source"]


def test_the_audit_table_and_figure(work):
    # the audit (docs/audit.md): two front points of adult-logreg-sgd and config.yaml's full-batch point,
    # white-box, each below its proof; the full-batch one quotes the (there exact) Gaussian fit
    audit = read(str(work / "tables/audit-adult-logreg-sgd.csv"))
    assert len(audit) == 3 and (audit["trainings"] == 80).all() and audit["audit"].str.startswith("white-box").all()
    assert (audit["epsilon_lb"] <= audit["epsilon"]).all() and (audit["epsilon"] > 0).all()
    assert np.allclose(audit["confidence"], 1 - 0.05 / 3)    # Bonferroni: the three rows hold together at 95 %
    assert (audit["estimator"] == "composed steps").all() and audit["estimator_other"].str.startswith("clopper-pearson").all()
    assert (work / "figures/audit-adult-logreg-sgd.pdf").read_bytes().startswith(b"%PDF")
    assert "PRIVACY VIOLATION" not in (work / "tables/front-adult-logreg-sgd.md").read_text()


def test_the_release(work):
    # the release (docs/release.md): adult LogReg+SGD from its front on a 20 % tuning split, total epsilon 1

    record = json.loads((work / "results/release/adult-logreg-sgd/release.json").read_text())
    assert record["guarantee"]["epsilon"] <= 1.0 and record["guarantee"]["delta"] == 1e-5
    assert 0 < record["eps0"] < record["guarantee"]["epsilon"] and 0.5 < record["test_utility"] <= 1
    assert record["tuning"]["problem"] == "adult-logreg-sgd-tuning"
    assert "4341 of 21707 training rows (given up" in record["tuning"]["rows"]
    assert "13893 training + 3473 validation" in record["private_rows"]
    assert (work / "results/release/adult-logreg-sgd/model.npz").exists()
    quantities = read(str(work / "tables/release-adult-logreg-sgd.csv"))["quantity"].tolist()
    assert not any("trials" in q or "reference" in q for q in quantities)          # kept apart, private
    assert "trials_run" not in json.dumps(record) and "reference_without" not in json.dumps(record)
    diagnostics = json.loads((work / "results/release/adult-logreg-sgd/diagnostics.json").read_text())
    assert diagnostics["trials_run"] >= 1 and diagnostics["keep_private"].startswith("NOT covered")
    assert (work / "figures/release-adult-logreg-sgd.pdf").read_bytes().startswith(b"%PDF")


def test_paper_003_and_002_figures_and_tables(work):
    # papers 003 and 002
    for name in ("proposetest_fig1", "proposetest_fig2", "taylor_fig1", "taylor_fig2"):
        assert (work / f"figures/{name}.pdf").read_bytes().startswith(b"%PDF"), name
    adult = read(str(work / "tables/proposetest_adult.csv"))
    assert len(adult) == 1 and adult["epsilon_total"].iloc[0] >= adult["epsilon_total_realised_not_a_guarantee"].iloc[0] > 1.0
    taylor = read(str(work / "tables/taylor_table1.csv"))
    assert len(taylor) == 12 and set(zip(taylor["reading"], taylor["derivative"])) == {
        ("default", "eq6"), ("paper", "eq6"), ("paper", "unrolled")}
