"""The built-in problems' oracles: DP-SGD/DP-Adam on linear models and MLPs (paper 001), bolt-on
output perturbation (paper 000 §2.2) and the sparse vector technique (paper 000 Alg. 1)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..privacy import dpsgd, svt as svt_privacy
from ..privacy.accountant import Accountant, PLDAccountant
from ..privacy.events import OutputPerturbationDpEvent, SparseVectorDpEvent
from ..secure_random import is_secure
from ..train import svt as svt_utility
from ..train.hyper import DPSGDHyper
from .oracle import Data, Oracle, majority_share


# The accountant of the oracles without RDP (the analytic Gaussian, SVT's pure epsilon): no conversion is used.
_ACCOUNTANT = Accountant()


def _signed_labels(data: Data) -> Data:
    return replace(data, y_train=2.0 * data.y_train - 1.0, y_test=2.0 * data.y_test - 1.0)


@dataclass(frozen=True)
class DPSGD(Oracle):
    """DP-SGD / DP-Adam: fixed-size lots without replacement, replace-one; its accountant the config's (`privacy.accountant`)."""
    optimizer: str                          # sgd or adam
    accountant: Accountant = PLDAccountant()   # the tight one, or an RDP accountant (`privacy.accountant: rdp`)
    neighbouring = "replace-one"
    trace_axis = "epochs"   # a training of E epochs passes through every shorter one (train/linear.py, mlp.py)
    needs_labels = True     # a release of it needs a dataset with labels (config.py)

    @property
    def conversion(self) -> str:
        return self.accountant.name

    def with_accountant(self, accountant) -> "DPSGD":
        return replace(self, accountant=accountant)

    def trivial_utility(self, data):
        return majority_share(data)

    def epsilon(self, point, *, n, delta):
        return self.accountant.epsilon(self.event(point, n=n), delta)

    def event(self, point, *, n):
        """A training's privacy as an event (a release composes and calibrates it)."""
        return dpsgd.training_event(n, point["lot_size"], point["epochs"], point["noise"])

    # One epoch costs n * (per_example + per_step / lot) seconds on one core: measured at lots from the
    # domain's smallest to its largest, 2 epochs, after a warm-up (benchmarks/training_cost.py).
    per_example_seconds = 0.0
    per_step_seconds = 0.0

    def cost_seconds(self, point, n):
        if n is None:
            return None
        return point["epochs"] * n * (self.per_example_seconds + self.per_step_seconds / point["lot_size"])

    @staticmethod
    def hyper(point) -> DPSGDHyper:
        return DPSGDHyper(point["epochs"], point["lot_size"], point["learning_rate"], point["noise"], point["clip"])


@dataclass(frozen=True)
class LinearDPSGD(DPSGD):
    """Logistic regression (loss `logistic`) or a linear SVM (`hinge`), labels +-1, all R
    replications trained at once."""
    loss: str = "logistic"
    per_example_seconds = 0.8e-6  # Adult: 0.61-0.74 us per example at lot 512, 0.81-1.28 us at lot 8
    per_step_seconds = 5e-6

    def prepare(self, data):
        return _signed_labels(data)

    def utilities(self, point, data, repeats, rng):
        from ..train import linear  # numba: only the jobs that train pay for its import

        w = linear.train(data.x_train, data.y_train, self.loss, self.optimizer, self.hyper(point), repeats, rng)
        return linear.accuracy(w, data.x_test, data.y_test)

    resumable = True   # its state after a segment: train/linear.TraceState

    def utilities_trace(self, point, data, repeats, rng, checkpoints):
        return self.utilities_segment(point, data, repeats, rng, checkpoints, None)[0]

    def utilities_segment(self, point, data, repeats, rng, checkpoints, state):
        from ..train import linear

        w, after = linear.trace_segment(data.x_train, data.y_train, self.loss, self.optimizer, self.hyper(point),
                                        repeats, rng, checkpoints,
                                        None if state is None else linear.TraceState.from_bytes(state))
        return {e: linear.accuracy(w[k], data.x_test, data.y_test) for k, e in enumerate(checkpoints)}, after.to_bytes()

    def train(self, point, data, rng):
        """One training's weights (bias last), for a release."""
        from ..train import linear

        return linear.train(data.x_train, data.y_train, self.loss, self.optimizer, self.hyper(point), 1, rng)[0]

    def score(self, model, data):
        from ..train import linear

        return float(linear.accuracy(model[None], data.x_test, data.y_test)[0])

    def weights(self, model):
        return {"weights_bias_last": model}

    def losses(self, model, data):
        """The per-example loss of the weights on data.x_test / data.y_test (labels +-1), for a black-box
        audit (audit/blackbox.py)."""
        from ..train import linear

        scores = linear.with_bias(np.asarray(data.x_test, dtype=np.float64)) @ model
        margin = np.asarray(data.y_test, dtype=np.float64) * scores
        if self.loss == "hinge":
            return np.maximum(0.0, 1.0 - margin)
        return np.logaddexp(0.0, -margin)   # logistic


@dataclass(frozen=True)
class MLPDPSGD(DPSGD):
    """paper 001's MLPs (`architecture` mlp1 or mlp2), trained with torch."""
    architecture: str = "mlp1"
    uses_gpu = True
    # MNIST on one core: mlp1 49 us per example at lot 4000, 497 us at lot 16; mlp2 10.5 and 128 us.
    COSTS = {"mlp1": (50e-6, 7.2e-3), "mlp2": (11e-6, 1.9e-3)}

    @property
    def per_example_seconds(self):
        return self.COSTS[self.architecture][0]

    @property
    def per_step_seconds(self):
        return self.COSTS[self.architecture][1]

    def utilities(self, point, data, repeats, rng):
        """The `repeats` replications trained side by side, one batch (train/batch.py)."""
        from ..train import mlp  # torch takes seconds to import: only the MLP problems pay for it

        replications = mlp.Batch.replications(self.hyper(point), rng.integers(0, 2**62, size=repeats))
        params = mlp.train_batch(data.x_train, data.y_train, self.architecture, self.optimizer, replications)
        return mlp.accuracies(params, data.x_test, data.y_test)

    def utilities_trace(self, point, data, repeats, rng, checkpoints):
        """As `utilities` (the same seeds, the same batch: checkpoint e is `utilities` at e epochs exactly),
        each replication's accuracy measured after every checkpoint epoch."""
        from ..train import mlp

        seeds = rng.integers(0, 2**62, size=repeats)
        replications = mlp.Batch.replications(self.hyper({**point, "epochs": checkpoints[-1]}), seeds)
        wanted, out = set(checkpoints), {}

        def measure(epoch, params):
            if epoch in wanted:
                out[epoch] = mlp.accuracies(params, data.x_test, data.y_test)

        mlp.train_batch(data.x_train, data.y_train, self.architecture, self.optimizer, replications, checkpoint=measure)
        return out

    def train(self, point, data, rng):
        """One training's parameters (weights and biases per layer), for a release."""
        from ..train import mlp

        return mlp.train(data.x_train, data.y_train, self.architecture, self.optimizer, self.hyper(point),
                         int(rng.integers(0, 2**62)), secure=rng if is_secure(rng) else None)

    def score(self, model, data):
        from ..train import mlp

        return mlp.accuracy(model, data.x_test, data.y_test)

    def losses(self, model, data):
        """The per-example cross-entropy of the network on data.x_test / data.y_test, for a black-box audit."""
        import torch

        from ..train import mlp

        logits = mlp.logits(model, data.x_test)[0]
        y = torch.as_tensor(np.asarray(data.y_test, dtype=np.int64), device=logits.device)
        return torch.nn.functional.cross_entropy(logits, y, reduction="none").cpu().numpy()


@dataclass(frozen=True)
class BoltOnOutputPerturbation(Oracle):
    """Projected SGD on normalised rows, then Gaussian noise; epsilon by the analytic Gaussian
    mechanism. A job's points are trained together: projected SGD has no per-point hyperparameter
    but gamma, and one vectorised pass over (point, replication) rows costs little more than one."""
    trains_batches = True
    neighbouring = "replace-one"

    def trivial_utility(self, data):
        return majority_share(data)

    def prepare(self, data):
        from ..train import outpert

        signed = _signed_labels(data)
        return replace(signed, x_train=outpert.normalise(signed.x_train), x_test=outpert.normalise(signed.x_test))

    def epsilon(self, point, *, n, delta):
        return _ACCOUNTANT.epsilon(OutputPerturbationDpEvent(point["gamma"], point["sigma"], n), delta)

    def utilities(self, point, data, repeats, rng):
        return self.utilities_of_batch([point], data, repeats, rng)[0]

    def utilities_of_batch(self, points, data, repeats, rng):
        from ..train import outpert

        w = outpert.train(data.x_train, data.y_train, np.repeat([p["gamma"] for p in points], repeats), rng)
        return [outpert.accuracy(outpert.release(w[i * repeats:(i + 1) * repeats], p["sigma"], rng), data.x_test, data.y_test)
                for i, p in enumerate(points)]


@dataclass(frozen=True)
class SparseVector(Oracle):
    """SVT answering `bound` queries above threshold with Laplace scale b, on simulated queries (F1)."""
    own_data = "none (simulated queries)"
    neighbouring = "query answers of sensitivity 1 (paper 000 Alg. 1)"

    def trivial_utility(self, data):
        return 0.0   # answering no query above the threshold: F1 0

    def epsilon(self, point, *, n, delta):
        return _ACCOUNTANT.epsilon(SparseVectorDpEvent(point["bound"], point["b"]), delta)

    def epsilons(self, points, *, n, delta):
        """`epsilon` of many points at once, rows (bound, b): the same closed form (tested equal)."""
        points = np.atleast_2d(np.asarray(points, dtype=float))
        return svt_privacy.epsilon_many(np.round(points[:, 0]), points[:, 1])

    def utilities(self, point, data, repeats, rng):
        return svt_utility.f1_scores(point["bound"], point["b"], repeats, rng)
