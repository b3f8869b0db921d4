"""Canonical real sources: URLs (first is canonical, the rest mirrors) and pinned checksums.

Where upstream publishes no checksum (Twitter's regression.tar.gz, KDD Cup's UCI copy has
sha256 only through scikit-learn's mirror) the file is downloaded unverified and the sha256 of
what was downloaded is recorded in every Parquet file built from it. Any entry can be
overridden per file in the config (`datasets.<name>.files.<file>`), e.g. to point at a local copy.
"""
from __future__ import annotations

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"

REAL_FILES: dict[str, dict[str, dict]] = {
    "adult": {
        "adult.data": {"urls": [f"{UCI}/adult/adult.data"],
                       "sha256": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"},
        "adult.test": {"urls": [f"{UCI}/adult/adult.test"],
                       "sha256": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05"},
    },
    "mnist": {
        name: {"urls": [f"https://ossci-datasets.s3.amazonaws.com/mnist/{name}",
                        f"https://storage.googleapis.com/cvdf-datasets/mnist/{name}"],
               "md5": md5}
        for name, md5 in {
            "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
            "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
            "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
            "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
        }.items()
    },
    "gisette": {
        "gisette_train.data": {"urls": [f"{UCI}/gisette/GISETTE/gisette_train.data"],
                               "sha256": "6d4c5e998afe67937b9e77a3334e03c85e545ebc65a6eb1333ffc14125cfc389"},
        "gisette_train.labels": {"urls": [f"{UCI}/gisette/GISETTE/gisette_train.labels"],
                                 "sha256": "42bd681fe51b161f033df773df14a0116e492676555ab14616c1b72edc054075"},
        "gisette_valid.data": {"urls": [f"{UCI}/gisette/GISETTE/gisette_valid.data"],
                               "sha256": "5cea897956dd172a006132738254a27a8f61ecc1ceb6f5b20639c281d2942254"},
        "gisette_valid.labels": {"urls": [f"{UCI}/gisette/gisette_valid.labels"],
                                 "sha256": "a6b857a0448023f033c4dda2ef848714b4be2ae45ce598d088fb3efb406e08c5"},
    },
    "reddit": {
        "corpus-webis-tldr-17.zip": {"urls": ["https://zenodo.org/record/1043504/files/corpus-webis-tldr-17.zip"],
                                     "sha256": "c1a0f8c4374c7314d3c9ec50dd505303c536062d87037d4dca7035b89b36938a"},
    },
    "twitter": {
        "regression.tar.gz": {"urls": [f"{UCI}/00248/regression.tar.gz"]},
    },
    "kddcup99": {
        "kddcup.data_10_percent.gz": {"urls": [f"{UCI}/kddcup99-mld/kddcup.data_10_percent.gz",
                                               "https://ndownloader.figshare.com/files/5976042"],
                                      "sha256": "8045aca0d84e70e622d1148d7df782496f6333bf6eb979a1b0837c42a9fd9561"},
    },
}

TWITTER_MEMBER = "regression/Twitter/Twitter.data"

DATASETS = tuple(REAL_FILES)


def file_specs(dataset: str, overrides: dict | None = None) -> dict[str, dict]:
    """The real files of `dataset`, each spec merged with its per-file override from the config."""
    overrides = overrides or {}
    unknown = set(overrides) - set(REAL_FILES[dataset])
    if unknown:
        from .. import UserError
        raise UserError(f"datasets.{dataset}.files has unknown file(s) {sorted(unknown)}; the files of {dataset} are {sorted(REAL_FILES[dataset])}.")
    return {name: {**spec, **overrides.get(name, {})} for name, spec in REAL_FILES[dataset].items()}
