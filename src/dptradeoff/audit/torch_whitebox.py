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
from .whitebox import Trainings, step_log_ratios


@dataclass(frozen=True)
class Trainer:
    """How to run one torch trainer for the audit: its module, the coordinate j (parameter, flat index),
    and a call training it with a seed."""
    module: object
    parameter: str            # "0" for the MLP's first weight matrix (a list index), or a CNN parameter name
    index: int                # flat index of j inside that parameter
    train: object             # train(x, y, hp, seed) -> parameters (list or module)


def mlp_trainer(architecture: str) -> Trainer:
    from ..train import mlp

    # W1[0, 0]: hidden unit 0's weight on pixel 0 (the top-left corner, 0 in every MNIST image)
    return Trainer(mlp, "0", 0, lambda x, y, hp, seed: mlp.train(x, y, architecture, "sgd", hp, seed))


def cnn_trainer() -> Trainer:
    from ..train import cnn

    return Trainer(cnn, "fc1.weight", 0, lambda x, y, hp, seed: cnn.train(x, y, hp, seed))


def _value(params, trainer: Trainer) -> float:
    if isinstance(params, (list, tuple)):
        tensor = params[int(trainer.parameter)]
    else:
        tensor = dict(params.named_parameters())[trainer.parameter]
    return float(tensor.detach().reshape(-1)[trainer.index])


@contextlib.contextmanager
def dirac_canary(trainer: Trainer, sign: float, clip: float, marker: float, seen: list):
    """While active, the trainer's clipped gradient sum treats a row whose every input is `marker` as the
    canary: its clipped gradient is sign * clip on coordinate j. `seen` receives, at every step, coordinate
    j's value at its start (the adversary's view of the model) and the real rows' clipped sum on j."""
    module = trainer.module
    original = module.clipped_gradient_sum

    def wrapped(model, x, y, *rest):
        before = _value(model, trainer)
        canary = (x.reshape(len(x), -1) == marker).all(dim=1)
        keep = ~canary
        rest = [tuple(r[keep] for r in arg) if isinstance(arg, tuple) else arg for arg in rest]
        sums, norms = original(model, x[keep], y[keep], *rest)
        target = sums[int(trainer.parameter)] if isinstance(sums, list) else sums[trainer.parameter]
        seen.append((before, float(target.detach().reshape(-1)[trainer.index])))
        if bool(canary.any()):
            target.view(-1)[trainer.index] += sign * clip
        return sums, norms

    module.clipped_gradient_sum = wrapped
    try:
        yield
    finally:
        module.clipped_gradient_sum = original


def train_and_score(trainer: Trainer, x: np.ndarray, y: np.ndarray, hp: DPSGDHyper, runs: int, seed: int, *,
                    model: DPSGDHyper | None = None) -> Trainings:
    """`runs` SGD trainings with the canary (+L e_j) and `runs` with its neighbour (-L e_j), on x plus the
    canary row, each scored by the sum of the steps' log-likelihood ratios under the mechanism `model`
    (default hp) states. With lots of the whole dataset the adversary, who knows every real row and the
    model, subtracts the real rows' clipped sum on j from each release (the wrapper's own number); with
    subsampled lots it cannot (the lots are hidden), and they stay in the release as unseen noise."""
    model = model or hp
    marker = 1.0
    wide = np.concatenate([np.asarray(x, np.float32), np.full((1, x.shape[1]), marker, np.float32)])
    labels = np.append(np.asarray(y), np.asarray(y)[0])
    n = len(labels)
    steps, q, sigma = hp.steps(n), hp.lot_size / n, 2.0 * model.clip * model.noise
    # the trainer sees images normalised (cnn.images): the marker it sees is the normalised 1
    from ..train import cnn
    seen_marker = marker if trainer.module is not cnn else float(cnn.images(wide[-1:]).reshape(-1)[0])
    scores = {}
    seeds = np.random.default_rng(seed).integers(0, 2**62, size=(2, runs))   # every training its own streams
    for k, (name, sign) in enumerate((("in", 1.0), ("out", -1.0))):
        out = []
        for r in range(runs):
            seen: list[float] = []
            with dirac_canary(trainer, sign, model.clip, seen_marker, seen):
                final = trainer.train(wide, labels, hp, int(seeds[k, r]))
            values = np.array([v for v, _ in seen] + [_value(final, trainer)])
            o = -(values[1:] - values[:-1]) / hp.learning_rate * hp.lot_size
            if q >= 1.0:
                o = o - np.array([real for _, real in seen])
            s = np.full_like(o, model.clip)
            out.append(step_log_ratios(o, s, -s, q, sigma).sum())
        scores[name] = np.array(out)
    # the canary's +-L is constant: with the real rows' sum subtracted (q = 1) the score is exactly Gaussian
    return Trainings(scores["in"], scores["out"], steps, q, 1.0, math.nan, exact=q >= 1.0)
