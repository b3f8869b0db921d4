"""Paper 004 §6.2 / Table 3's tasks: on which data a model must meet which utility bar, and how.

- Twitter: linear regression (test MSE <= the bar; the target scaled by a public bound into [0, 1],
  rows clipped to norm 1).
- MNIST: test accuracy >= the bar; DP-SGD on the network `expost.table3.mnist_model` names: mlp2
  (784-128-64-10) or the paper's CNN (PyTorch's Basic MNIST Example, train/cnn.py).
- Gisette: test accuracy >= the bar; logistic regression on unit-norm rows.
The test split is treated as public, as paper 004's footnote 5 allows.

Each task is a `Table3Task`: the models DP-SGD can train on it (for Alg. 3 and doubling), how its
rows are prepared, and the one statistic the Brownian method releases (and that statistic's utility).
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from .. import UserError
from ..train import linear, outpert
from ..train.hyper import DPSGDHyper

if TYPE_CHECKING:
    from .settings import Table3Settings


# --- the models DP-SGD trains ----------------------------------------------------------------------

class Model(ABC):
    name: ClassVar[str]   # as `expost.table3.mnist_model` and the tables name it

    @abstractmethod
    def score(self, data: "TaskData", hyper: DPSGDHyper, rng: np.random.Generator) -> float:
        """Test utility of one DP-SGD run."""


class LinearRegression(Model):
    name = "linear-squared"

    def score(self, data, hyper, rng):
        w = linear.train(data.x_train, data.y_train, "squared", "sgd", hyper, 1, rng)
        prediction = np.clip(linear.with_bias(data.x_test) @ w[0], 0.0, 1.0)
        return float(np.mean((prediction - data.y_test) ** 2))


class LogisticRegression(Model):
    name = "linear-logistic"

    def score(self, data, hyper, rng):
        w = linear.train(data.x_train, data.y_train, "logistic", "sgd", hyper, 1, rng)
        return float(linear.accuracy(w, data.x_test, data.y_test)[0])


class MLP2(Model):
    name = "mlp2"

    def score(self, data, hyper, rng):
        from ..train import mlp  # torch only where needed
        params = mlp.train(data.x_train, data.y_train, "mlp2", "sgd", hyper, int(rng.integers(2**31)))
        return mlp.accuracy(params, data.x_test, data.y_test)


class CNN(Model):
    name = "cnn"

    def score(self, data, hyper, rng):
        from ..train import cnn  # the same lots, steps and noise as mlp.train: `ml.rdp_curve` accounts for both
        model = cnn.train(data.x_train, data.y_train, hyper, int(rng.integers(2**31)))
        return cnn.accuracy(model, data.x_test, data.y_test)


# --- the tasks -------------------------------------------------------------------------------------

class Table3Task(ABC):
    name: ClassVar[str]                    # the dataset (results/data/<name>)
    models: ClassVar[tuple[Model, ...]]    # what DP-SGD can train on it; the first is the default
    higher_is_better: ClassVar[bool]       # accuracy (at least the bar) or an error (at most the bar)

    def configured_model(self, table3: "Table3Settings") -> str:
        """The model `expost.table3` asks for on this task."""
        return self.models[0].name

    def prepare(self, x_train, y_train, x_test, y_test, target_bound: float) -> tuple:
        """The rows and labels as the task's models take them."""
        return x_train, y_train, x_test, y_test

    def meets(self, utility: float, threshold: float) -> bool:
        return utility >= threshold if self.higher_is_better else utility <= threshold

    def score(self, utility: float) -> float:
        """Larger is better."""
        return utility if self.higher_is_better else -utility

    @abstractmethod
    def statistic(self, data: "TaskData", gamma: float, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        """(theta, replace-one L2 sensitivity): what the Brownian method releases along its path."""

    @abstractmethod
    def released_utility(self, data: "TaskData", theta: np.ndarray, ridge: float, train: bool) -> float:
        """The utility of the model a (noisy) statistic `theta` gives, on the training or the test split."""


class TwitterRegression(Table3Task):
    name = "twitter"
    models = (LinearRegression(),)
    higher_is_better = False

    def prepare(self, x_train, y_train, x_test, y_test, target_bound):
        def rows(x):
            return x / np.maximum(1.0, np.linalg.norm(x, axis=1, keepdims=True))
        return (rows(x_train), np.clip(y_train / target_bound, 0.0, 1.0), rows(x_test),
                np.clip(y_test / target_bound, 0.0, 1.0))

    def statistic(self, data, gamma, rng):
        """The sufficient statistics X'X, X'y."""
        n = len(data.x_train)
        xb = np.c_[data.x_train, np.ones(n)] / math.sqrt(2.0)   # rows of norm <= 1 with the bias feature
        stats = np.concatenate([(xb.T @ xb).ravel(), xb.T @ data.y_train])
        return stats, 2.0 * math.sqrt(2.0)   # each row adds vec(x x') (norm <= 1) and x y (norm <= 1)

    def released_utility(self, data, theta, ridge, train):
        x, y = (data.x_train, data.y_train) if train else (data.x_test, data.y_test)
        d = x.shape[1] + 1
        a, c = theta[: d * d].reshape(d, d), theta[d * d:]
        a = (a + a.T) / 2
        w = np.linalg.solve(a + ridge * len(data.x_train) * np.eye(d), c)
        prediction = np.clip(np.c_[x, np.ones(len(x))] / math.sqrt(2.0) @ w, 0.0, 1.0)
        return float(np.mean((prediction - y) ** 2))


class MnistClassification(Table3Task):
    name = "mnist"
    models = (MLP2(), CNN())
    higher_is_better = True

    def configured_model(self, table3):
        return table3.mnist_model

    def statistic(self, data, gamma, rng):
        """One-vs-rest, ten bolt-on PSGD models; one example moves each by <= 4/(gamma n)."""
        n = len(data.x_train)
        x = outpert.normalise(data.x_train)
        labels = np.asarray(data.y_train).astype(int)
        w = np.stack([outpert.train(x, np.where(labels == c, 1.0, -1.0), np.array([gamma]), rng)[0] for c in range(10)])
        return w.ravel(), math.sqrt(10.0) * outpert.sensitivity(gamma, n)

    def released_utility(self, data, theta, ridge, train):
        x, y = (data.x_train, data.y_train) if train else (data.x_test, data.y_test)
        xn = outpert.normalise(x)
        return float(np.mean((xn @ theta.reshape(10, -1).T).argmax(axis=1) == np.asarray(y).astype(int)))


class GisetteClassification(Table3Task):
    name = "gisette"
    models = (LogisticRegression(),)
    higher_is_better = True

    def prepare(self, x_train, y_train, x_test, y_test, target_bound):
        return (outpert.normalise(x_train)[:, :-1], 2.0 * y_train - 1.0, outpert.normalise(x_test)[:, :-1],
                2.0 * y_test - 1.0)

    def statistic(self, data, gamma, rng):
        """The weights of bolt-on private PSGD (output perturbation)."""
        x = outpert.normalise(data.x_train)
        return outpert.train(x, data.y_train, np.array([gamma]), rng)[0], outpert.sensitivity(gamma, len(data.x_train))

    def released_utility(self, data, theta, ridge, train):
        x, y = (data.x_train, data.y_train) if train else (data.x_test, data.y_test)
        return float(np.mean((outpert.normalise(x) @ theta >= 0) == (y > 0)))


TASKS: dict[str, Table3Task] = {t.name: t for t in (TwitterRegression(), MnistClassification(), GisetteClassification())}


@dataclass
class TaskData:
    """A task's prepared data, its utility bar and the model DP-SGD trains on it."""
    task: Table3Task
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    threshold: float
    model: Model | None = None   # None: the task's default

    def __post_init__(self):
        self.model = self.model or self.task.models[0]

    def meets(self, utility: float) -> bool:
        return self.task.meets(utility, self.threshold)

    def score(self, utility: float) -> float:
        """Larger is better."""
        return self.task.score(utility)


def task_on(dataset: str) -> Table3Task:
    if dataset not in TASKS:
        raise UserError(f"Table 3 has no task for dataset {dataset!r}; use one of {', '.join(TASKS)}.")
    return TASKS[dataset]


def prepare(dataset: str, x_train, y_train, x_test, y_test, threshold: float, target_bound: float,
            model: str | None = None) -> TaskData:
    """The Table 3 task on `dataset`, its data prepared, training `model` (None: the task's default)."""
    task = task_on(dataset)
    models = {m.name: m for m in task.models}
    model = model or task.models[0].name
    if model not in models:
        raise UserError(f"Table 3 trains no model {model!r} on {dataset}; use one of {', '.join(models)}.")
    x_train, y_train, x_test, y_test = task.prepare(x_train, y_train, x_test, y_test, target_bound)
    return TaskData(task, np.asarray(x_train, dtype=np.float64), np.asarray(y_train),
                    np.asarray(x_test, dtype=np.float64), np.asarray(y_test), threshold, models[model])
