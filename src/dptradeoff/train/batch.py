"""What the batched torch trainers (mlp.py, cnn.py) share: a batch of networks trained side by side, and
the device-side draws of DP-SGD.

A batch is B networks that take the same steps on lots of the same size: the R replications of one point,
an audit's 2 x R trainings, or any networks that share a lot size and a step count. Each network
has its own learning rate, clip L and noise z, and its own initialisation seed. Every step draws, in this
order: every network's lot, then one normal tensor per parameter tensor of shape (B, ...), on the device
where the batch trains. The draws come from two streams seeded from all of the batch's seeds
(`Batch.stream_seeds`): a batch is deterministic for its seeds on a given device, and the draws of its
first e epochs are those of a batch of e epochs, so a checkpoint after epoch e is that shorter training,
bit for bit.

Lots (`draw_lots`): each network's lot is m distinct indices, a uniformly random m-subset of the n rows,
drawn afresh every step and independently of the other networks': the lots `dpsgd` accounts for.
- On a GPU: the m indices with the largest of n independent uniform 62-bit keys, drawn by the batch's torch
  generator on the device (one kernel for the whole batch, no host synchronisation). The m largest of
  exchangeable keys are a uniform m-subset. Two equal keys among n = 60,000 happen with probability about
  n^2 / 2^63 = 4e-10 a step; the subset is then still of size m and distinct.
- On a CPU: numpy's `Generator.choice(n, m, replace=False)` (Floyd's algorithm: m draws instead of n keys;
  0.01 ms a lot instead of 0.36 ms at n = 60,000). The CPU is the device there: nothing is copied.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from .hyper import DPSGDHyper
from ..seeds import entropy_words, seed_sequence, torch_generator


def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass(frozen=True)
class Batch:
    """B networks' hyperparameters and seeds; they must share the lot size and the step count on n rows."""
    hypers: tuple[DPSGDHyper, ...]
    seeds: tuple[int, ...]
    secure: np.random.Generator | None = None   # a release's cryptographic generator (`secure_random`): every
                                                # draw (initialisation, lots, noise) from it, the seeds unused

    def __post_init__(self):
        if len(self.hypers) != len(self.seeds) or not self.hypers:
            raise ValueError(f"a batch needs one seed per network: {len(self.hypers)} networks, {len(self.seeds)} seeds")
        if len({h.lot_size for h in self.hypers}) != 1 or len({h.epochs for h in self.hypers}) != 1:
            raise ValueError("the networks of a batch must share the lot size and the epochs")

    @classmethod
    def replications(cls, hyper: DPSGDHyper, seeds) -> Batch:
        return cls(tuple(hyper for _ in seeds), tuple(int(s) for s in seeds))

    @property
    def width(self) -> int:
        return len(self.hypers)

    @property
    def lot_size(self) -> int:
        return self.hypers[0].lot_size

    @property
    def epochs(self) -> int:
        return self.hypers[0].epochs

    def steps(self, n: int) -> int:
        return self.hypers[0].steps(n)

    @property
    def stream_seeds(self) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
        """The seed sequences of the batch's two streams (lots; noise and dropout): a function of every
        network's seed, in order, each seed's 64 bits kept (`seeds.entropy_words`)."""
        lots, noise = np.random.SeedSequence(entropy_words(s % 2**64 for s in self.seeds)).spawn(2)
        return lots, noise

    def streams(self, dev, coordinates: int | None = None) -> tuple[object, object]:
        """The lots' source (`draw_lots`) and the source of the noise (`noised_average`) and dropout draws: the
        device generator, or for a secure batch its cryptographic generator and the exact noise on the grid of
        a network of `coordinates` parameters (`SecureNoise`)."""
        if self.secure is not None:
            if self.width != 1 or coordinates is None:
                raise ValueError("a secure batch is one network, and its noise needs the network's parameter count")
            hyper = self.hypers[0]
            return self.secure, SecureNoise.on_all_cores(self.secure, hyper.release_grid(coordinates) if hyper.noise > 0
                                                         else None)
        lots, noise = self.stream_seeds
        return lot_source(lots, dev), torch_generator(noise, dev)

    def uniform_source(self, index: int):
        """Where network `index`'s initialisation draws come from (`uniform`): its seed's generator, or the
        batch's cryptographic generator."""
        return self.secure if self.secure is not None else torch_generator(seed_sequence(self.seeds[index]))

    def column(self, values, dev) -> torch.Tensor:
        """Per-network numbers as a float32 (B,) tensor on the device."""
        return torch.tensor([float(v) for v in values], dtype=torch.float32, device=dev)

    def clips(self, dev) -> torch.Tensor:
        """L per network."""
        return self.column([h.clip for h in self.hypers], dev)

    def rates(self, dev) -> torch.Tensor:
        """The learning rate per network."""
        return self.column([h.learning_rate for h in self.hypers], dev)

    def noise_std(self, dev) -> torch.Tensor:
        """2 L z per network: the std of the Gaussian added to each clipped sum (replace-one sensitivity 2 L)."""
        return self.column([2.0 * h.clip * h.noise for h in self.hypers], dev)


def lot_source(seed, dev):
    """Where a batch's lots come from (module docstring): numpy's Generator on a CPU, a torch generator on
    any other device; `seed` an int or a SeedSequence."""
    sequence = seed if isinstance(seed, np.random.SeedSequence) else seed_sequence(seed)
    if torch.device(dev).type == "cpu":
        return np.random.default_rng(sequence)
    return torch_generator(sequence, dev)


def draw_lots(source, width: int, n: int, m: int, dev) -> torch.Tensor:
    """(width, m) row indices on the device: each row m distinct indices of [0, n), a uniform m-subset
    (module docstring)."""
    if isinstance(source, np.random.Generator):
        return torch.from_numpy(np.stack([source.choice(n, m, replace=False) for _ in range(width)])).to(dev)
    keys = torch.randint(0, 2**62, (width, n), generator=source, device=dev)
    return keys.topk(m, dim=1, sorted=False).indices


def per_network(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A (B,) tensor shaped to broadcast against `like`, whose first dimension is B."""
    return values.view(-1, *([1] * (like.dim() - 1)))


def parts(width: int, dev) -> list[slice]:
    """The slices of a batch that each noise draw and update covers: the whole batch on a GPU (fewest kernel
    launches); one network at a time on a CPU, where a network's tensors stay in cache (3 MLP1s at once ran
    25 % slower than one after another)."""
    if torch.device(dev).type == "cpu":
        return [slice(i, i + 1) for i in range(width)]
    return [slice(None)]


def noised_average(grad: torch.Tensor, generator, std: torch.Tensor, lot_size: int) -> torch.Tensor:
    """(clipped sum + N(0, std_b^2) per coordinate) / m for every network b, in a fresh tensor: the release
    of a DP-SGD step (one normal draw of the stacked tensor's shape, from the device generator or a
    `SecureNoise`)."""
    if isinstance(generator, SecureNoise):
        return generator.noised_average(grad, std, lot_size)
    noise = torch.randn(grad.shape, generator=generator, device=grad.device, dtype=grad.dtype)
    return noise.mul_(per_network(std, noise)).add_(grad).div_(lot_size)


class SecureNoise:
    """A release's noise (`secure_random`, `exact_noise`): the clipped sum (float64: a release trains in float64,
    mlp.train_batch) released exactly on its grid from the cryptographic generator (every coordinate of every
    tensor of the one network on the grid of all of them); the update reads only the released value divided by
    m (post-processing). No grid: no noise (z = 0).

    The integer noise K does not depend on the sum, so each tensor's next K is drawn ahead, in one background
    thread, while the step computes its gradients: as a step takes a tensor's K, the next step's K of that size
    is started. The generators it draws from are keyed from `rng` when it is made (`generators_from`) and used
    by that one thread alone (a numpy Generator must not be shared between threads); `threads` of them draw a
    long tensor's K in parallel parts. Every K is used once; what is drawn ahead of the last step is discarded.
    `on_all_cores` gives the noise half the cores and the training (`sharing_cores`) the rest: torch's idle
    workers spin and would take the cores the noise needs (MLP2's draws took 82 ns each beside two torch
    threads, 32 ns beside one). The thread ends with `close`, or on leaving `with` (the training's, mlp.py:
    whether it finished or raised)."""

    def __init__(self, rng: np.random.Generator, grid=None, threads: int = 1):
        from ..secure_random import generators_from

        self.grid = grid                       # exact_noise.Grid
        self.sources = generators_from(rng, max(1, threads)) if grid is not None else ()
        self._drawer = ThreadPoolExecutor(1, thread_name_prefix="exact-noise") if grid is not None else None
        self._ahead = {}                       # size -> the future of the next K of that size

    @classmethod
    def on_all_cores(cls, rng: np.random.Generator, grid) -> "SecureNoise":
        return cls(rng, grid, noise_threads())

    def close(self) -> None:
        """Shut the drawing thread down: a draw under way is waited for (a numba draw cannot be interrupted),
        those not started are cancelled, and what was drawn ahead is discarded. It draws nothing after."""
        if self._drawer is not None:
            self._drawer.shutdown(wait=True, cancel_futures=True)
        self._ahead.clear()

    def __enter__(self) -> "SecureNoise":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    @contextmanager
    def sharing_cores():
        """Torch trains on the cores the noise leaves (at least one) while this is open."""
        before = torch.get_num_threads()
        torch.set_num_threads(max(1, (os.cpu_count() or 1) - noise_threads()))
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def noised_average(self, grad: torch.Tensor, std: torch.Tensor, lot_size: int) -> torch.Tensor:
        if self.grid is None:
            return grad / lot_size
        values = grad.detach().to("cpu", torch.float64).numpy()
        released = self.grid.place(values, self._noise(values.size))
        return torch.from_numpy(released / lot_size).to(device=grad.device, dtype=grad.dtype)

    def _noise(self, size: int) -> np.ndarray:
        current = self._ahead.pop(size, None) or self._drawer.submit(self._draw, size)
        self._ahead[size] = self._drawer.submit(self._draw, size)     # runs after `current` (one thread)
        return current.result()

    def _draw(self, size: int) -> np.ndarray:
        return self.grid.noise(size, self.sources[0], self.sources[1:])


def noise_threads() -> int:
    """The threads a secure training's noise is drawn in: half the cores (at least one, at most 8)."""
    return max(1, min((os.cpu_count() or 1) // 2, 8))


def uniform(shape, source) -> torch.Tensor:
    """U[0, 1) float32 draws of `shape` on the CPU from a torch generator or a numpy Generator."""
    if isinstance(source, np.random.Generator):
        return torch.from_numpy(source.random(tuple(shape))).float()
    return torch.rand(shape, generator=source)
