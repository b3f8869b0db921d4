"""Bring your own DP algorithm: the CNN of PyTorch's "Basic MNIST Example" (the model paper 004
tunes) trained with Opacus's PrivacyEngine, as a problem of this pipeline.

The pipeline needs two things from a DP algorithm (see dptradeoff/problems/oracle.py):

* `epsilon(point, *, n, delta)`: the privacy oracle. Here: DP-SGD with Poisson sampling, as Opacus
  performs it (`make_private(..., poisson_sampling=True)`): every step includes each of the n
  examples independently with probability q = 1 / len(data_loader), for int(1 / q) steps per epoch,
  and adds N(0, (noise * clip)^2) to the sum of clipped per-example gradients (add/remove-one
  neighbours, sensitivity clip). Accounted with dp_accounting's RDP accountant;
  tests/test_user_problems.py checks it against Opacus's own accountant after a real training.
* `utility(point, data, rng)`: one training at the point, its test accuracy.

For a release from its front (docs/release.md) it also defines `event(point, *, n)` (the training as a
dp_accounting event), `train(point, data, rng)` (the model), `score(model, data)` (its accuracy) and
`weights(model)` (what is saved), and for a black-box audit (docs/audit.md) `losses(model, data)` (each test
row's loss).

`prepare` keeps `train_rows` training and `test_rows` test rows, chosen by a fixed permutation (the
choice depends on the row counts only, never on the data), and reshapes the pixels into 1x28x28
images. The guarantee is about the rows trained on (n of them): the private dataset is that
subsample, the other rows are never used.

An experiment, not a release: Opacus's secure_mode is off and every seed is recorded, so the noise
can be reproduced from the outputs. Retrain with secure_mode=True before releasing a model.
Config: config/examples/opacus-cnn.yaml.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np


def network():
    """The Basic MNIST Example's CNN (pytorch/examples, mnist/main.py): the project's one definition,
    dptradeoff.train.cnn.Net, which Table 3's MNIST row also trains."""
    from dptradeoff.train.cnn import Net

    return Net()


def poisson_schedule(n: int, lot_size: int, epochs: int) -> tuple[float, int]:
    """(sampling rate, steps) of Opacus's Poisson data loader for a DataLoader of batch size lot_size
    over n examples: q = 1 / len(loader) with len(loader) = ceil(n / lot_size), int(1 / q) steps per epoch."""
    batches = math.ceil(n / lot_size)
    rate = 1 / batches
    return rate, epochs * int(1 / rate)


class OpacusCNN:
    neighbouring = "add/remove-one (Opacus's relation)"   # recorded in every evaluation row
    # A training of E epochs passes through every shorter one (Opacus's Poisson sampler and noise draw in
    # step order, the learning rate is constant): with dpareto.traces, `utility_trace` records each epoch.
    trace_axis = "epochs"

    def __init__(self, train_rows: int | None = None, test_rows: int | None = None):
        self.train_rows, self.test_rows = train_rows, test_rows

    def prepare(self, data):
        from dptradeoff.train.cnn import images   # 1x28x28, normalised as the Basic MNIST Example

        # the embedded digits are grouped by label: a fixed permutation, not the first rows
        train = np.random.default_rng(0).permutation(len(data.y_train))[:self.train_rows]
        test = np.random.default_rng(1).permutation(len(data.y_test))[:self.test_rows]
        return replace(data, x_train=images(data.x_train[train]), y_train=np.asarray(data.y_train[train], dtype=np.int64),
                       x_test=images(data.x_test[test]), y_test=np.asarray(data.y_test[test], dtype=np.int64))

    def epsilon(self, point, *, n, delta):
        import dp_accounting

        accountant = dp_accounting.rdp.RdpAccountant()   # add/remove-one neighbours, as Opacus
        return accountant.compose(self.event(point, n=n)).get_epsilon(delta)

    def event(self, point, *, n):
        """The training as a dp_accounting event (a release calibrates and composes it): `steps` Gaussian
        steps on Poisson-sampled lots, as `train_with_engine` runs them."""
        import dp_accounting

        rate, steps = poisson_schedule(n, int(point["lot_size"]), int(point["epochs"]))
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(rate, dp_accounting.GaussianDpEvent(point["noise"])), steps)

    def train(self, point, data, rng):
        """The trained model (a release saves its state_dict)."""
        return self.train_with_engine(point, data, rng)[0]

    def score(self, model, data):
        """The model's accuracy on data.x_test / data.y_test."""
        import torch

        model.eval()
        with torch.no_grad():
            predicted = model(torch.as_tensor(data.x_test)).argmax(dim=1).numpy()
        return float(np.mean(predicted == data.y_test))

    def losses(self, model, data):
        """The per-example negative log-likelihood of the network on data.x_test / data.y_test (what a
        black-box audit ranks: dptradeoff/audit/blackbox.py)."""
        import torch

        model.eval()
        with torch.no_grad():
            return torch.nn.functional.nll_loss(model(torch.as_tensor(data.x_test)), torch.as_tensor(data.y_test),
                                                reduction="none").numpy()

    def weights(self, model):
        """The network's parameters by name, without Opacus's GradSampleModule wrapper."""
        return getattr(model, "_module", model).state_dict()

    def train_with_engine(self, point, data, rng, after_epoch=None):
        """The model and Opacus's PrivacyEngine after training at `point` (all randomness from rng);
        `after_epoch(epoch, model)`, where given, is called after every epoch."""
        import torch
        from opacus import PrivacyEngine

        torch.manual_seed(int(rng.integers(2**62)))
        dataset = torch.utils.data.TensorDataset(torch.as_tensor(data.x_train), torch.as_tensor(data.y_train))
        loader = torch.utils.data.DataLoader(dataset, batch_size=int(point["lot_size"]))
        model = network()
        optimizer = torch.optim.SGD(model.parameters(), lr=point["learning_rate"])
        engine = PrivacyEngine(accountant="rdp")
        with warnings.catch_warnings():   # only its advice to turn secure_mode on (see the module docstring)
            warnings.filterwarnings("ignore", message="Secure RNG turned off")
            model, optimizer, loader = engine.make_private(
                module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=point["noise"],
                max_grad_norm=point["clip"], poisson_sampling=True,
                noise_generator=torch.Generator().manual_seed(int(rng.integers(2**62))))
        model.train()
        for epoch in range(1, int(point["epochs"]) + 1):
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.nll_loss(model(x), y).backward()
                optimizer.step()
            if after_epoch is not None:
                after_epoch(epoch, model)
                model.train()
        return model, engine

    def utility(self, point, data, rng):
        return self.score(self.train(point, data, rng), data)

    def utility_trace(self, point, data, rng):
        """The test accuracy after every epoch of one training: {epochs: accuracy}. Scoring in eval mode
        draws nothing from the training's streams, so epoch e's accuracy is a training of e epochs'."""
        trace = {}
        self.train_with_engine(point, data, rng, lambda epoch, model: trace.update({epoch: self.score(model, data)}))
        return trace
