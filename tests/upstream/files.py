"""Tiny files in the exact upstream formats of the six datasets (byte for byte the same layout)."""
from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile

import numpy as np

ADULT_ROWS = [
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K",
    "50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, <=50K",
    "52, ?, 209642, HS-grad, 9, Married-civ-spouse, ?, Husband, White, Male, 0, 0, 45, ?, >50K",
    "31, Private, 45781, Masters, 14, Never-married, Prof-specialty, Not-in-family, White, Female, 14084, 0, 50, United-States, >50K",
]


def adult_data() -> bytes:
    return ("\n".join(ADULT_ROWS) + "\n\n").encode()


def adult_test() -> bytes:
    rows = [r + "." for r in ADULT_ROWS[:3]]  # adult.test's labels end in '.'
    return ("|1x3 Cross validator\n" + "\n".join(rows) + "\n").encode()


def idx(array: np.ndarray) -> bytes:
    magic = (0x08 << 8) | array.ndim
    header = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return gzip.compress(header + array.astype(np.uint8).tobytes())


def mnist_files(n_train=6, n_test=3) -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    out = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        out[f"{prefix}-images-idx3-ubyte.gz"] = idx(rng.integers(0, 256, size=(n, 28, 28)))
        out[f"{prefix}-labels-idx1-ubyte.gz"] = idx(rng.integers(0, 10, size=n))
    return out


def gisette_files(n_train=4, n_valid=2) -> dict[str, bytes]:
    rng = np.random.default_rng(1)
    out = {}
    for split, n in (("train", n_train), ("valid", n_valid)):
        rows = rng.integers(0, 1000, size=(n, 5000)) * (rng.random((n, 5000)) < 0.1)
        out[f"gisette_{split}.data"] = "".join(" ".join(map(str, r)) + " \n" for r in rows).encode()
        out[f"gisette_{split}.labels"] = "".join(f"{l}\n" for l in rng.choice([-1, 1], size=n)).encode()
    return out


REDDIT_POSTS = [("alice", "python"), ("bob", "python"), ("alice", "python"), ("carol", "rust"), ("alice", "rust"), ("dave", "AskReddit")]


def reddit_zip() -> bytes:
    lines = "".join(json.dumps({"author": a, "body": "text " * 5, "subreddit": s, "id": str(i)}) + "\n"
                    for i, (a, s) in enumerate(REDDIT_POSTS))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("corpus-webis-tldr-17.json", lines)
    return buf.getvalue()


def twitter_tar(rows=10) -> bytes:
    rng = np.random.default_rng(2)
    data = rng.integers(0, 500, size=(rows, 78))
    csv = "".join(",".join(map(str, r)) + "\n" for r in data).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for folder in ("regression", "regression/Twitter"):
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            tf.addfile(info)
        info = tarfile.TarInfo("regression/Twitter/Twitter.data")
        info.size = len(csv)
        tf.addfile(info, io.BytesIO(csv))
    return buf.getvalue()


KDD_ROWS = [
    "0,tcp,http,SF,181,5450,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,8,8,0.00,0.00,0.00,0.00,1.00,0.00,0.00,9,9,1.00,0.00,0.11,0.00,0.00,0.00,0.00,0.00,normal.",
    "0,icmp,ecr_i,SF,1032,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,511,511,0.00,0.00,0.00,0.00,1.00,0.00,0.00,255,255,1.00,0.00,1.00,0.00,0.00,0.00,0.00,0.00,smurf.",
    "0,tcp,private,S0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,123,6,1.00,1.00,0.00,0.00,0.05,0.07,0.00,255,26,0.10,0.05,0.00,0.00,1.00,1.00,0.00,0.00,neptune.",
    "0,udp,domain_u,SF,45,44,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,1,1,0.00,0.00,0.00,0.00,1.00,0.00,0.00,255,254,1.00,0.01,0.00,0.00,0.00,0.00,0.00,0.00,normal.",
    "0,tcp,http,SF,239,486,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0,0,8,8,0.00,0.00,0.00,0.00,1.00,0.00,0.00,19,19,1.00,0.00,0.05,0.00,0.00,0.00,0.00,0.00,normal.",
]


def kdd_gz() -> bytes:
    return gzip.compress(("\n".join(KDD_ROWS) + "\n").encode())


def all_files() -> dict[str, dict[str, bytes]]:
    """dataset -> {file name as the pipeline knows it: bytes}."""
    return {
        "adult": {"adult.data": adult_data(), "adult.test": adult_test()},
        "mnist": mnist_files(),
        "gisette": gisette_files(),
        "reddit": {"corpus-webis-tldr-17.zip": reddit_zip()},
        "twitter": {"regression.tar.gz": twitter_tar()},
        "kddcup99": {"kddcup.data_10_percent.gz": kdd_gz()},
    }
