"""White-box audits of the torch DP-SGD trainers (train/mlp.py, train/cnn.py) with a Dirac gradient canary
(Nasr et al. 2023): the threat model of `whitebox`, the canary an example whose clipped gradient the
adversary sets to +L e_j (D_in) or -L e_j (D_out) on one parameter coordinate j, a replace-one pair.

The canary is a row of the training data (all pixels 1, a row no real image is) that the trainer samples
like any other; when its lot draws it, its clipped gradient is the Dirac one (the trainer's
`clipped_gradient_sum` is wrapped for the audit: the real rows' clipped sum, plus the canary's). The
trainer's own sampling, noise, division by the lot size, steps and update are audited; its clipping is not
(the canary's gradient is at the clipping norm by construction), which the mechanism tests check
(tests/test_mechanisms.py). The adversary reads step t's release on coordinate j from the parameter before
and after the step (plain SGD: o_t = -m (theta_t - theta_{t-1}) / lr); the real rows' gradients on j are
part of what it cannot see (for the MLP's corner pixel, which every real image leaves at 0, they are
exactly 0), so they cost power, never validity.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np
import torch

from ..train.hyper import DPSGDHyper
from .composed import StepObservations
from .whitebox import Trainings, step_log_ratios


@dataclass(frozen=True)
class Trainer:
    """How to run one torch trainer for the audit: its module, the coordinate j (parameter, flat index),
    and a call training a batch of networks (train/batch.py) and returning their stacked parameters."""
    module: object
    parameter: str            # "0" for the MLP's first weight matrix (a list index), or a CNN parameter name
    index: int                # flat index of j inside that parameter
    train: object             # train(x, y, batch) -> stacked parameters (list or dict)


def mlp_trainer(architecture: str) -> Trainer:
    from ..train import mlp

    # W1[0, 0]: hidden unit 0's weight on pixel 0 (the top-left corner, 0 in every MNIST image)
    return Trainer(mlp, "0", 0, lambda x, y, batch: mlp.train_batch(x, y, architecture, "sgd", batch))


def cnn_trainer() -> Trainer:
    from ..train import cnn

    return Trainer(cnn, "fc1.weight", 0, cnn.train_batch)


def _values(params, trainer: Trainer) -> torch.Tensor:
    """Coordinate j of every network of the batch: (B,)."""
    tensor = params[int(trainer.parameter)] if isinstance(params, (list, tuple)) else params[trainer.parameter]
    return tensor.detach().reshape(tensor.shape[0], -1)[:, trainer.index].clone()


@contextlib.contextmanager
def dirac_canary(trainer: Trainer, signs, clip: float, marker: float, seen: list):
    """While active, the trainer's clipped gradient sum treats a row whose every input is `marker` as the
    canary: in network b its clipped gradient is signs[b] * clip on coordinate j. `seen` receives, at every
    step, coordinate j's values at its start (the adversary's view of each model), the real rows'
    clipped sums on j, the canary's count in each network's lot and the noise the trainer adds on j, each (B,)."""
    module = trainer.module
    original, original_noised = module.clipped_gradient_sum, module.noised_average
    current: dict = {}

    def wrapped(params, x, y, *rest):
        before = _values(params, trainer)
        canary = (x.reshape(x.shape[0], x.shape[1], -1) == marker).all(dim=2)    # (B, m)
        sums, norms = original(params, x, y, *rest, keep=~canary)
        target = sums[int(trainer.parameter)] if isinstance(sums, list) else sums[trainer.parameter]
        column = target.view(target.shape[0], -1)[:, trainer.index]
        noise = torch.full_like(column, math.nan)
        seen.append((before, column.clone(), canary.sum(dim=1), noise))
        column += torch.as_tensor(signs, dtype=column.dtype, device=column.device) * clip * canary.any(dim=1)
        current.update(target=target, noise=noise)
        return sums, norms

    def noised(grad, generator, std, lot_size):
        # the noise the trainer adds on coordinate j (its release less the sum it noised), for the networks of
        # this slice of the target parameter's gradients
        out = original_noised(grad, generator, std, lot_size)
        target = current.get("target")
        if target is not None and grad.untyped_storage().data_ptr() == target.untyped_storage().data_ptr():
            first = (grad.storage_offset() - target.storage_offset()) // target.stride(0)
            j = trainer.index
            added = out.reshape(out.shape[0], -1)[:, j].double() * lot_size - grad.reshape(grad.shape[0], -1)[:, j].double()
            current["noise"][first:first + len(out)] = added.to(current["noise"].dtype)
        return out

    module.clipped_gradient_sum, module.noised_average = wrapped, noised
    try:
        yield
    finally:
        module.clipped_gradient_sum, module.noised_average = original, original_noised


def releases(trainer: Trainer, x, y, batch, signs, clip: float, marker: float, subtract_real: bool):
    """Train `batch` with the canary (network b's at signs[b] * clip); the adversary's view of every step's
    release on coordinate j, -m (theta_t - theta_{t-1}) / lr, less the real rows' clipped sum there where
    `subtract_real`: (B, steps); the canary's count in every step's lot and the noise the trainer added on j
    (B, steps) each."""
    seen: list = []
    with dirac_canary(trainer, signs, clip, marker, seen):
        final = trainer.train(x, y, batch)
    values = torch.stack([v for v, *_ in seen] + [_values(final, trainer)], dim=1).double().cpu().numpy()
    lr = np.array([h.learning_rate for h in batch.hypers])[:, None]
    o = -(values[:, 1:] - values[:, :-1]) / lr * batch.lot_size
    if subtract_real:
        o = o - torch.stack([r for _, r, *_ in seen], dim=1).double().cpu().numpy()
    counts, noise = (torch.stack([seen_step[k] for seen_step in seen], dim=1).cpu().numpy() for k in (2, 3))
    return o, counts, noise.astype(np.float64)


def train_and_score(trainer: Trainer, x: np.ndarray, y: np.ndarray, hp: DPSGDHyper, runs: int, seed: int, *,
                    model: DPSGDHyper | None = None, width: int = 64) -> Trainings:
    """`runs` SGD trainings with the canary (+L e_j) and `runs` with its neighbour (-L e_j), on x plus the
    canary row, each scored by the sum of the steps' log-likelihood ratios under the mechanism `model`
    (default hp) states. The 2 x runs trainings are batches of at most `width` networks. With lots of the whole dataset the
    adversary, who knows every real row and the model, subtracts the real rows' clipped sum on j from each
    release (the wrapper's own number); with subsampled lots it cannot (the lots are hidden), and they stay
    in the release as unseen noise."""
    from ..train import cnn
    from ..train.batch import Batch

    model = model or hp
    marker = 1.0
    wide = np.concatenate([np.asarray(x, np.float32), np.full((1, x.shape[1]), marker, np.float32)])
    labels = np.append(np.asarray(y), np.asarray(y)[0])
    n = len(labels)
    steps, q, sigma = hp.steps(n), hp.lot_size / n, 2.0 * model.clip * model.noise
    # the trainer sees images normalised (cnn.images): the marker it sees is the normalised 1
    seen_marker = marker if trainer.module is not cnn else float(cnn.images(wide[-1:]).reshape(-1)[0])
    seeds = np.random.default_rng(seed).integers(0, 2**62, size=2 * runs)   # every training its own seed
    signs = np.repeat([1.0, -1.0], runs)                                      # the first runs "in", the rest "out"
    parts = [releases(trainer, wide, labels, Batch.replications(hp, seeds[s:s + width]), signs[s:s + width],
                      model.clip, seen_marker, q >= 1.0) for s in range(0, len(seeds), width)]
    o, counts, noise = (np.concatenate([p[k] for p in parts]) for k in range(3))
    s = np.full(steps, model.clip)
    scores = np.array([step_log_ratios(row, s, -s, q, sigma).sum() for row in o])
    # the canary's +-L is constant: with the real rows' sum subtracted (q = 1) the score is exactly Gaussian
    return Trainings(scores[:runs], scores[runs:], steps, q, 1.0, math.nan, exact=q >= 1.0,
                     seen=StepObservations(o, counts, signs, noise))
