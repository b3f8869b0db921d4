"""How configfiles merge over config/config.yaml: key by key, except the mappings that hold one of several
alternatives (`dptradeoff.config.ALTERNATIVES`: release.tuning), which the last configfile or --config
override that sets one replaces whole; the same in `dptradeoff` commands (`config.load`) and in Snakemake."""
from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from dptradeoff.config import load

DOMAIN = {"epochs": {"low": 1, "high": 4, "integer": True}, "lot_size": {"low": 8, "high": 64, "integer": True},
          "learning_rate": {"low": 0.001, "high": 0.1, "log": True}, "noise": {"low": 0.5, "high": 8, "log": True},
          "clip": {"low": 0.1, "high": 4, "log": True}}


def _public_tuning(tmp_path) -> dict:
    """adult LogReg+SGD released from the front of a DP-SGD logistic regression on a file declared public."""
    rng = np.random.default_rng(0)
    csv = tmp_path / "public.csv"
    pd.DataFrame({"a": rng.random(60), "b": rng.random(60), "y": rng.integers(0, 2, 60)}).to_csv(csv, index=False)
    return {"datasets": {"my-public": {"source": "file", "path": str(csv), "label": "y"}},
            "problems": {"my-public-logreg": {"oracle": "dptradeoff.problems.builtin:LinearDPSGD",
                                              "options": {"optimizer": "sgd", "loss": "logistic"},
                                              "dataset": "my-public", "domain": DOMAIN}},
            "release": {"tuning": {"public": "my-public-logreg"}}}


def _write(path, config: dict) -> str:
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_the_last_configfile_or_override_that_sets_release_tuning_replaces_it_whole(tmp_path):
    public = _write(tmp_path / "public.yaml", _public_tuning(tmp_path))
    config = load([public])
    assert config["release"]["tuning"] == {"public": "my-public-logreg"}   # not {split: 0.2, public: ...}
    assert "adult-logreg-sgd-tuning" not in config["problems"]
    # a later configfile that leaves release.tuning alone keeps the last one that set it; other keys still merge
    epsilon = _write(tmp_path / "epsilon.yaml", {"release": {"epsilon": 2.0}})
    config = load([public, epsilon])
    assert config["release"]["tuning"] == {"public": "my-public-logreg"} and config["release"]["epsilon"] == 2.0
    assert config["release"]["delta"] == 1e-5
    # back to a split: the public problem is not inherited beside it
    split = _write(tmp_path / "split.yaml", {"release": {"tuning": {"split": 0.3}}})
    assert load([public, split])["release"]["tuning"] == {"split": 0.3}
    assert load([public], overrides={"release": {"tuning": {"split": 0.4}}})["release"]["tuning"] == {"split": 0.4}


def test_a_snakemake_run_takes_release_tuning_whole_from_its_configfile(run_snakemake, tmp_path):
    """Runs Snakemake itself: the merge of --configfile over config/config.yaml is Snakemake's own, and the
    replacement happens in the workflow (workflow/rules/setup.smk); a dry run shows the plan it makes."""
    config = _write(tmp_path / "public.yaml", {**_public_tuning(tmp_path), "studies": ["release"]})
    done = run_snakemake(tmp_path / "work", "all", "-n", "--summary", f"--configfile={config}")
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    # the release of adult from the public problem's chain, and no tuning split of adult
    assert "results/release/adult-logreg-sgd/release.json" in done.stdout
    assert "results/dpareto/my-public-logreg/dpareto/0/evaluations.parquet" in done.stdout
    assert "adult-logreg-sgd-tuning" not in done.stdout
