"""DP-SGD / DP-Adam for linear models with closed-form per-example gradients, compiled with numba.

Every loss here is phi(w.x, y) for a scalar function phi, so the per-example gradient is
c_i * x_i with c_i = dphi/d(w.x), its norm is |c_i| * ||x_i||, and the sum of clipped
gradients is sum_i c_i min(1, L / (|c_i| ||x_i||)) x_i: no per-example gradient is ever stored.
A constant 1 feature is appended, so w includes the bias.

Losses (labels y in {-1, +1} for the classifiers):
- "logistic": log(1 + exp(-y w.x));
- "hinge": max(0, 1 - y w.x), the standard (non-squared) hinge of a linear SVM, with
  subgradient -y x where the margin is < 1 and 0 otherwise;
- "squared": (w.x - y)^2 / 2, linear regression (Twitter task).

`train` runs every step of every replication in one compiled numba kernel (`_kernel`, cached on
disk, the cache keyed on exact_noise's sources too: the kernels compile its sampler in, `jit_cache`).
Features are stored as float32: dense rows, or, when most entries are zero, CSR rows padded
to whole blocks of BLOCK entries (no values at all for 0/1 features); all arithmetic is float64.
Each lot is drawn by a partial Fisher-Yates shuffle driven by a SplitMix64 stream, the noise by the
caller's numpy Generator (which also seeds the stream), so the same Generator state gives the same
weights. `clipped_gradient_sum` is the same clipping in numpy, for a given lot.

A traced training can stop and resume: `trace_segment` returns, beside the weights at its
checkpoints, its `TraceState` (the step reached, weights, Adam's moments, the shuffle's permutation,
the SplitMix64 state and the Generator's state), and continuing from it draws exactly what the
uninterrupted training would have drawn next.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numba
import numpy as np

from .. import exact_noise
from ..jit_cache import key_caches
from ..secure_random import is_secure
from .hyper import ADAM_BETA1, ADAM_BETA2, ADAM_KAPPA, DPSGDHyper

LOSSES = ("logistic", "hinge", "squared")
OPTIMIZERS = ("sgd", "adam")
CSR_BELOW_DENSITY = 0.5  # store rows as CSR when fewer than this fraction of features are non-zero
BLOCK = 8  # CSR rows are padded to a multiple of BLOCK entries: fixed-length inner loops


def with_bias(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x, np.ones((len(x), 1), dtype=x.dtype)], axis=1)


def loss_derivative(loss: str, score: np.ndarray, y: np.ndarray) -> np.ndarray:
    """d loss / d score at score = w.x, elementwise."""
    if loss == "logistic":
        margin = y * score
        return -y * 0.5 * (1.0 - np.tanh(0.5 * margin))  # -y * sigmoid(-margin), overflow-free
    if loss == "hinge":
        return np.where(y * score < 1.0, -y, 0.0)
    if loss == "squared":
        return score - y
    raise ValueError(f"unknown loss {loss!r}; use one of {LOSSES}")


def clipped_gradient_sum(loss: str, w: np.ndarray, xb: np.ndarray, yb: np.ndarray, clip: float,
                         xb_norms: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sum over the lot of per-example gradients clipped to L2 norm `clip`, and the unclipped norms.

    Shapes: w (..., d), xb (..., m, d), yb (..., m); leading dimensions are independent runs.
    """
    score = np.matmul(xb, w[..., None])[..., 0]
    c = loss_derivative(loss, score, yb)
    if xb_norms is None:
        xb_norms = np.linalg.norm(xb, axis=-1)
    norms = np.abs(c) * xb_norms
    scale = np.minimum(1.0, clip / np.maximum(norms, np.finfo(norms.dtype).tiny))
    return np.matmul((c * scale)[..., None, :], xb)[..., 0, :], norms


def train(x: np.ndarray, y: np.ndarray, loss: str, optimizer: str, hp: DPSGDHyper, runs: int,
          rng: np.random.Generator) -> np.ndarray:
    """Train `runs` independent replications; returns weights of shape (runs, d + 1) (bias last).

    Each step: every run samples its own lot of m examples uniformly without replacement, clips,
    adds N(0, (2 L z)^2 I) to the sum, divides by m and takes an SGD or Adam step (paper 001 Alg. 3/4).
    """
    return _train(x, y, loss, optimizer, hp, runs, rng)[0]


def train_trace(x: np.ndarray, y: np.ndarray, loss: str, optimizer: str, hp: DPSGDHyper, runs: int,
                rng: np.random.Generator, epochs: list[int]) -> np.ndarray:
    """The weights (len(epochs), runs, d + 1) of `runs` replications after each of `epochs` (increasing,
    the last at most hp.epochs), from one training of max(epochs) epochs. Checkpoint e is exactly
    `train_trace` of a training of e epochs from the same Generator state: the replications take their
    steps together (step 1 of every run, then step 2, ...), so no draw of a later step comes before an
    earlier one, and the learning rate is constant. (`train` runs the replications one after the
    other: the same algorithm, its draws in another order.)"""
    return trace_segment(x, y, loss, optimizer, hp, runs, rng, epochs)[0]


@dataclass(frozen=True)
class TraceState:
    """A traced training after `step` steps: everything its later steps read, draw from or update."""
    step: int
    weights: np.ndarray            # (runs, d + 1 + BLOCK): the weights with the padding features
    first_moments: np.ndarray      # (runs, d + 1), Adam's (zero for SGD)
    second_moments: np.ndarray
    permutation: np.ndarray        # the partial Fisher-Yates shuffle's order (its lots depend on it)
    splitmix: np.ndarray           # (1,) uint64: the lot stream's state
    generator: dict                # the noise Generator's bit-generator state (numpy's dict)

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(buffer, step=np.int64(self.step), weights=self.weights, first_moments=self.first_moments,
                 second_moments=self.second_moments, permutation=self.permutation, splitmix=self.splitmix,
                 generator=np.frombuffer(json.dumps(self.generator).encode(), np.uint8))
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "TraceState":
        with np.load(io.BytesIO(data)) as f:
            return cls(int(f["step"]), f["weights"].copy(), f["first_moments"].copy(), f["second_moments"].copy(),
                       f["permutation"].copy(), f["splitmix"].copy(), json.loads(f["generator"].tobytes().decode()))

    def generator_now(self) -> np.random.Generator:
        """A Generator in the saved state (its own bit generator: the caller's is not touched)."""
        bits = getattr(np.random, self.generator["bit_generator"])()
        bits.state = self.generator
        return np.random.Generator(bits)


def trace_segment(x: np.ndarray, y: np.ndarray, loss: str, optimizer: str, hp: DPSGDHyper, runs: int,
                  rng: np.random.Generator, epochs: list[int], state: TraceState | None = None
                  ) -> tuple[np.ndarray, TraceState]:
    """`train_trace` from `state` (None: a new training from `rng`; otherwise `rng` is not used): the weights
    after each of `epochs` (all beyond the state's), and the state at the last. Continuing a training from
    the state of its first segment gives the uninterrupted training's weights, bit for bit."""
    epochs = [int(e) for e in epochs]
    if not epochs or epochs != sorted(set(epochs)) or epochs[0] < 1 or epochs[-1] > hp.epochs:
        raise ValueError(f"trace epochs {epochs} must increase, from 1 up to the training's {hp.epochs} epochs")
    steps_per_epoch = hp.steps(len(y)) // hp.epochs
    checkpoints = np.array([e * steps_per_epoch for e in epochs], np.int64)
    if state is not None and checkpoints[0] <= state.step:
        raise ValueError(f"a training resumed after step {state.step} cannot record epochs {epochs} (from step "
                         f"{checkpoints[0]}); record only the epochs after {state.step // steps_per_epoch}")
    trained = DPSGDHyper(epochs[-1], hp.lot_size, hp.learning_rate, hp.noise, hp.clip)
    w, _, _, final = _train(x, y, loss, optimizer, trained, runs, rng, checkpoints=checkpoints, resume=state,
                            keep_state=True)
    return w, final


def trace_states(x: np.ndarray, y: np.ndarray, loss: str, optimizer: str, hp: DPSGDHyper, runs: int,
                 rng: np.random.Generator, checkpoints: np.ndarray, record_lots: bool = False):
    """The weights and Adam's first moments (len(checkpoints), runs, d + 1) after each of `checkpoints`
    (increasing step counts) of `train_trace`'s training: the training state a white-box audit reads
    (audit/whitebox.py). With SGD the moments stay zero. With `record_lots`, also every step's lot
    (runs, steps, m) and noise (runs, steps, d + 1), as the trainer drew them."""
    moments = np.zeros((len(checkpoints), runs, x.shape[1] + 1))
    w, lots, noise = _train(x, y, loss, optimizer, hp, runs, rng, record=record_lots,
                            checkpoints=np.asarray(checkpoints, np.int64), moments=moments)
    return (w, moments, lots, noise) if record_lots else (w, moments)


def _train(x, y, loss, optimizer, hp, runs, rng, record=False, csr=None, checkpoints=None, moments=None,
           resume: TraceState | None = None, keep_state: bool = False):
    """`train`, also returning the lots (runs, steps, m) and noise (runs, steps, d + 1) it drew when
    `record`; `csr` forces the row storage (None: CSR below CSR_BELOW_DENSITY). With `checkpoints`
    (increasing step counts) the weights after each, from `_trace_kernel`, and, into `moments` where
    given, Adam's first moments after each; from the state `resume` (None: step 0), and with
    `keep_state` the state after the last step as a fourth value."""
    if loss not in LOSSES or optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown loss/optimizer {loss!r}/{optimizer!r}")
    x = np.ascontiguousarray(x, dtype=np.float32)
    n, d = x.shape
    steps, m = hp.steps(n), hp.lot_size
    if not 0 < m <= n < 2**32:
        raise ValueError(f"lot size {m} must be between 1 and the number of examples {n} (< 2**32)")
    norms, row_nnz = _row_stats(x)
    if csr is None:
        csr = row_nnz.sum() < CSR_BELOW_DENSITY * x.size
    if csr:
        indptr, indices, values = _padded_csr(x, row_nnz)
        binary = np.all((values == 0) | (values == 1))
        rows = (None, indptr, indices.astype(np.min_scalar_type(d + BLOCK)), None if binary else values)
    else:
        rows = (x, np.zeros(1, np.int64), np.zeros(0, np.uint8), None)
    shape = (runs, steps) if record else (1, 1)   # one unused row when not recording
    lots, noise = np.zeros(shape + (m,), np.int64), np.zeros(shape + (d + 1,))
    if resume is not None:
        rng = resume.generator_now()
        start = resume
    else:
        start = TraceState(0, np.zeros((runs, d + 1 + BLOCK)), np.zeros((runs, d + 1)), np.zeros((runs, d + 1)),
                           np.arange(n, dtype=np.uint32), np.array([rng.integers(2**64, dtype=np.uint64)]), {})
    secure = is_secure(rng)
    grid = hp.release_grid(d + 1) if secure and hp.noise > 0 else None
    if grid is not None:
        exact_noise.check_generator(rng)     # its doubles are read as 53 random bits
    common = (*rows, d, norms, np.asarray(y, dtype=np.float64), LOSSES.index(loss), optimizer == "adam",
              steps, m, hp.clip, hp.noise, hp.learning_rate, ADAM_BETA1, ADAM_BETA2, ADAM_KAPPA, runs,
              start.splitmix[0], rng, secure, 0.0 if grid is None else grid.spacing, 0 if grid is None else grid.bits)
    if checkpoints is None:
        return _kernel(*common, record, lots, noise), lots, noise
    if start.weights.shape != (runs, d + 1 + BLOCK) or len(start.permutation) != n:
        raise ValueError(f"a training state of {start.weights.shape[0]} replications over {len(start.permutation)} "
                         f"rows cannot continue a training of {runs} over {n}")
    w, mu, nu = start.weights.copy(), start.first_moments.copy(), start.second_moments.copy()
    perm, splitmix = start.permutation.copy(), start.splitmix.copy()
    out = _trace_kernel(*common, checkpoints, lots if record else lots[:0], noise if record else noise[:0],
                        np.zeros((0, runs, d + 1)) if moments is None else moments, start.step, w, mu, nu, perm,
                        splitmix)
    if not keep_state:
        return out, lots, noise
    return out, lots, noise, TraceState(int(checkpoints[-1]), w, mu, nu, perm, splitmix, rng.bit_generator.state)


@numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
def _row_stats(x):
    """Each row's norm ||x_i|| (with the bias feature, in float64) and number of non-zeros."""
    norms, nnz = np.empty(len(x)), np.empty(len(x), np.int64)
    for i in range(len(x)):
        square_sum, count = 1.0, 0
        for v in x[i]:
            square_sum += np.float64(v) ** 2
            count += v != 0
        norms[i], nnz[i] = np.sqrt(square_sum), count
    return norms, nnz


@numba.njit(cache=True, nogil=True)
def _padded_csr(x, row_nnz):
    """CSR rows (indptr, indices, values), each padded to a multiple of BLOCK entries by entries
    (d + 1 + position in block, 0): padding features d+1 ... d+BLOCK have weight 0 throughout and
    never repeat within a row."""
    n, d = x.shape
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = np.cumsum(-(-row_nnz // BLOCK) * BLOCK)
    indices = d + 1 + np.arange(indptr[n]) % BLOCK
    values = np.zeros(indptr[n], np.float32)
    for i in range(n):
        p = indptr[i]
        for f in range(d):
            if x[i, f] != 0:
                indices[p], values[p] = f, x[i, f]
                p += 1
    return indptr, indices, values


@numba.njit(cache=True, nogil=True)
def _below(state, b):
    """Uniform integer in [0, b), 0 < b <= 2**32, from the SplitMix64 stream with state state[0]:
    the top 32 bits u of each output give floor(u b / 2**32), exactly uniform after Lemire's
    rejection of low = u b mod 2**32 < 2**32 mod b (so never when low >= b)."""
    b = np.uint64(b)
    while True:
        state[0] += np.uint64(0x9E3779B97F4A7C15)
        z = state[0]
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        prod = ((z ^ (z >> np.uint64(31))) >> np.uint64(32)) * b
        low = prod & np.uint64(0xFFFFFFFF)
        if low >= b or low >= np.uint64(2**32) % b:
            return np.int64(prod >> np.uint64(32))


# reassoc: vectorised sums; nogil: chains' evaluations train as threads of one process (bo.chain_round)
_FAST = dict(cache=True, nogil=True, fastmath={"reassoc", "contract"}, error_model="numpy")


@numba.njit(**_FAST)
def _dot(i, v, dense, indptr, indices, values):
    """x_i . v over the stored features of row i (not the bias)."""
    s = 0.0
    if dense is None:
        start = np.uint64(indptr[i])  # unsigned offsets: numba emits no negative-index wraparound
        for b in range((indptr[i + 1] - indptr[i]) // BLOCK):
            for q in range(BLOCK):
                p = start + np.uint64(b * BLOCK + q)
                s += (1.0 if values is None else values[p]) * v[indices[p]]
    else:
        for f in range(dense.shape[1]):
            s += dense[i, f] * v[f]
    return s


@numba.njit(**_FAST)
def _add(i, c, g, dense, indptr, indices, values):
    """g += c x_i over the stored features of row i (not the bias)."""
    if dense is None:
        start = np.uint64(indptr[i])
        for b in range((indptr[i + 1] - indptr[i]) // BLOCK):
            for q in range(BLOCK):
                p = start + np.uint64(b * BLOCK + q)
                g[indices[p]] += c * (1.0 if values is None else values[p])
    else:
        for f in range(dense.shape[1]):
            g[f] += c * dense[i, f]


@numba.njit(**_FAST)
def _step(t, wr, mu, nu, g, perm, state, rows, d, limit, y, loss, adam, m, clip, z, lr, beta1, beta2, kappa, rng,
          secure, spacing, bits, scratch, record, lot_out, noise_out):
    """Step t (1-based) of one replication with weights wr and Adam moments mu, nu: a fresh lot from
    the SplitMix64 stream `state`, clipped gradients, N(0, (2 L z)^2) noise from rng, the update. With
    `secure` (a release's cryptographic rng, `secure_random`), the lot is drawn from rng too and each noised
    sum is released exactly on the grid `spacing` (`exact_noise`, `DPSGDHyper.release_grid`; 0: no noise): what a step
    releases is then exactly the distribution the accountant analyses."""
    n = len(y)
    # Partial Fisher-Yates: each perm[k] is uniform over the not-yet-chosen perm[k:], so perm[:m] is
    # a uniform m-subset, whatever order earlier steps (of this replication or another) left perm in.
    for k in range(m):
        j = k + (rng.integers(0, n - k) if secure else _below(state, n - k))
        perm[j], perm[k] = perm[k], perm[j]
    if record:
        lot_out[:] = perm[:m]
    g[:] = 0.0
    for k in range(m):
        i = perm[k]
        score = wr[d] + _dot(i, wr, *rows)
        if loss == 0:
            c = -y[i] / (1.0 + np.exp(y[i] * score))
        elif loss == 1:
            c = -y[i] if y[i] * score < 1.0 else 0.0
        else:
            c = score - y[i]
        c = np.copysign(min(abs(c), limit[i]), c)  # c min(1, L / ||c x_i||)
        _add(i, c, g, *rows)
        g[d] += c
    for f in range(d + 1):
        if spacing > 0.0:   # (a secure step's grid) the update reads the released value alone, never the sum it came from
            released = exact_noise.released_value(g[f], spacing, bits, False, rng, *scratch)
            if record:
                noise_out[f] = released - g[f]
            g[f] = released / m
        else:
            e = 2.0 * clip * z * rng.standard_normal()
            if record:
                noise_out[f] = e
            g[f] = (g[f] + e) / m
    if adam:
        mu[:] = beta1 * mu + (1 - beta1) * g[:d + 1]
        nu[:] = beta2 * nu + (1 - beta2) * g[:d + 1] ** 2
        wr[:d + 1] -= lr * (mu / (1 - beta1**t)) / (np.sqrt(nu / (1 - beta2**t)) + kappa)
    else:
        wr[:d + 1] -= lr * g[:d + 1]


@numba.njit(**_FAST)
def _kernel(dense, indptr, indices, values, d, norms, y, loss, adam, steps, m, clip, z, lr,
            beta1, beta2, kappa, runs, seed, rng, secure, spacing, bits, record, lots, noise):
    """Weights (runs, d + 1) of `runs` replications, one after the other, from the arguments `_train`
    builds: each replication's draws follow the one before's in the two streams."""
    rows = (dense, indptr, indices, values)
    limit = clip / norms
    w = np.zeros((runs, d + 1 + BLOCK))  # + the padding features
    g, mu, nu = np.empty(d + 1 + BLOCK), np.empty(d + 1), np.empty(d + 1)
    perm = np.arange(len(y), dtype=np.uint32)
    state = np.array([seed])
    scratch = exact_noise.scratch()
    for r in range(runs):
        mu[:], nu[:] = 0.0, 0.0
        for t in range(1, steps + 1):
            _step(t, w[r], mu, nu, g, perm, state, rows, d, limit, y, loss, adam, m, clip, z, lr, beta1, beta2,
                  kappa, rng, secure, spacing, bits, scratch, record, lots[r, t - 1] if record else lots[0, 0],
                  noise[r, t - 1] if record else noise[0, 0])
    return w[:, :d + 1].copy()


@numba.njit(**_FAST)
def _trace_kernel(dense, indptr, indices, values, d, norms, y, loss, adam, steps, m, clip, z, lr,
                  beta1, beta2, kappa, runs, seed, rng, secure, spacing, bits, checkpoints, lots, noise, moments, start, w,
                  mu, nu, perm, state):
    """Weights (len(checkpoints), runs, d + 1) after each checkpoint step: the replications advance
    together, step by step, so the draws of the first T steps are the same whatever the total, and
    the weights at checkpoint T are those of a training of T steps from the same Generator state.
    Adam's first moments at each checkpoint go into `moments` unless it is empty. The training goes on
    from step `start` with the weights `w`, moments `mu`, `nu`, shuffle `perm` and SplitMix64 `state`
    (step 0: zeros, the identity and the seed), which it leaves as they are after its last step."""
    rows = (dense, indptr, indices, values)
    limit = clip / norms
    g = np.empty(d + 1 + BLOCK)
    out = np.zeros((len(checkpoints), runs, d + 1))
    record = lots.shape[0] > 0
    c = 0
    spare_lot, spare_noise = np.zeros(m, np.int64), np.zeros(d + 1)
    scratch = exact_noise.scratch()
    for t in range(start + 1, steps + 1):
        for r in range(runs):
            _step(t, w[r], mu[r], nu[r], g, perm, state, rows, d, limit, y, loss, adam, m, clip, z, lr, beta1, beta2,
                  kappa, rng, secure, spacing, bits, scratch, record, lots[r, t - 1] if record else spare_lot,
                  noise[r, t - 1] if record else spare_noise)
        while c < len(checkpoints) and checkpoints[c] == t:
            out[c] = w[:, :d + 1]
            if moments.shape[0] > 0:
                moments[c] = mu
            c += 1
    return out


def accuracy(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Test accuracy of each run's weights (w: (runs, d+1)); labels y in {-1, +1}."""
    scores = with_bias(np.asarray(x, dtype=np.float64)) @ w.T
    return ((scores >= 0) == (y[:, None] > 0)).mean(axis=0)


def mse(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    scores = with_bias(np.asarray(x, dtype=np.float64)) @ w.T
    return ((scores - y[:, None]) ** 2).mean(axis=0)


# the kernels compile exact_noise's sampler into themselves: their cache is keyed on its sources too (jit_cache)
key_caches(globals(), exact_noise.COMPILED_FROM)
