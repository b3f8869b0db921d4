"""Bad input stops with one clear sentence and leaves nothing half-written."""
from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile

import numpy as np
import pytest
import yaml

from dptradeoff import UserError
from dptradeoff.data.archives import extract_member
from dptradeoff.data.build import build
from dptradeoff.data.dataset import DatasetSettings
from dptradeoff.data.download import fetch
from dptradeoff.io import matrix_table, read_matrix, write_table
from upstream import files


def test_checksum_mismatch_names_file_and_both_hashes_and_leaves_nothing(http_server, tmp_path):
    root, base = http_server
    (root / "adult.data").write_bytes(b"not the real file\n")
    actual = hashlib.sha256(b"not the real file\n").hexdigest()
    expected = "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"
    out = tmp_path / "raw" / "adult.data"
    with pytest.raises(UserError) as err:
        fetch({"urls": [f"{base}/adult.data"], "sha256": expected}, out)
    message = str(err.value)
    assert "adult.data" in message and expected in message and actual in message
    assert message.count(". ") == 0  # one sentence
    assert not out.exists() and list(out.parent.iterdir()) == []


def test_md5_mismatch_is_an_error_too(http_server, tmp_path):
    root, base = http_server
    (root / "f.gz").write_bytes(b"abc")
    with pytest.raises(UserError, match="md5"):
        fetch({"urls": [f"{base}/f.gz"], "md5": "0" * 32}, tmp_path / "f.gz")
    assert not (tmp_path / "f.gz").exists()


def test_unreachable_urls_give_one_clear_error(http_server, tmp_path):
    _, base = http_server
    with pytest.raises(UserError, match="Could not download x.bin"):
        fetch({"urls": [f"{base}/nope/x.bin"]}, tmp_path / "x.bin")
    assert not (tmp_path / "x.bin").exists()


def _tar_with(name: str, payload: bytes = b"evil") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo(name)
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))
        ok = tarfile.TarInfo("regression/Twitter/Twitter.data")
        ok.size = 3
        tf.addfile(ok, io.BytesIO(b"1,2"))
    return buf.getvalue()


@pytest.mark.parametrize("evil", ["../evil.txt", "regression/../../evil.txt", "/tmp/evil-abs.txt"])
def test_tar_member_escaping_the_target_is_refused(tmp_path, evil):
    archive = tmp_path / "regression.tar.gz"
    archive.write_bytes(_tar_with(evil))
    target = tmp_path / "out"
    with pytest.raises(UserError, match="escapes"):
        extract_member(archive, "regression/Twitter/Twitter.data", target)
    assert not (tmp_path / "evil.txt").exists()
    assert not (target / "regression" / "Twitter" / "Twitter.data").exists()


def test_tar_symlink_escaping_the_target_is_refused(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        link = tarfile.TarInfo("regression/Twitter/Twitter.data")
        link.type = tarfile.SYMTYPE
        link.linkname = "../../../../etc/passwd"
        tf.addfile(link)
    archive = tmp_path / "r.tar.gz"
    archive.write_bytes(buf.getvalue())
    with pytest.raises(UserError, match="escapes"):
        extract_member(archive, "regression/Twitter/Twitter.data", tmp_path / "out")


def test_zip_member_escaping_the_target_is_refused(tmp_path):
    archive = tmp_path / "corpus.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../evil.json", "{}")
        zf.writestr("corpus-webis-tldr-17.json", "{}")
    with pytest.raises(UserError, match="escapes"):
        extract_member(archive, "corpus-webis-tldr-17.json", tmp_path / "out")
    assert not (tmp_path / "out" / "corpus-webis-tldr-17.json").exists()


def test_safe_archive_extracts(tmp_path):
    archive = tmp_path / "regression.tar.gz"
    archive.write_bytes(_tar_with("regression/README"))
    out = extract_member(archive, "regression/Twitter/Twitter.data", tmp_path / "out")
    assert out.read_bytes() == b"1,2"


def test_a_nan_or_infinite_feature_stops_the_build_naming_where_and_writes_neither_split(tmp_path):
    """Gisette's real files with a NaN and an inf in its test rows: the train rows, fine and built first,
    are not written either. Training on them would have made every weight NaN (0 * inf), silently."""
    made = files.gisette_files(3, 3)
    rows = [line.split() for line in made["gisette_valid.data"].decode().splitlines()]
    rows[1][4], rows[2][9] = "nan", "-inf"
    made["gisette_valid.data"] = "".join(" ".join(r) + " \n" for r in rows).encode()
    inputs = []
    for name, content in made.items():
        (tmp_path / name).write_bytes(content)
        inputs.append(str(tmp_path / name))
    out = tmp_path / "results"
    with pytest.raises(UserError) as stopped:
        build("gisette", DatasetSettings(source="real"), 0, inputs,
              {"train": str(out / "train.parquet"), "test": str(out / "test.parquet")})
    assert str(stopped.value) == (
        "The test rows of gisette read from gisette_train.data, gisette_train.labels, gisette_valid.data, "
        "gisette_valid.labels have non-finite features (NaN or inf) in 2 rows and 2 columns, the first at row index 1, "
        "column index 4, so nothing was written; fix or drop those values in the source and rebuild.")
    assert not out.exists() or not any(out.iterdir())


def test_a_data_file_with_a_non_finite_feature_stops_its_reader_naming_it(tmp_path):
    x = np.ones((5, 3))
    x[3, 2] = np.inf
    write_table(matrix_table(x, np.zeros(5)), tmp_path / "train.parquet", {})
    with pytest.raises(UserError, match=r"train.parquet has non-finite features \(NaN or inf\) in 1 row and 1 column, "
                                        r"the first at row index 3, column index 2, which training turns into NaN weights; "
                                        r"delete it and rebuild it"):
        read_matrix(tmp_path / "train.parquet")


@pytest.mark.parametrize(
    "override, key",
    [
        ({"datasets": {"adult": {"sorce": "real"}}}, "datasets.adult.sorce"),
        ({"sed": 3}, "sed"),
        ({"seed": "three"}, "seed"),
        ({"datasets": {"twitter": {"subsample": 1.5}}}, "datasets.twitter.subsample"),
        ({"datasets": {"mnist": {"source": "internet"}}}, "datasets.mnist.source"),
        ({"random_sampling": {"points": 8, "points_per_job": 4}}, "random_sampling.points (8) is smaller than dpareto"),
    ],
)
def test_bad_config_stops_the_run_naming_the_key(run_snakemake, tmp_path, override, key):
    """Runs Snakemake itself: a bad config must stop a dry run."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(override))
    done = run_snakemake(tmp_path / "work", "all", "-n", "--configfile", str(bad))
    assert done.returncode != 0
    out = done.stdout + done.stderr
    assert key in out, out[-2000:]
    assert "Traceback" not in out
    assert not (tmp_path / "work" / "results").exists()
