"""DP-SGD / DP-Adam for ReLU multilayer perceptrons in torch (MLP1 784-1000-10, MLP2 784-128-64-10), B
networks at a time (batch.py): stacked weights (B, out, in), batched matrix products, one step of every
network per kernel launch.

Per-example gradient norms without per-example gradients ("ghost clipping", Goodfellow 2015;
Li et al. 2022): for a dense layer z = h W^T + b, example i's gradient is the outer product
g_i h_i^T (and g_i for the bias), whose squared Frobenius norm is ||g_i||^2 (||h_i||^2 + 1).
One backward pass to the pre-activations gives every g_i; the clipped sum is then
(s * G)^T H with s_i = min(1, L / ||grad_i||): the same numbers as clipping materialised
per-example gradients (tested against Opacus), at the cost of one ordinary backward pass.
Lots and noise are drawn on the device (`batch.draw_lots`, `batch.noised_average`); nothing inside an
epoch waits for the host. Runs on the GPU when one is present.
"""
from __future__ import annotations

import math
from contextlib import nullcontext

import numpy as np
import torch

from .batch import Batch, SecureNoise, device, draw_lots, noised_average, parts, per_network, uniform
from .hyper import ADAM_BETA1, ADAM_BETA2, ADAM_KAPPA, DPSGDHyper

__all__ = ["ARCHITECTURES", "Batch", "device", "train", "train_batch", "accuracy", "accuracies", "logits"]

ARCHITECTURES = {"mlp1": (784, 1000, 10), "mlp2": (784, 128, 64, 10)}


def init_params(sizes, generator, dev) -> list[torch.Tensor]:
    """One network, PyTorch's default nn.Linear initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for W and b,
    from a torch generator or a numpy Generator (`batch.uniform`)."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        params.append((uniform((fan_out, fan_in), generator) * 2 - 1).mul_(bound).to(dev))
        params.append((uniform((fan_out,), generator) * 2 - 1).mul_(bound).to(dev))
    return params


def init_batch(sizes, batch: Batch, dev) -> list[torch.Tensor]:
    """Every network initialised from its own source (`Batch.uniform_source`, as `init_params`), stacked:
    (B, out, in) and (B, out)."""
    nets = [init_params(sizes, batch.uniform_source(i), "cpu") for i in range(batch.width)]
    return [torch.stack(tensors).to(dev) for tensors in zip(*nets)]


def _dense(h, w, b):
    """h W_b^T + b_b for each network b; h (B, rows, in), or (rows, in) shared by all."""
    if h.dim() == 2:
        return torch.matmul(h, w.transpose(1, 2)) + b.unsqueeze(1)
    if h.device.type == "cpu":
        # a CPU bmm splits the networks between the cores (3 networks on 2 cores: one idles a third of the
        # time); one matrix product per network uses every core
        if len(w) == 1:
            return torch.addmm(b[0], h[0], w[0].T).unsqueeze(0)
        return torch.stack([torch.addmm(b[i], h[i], w[i].T) for i in range(len(w))])
    return torch.baddbmm(b.unsqueeze(1), h, w.transpose(1, 2))


def _weight_sums(gs, h):
    """gs_b^T h_b for each network b: (B, out, in)."""
    if h.device.type == "cpu":   # as _dense
        out = torch.empty(gs.shape[0], gs.shape[2], h.shape[2], dtype=h.dtype)
        for i in range(len(out)):
            torch.mm(gs[i].T, h[i], out=out[i])
        return out
    return torch.bmm(gs.transpose(1, 2), h)


def forward(params, x):
    """Stacked networks on x (B, rows, in), or on the same rows (rows, in) for all: logits (B, rows, out)
    and the list of (layer input h, pre-activation z) for each layer."""
    h, cache = x, []
    layers = len(params) // 2
    for k in range(layers):
        w, b = params[2 * k], params[2 * k + 1]
        z = _dense(h, w, b)
        cache.append((h, z))
        h = torch.relu(z) if k < layers - 1 else z
    return h, cache


def clipped_gradient_sum(params, x, y, clip, keep=None):
    """For each network b, the sum over its lot x[b] of per-example gradients clipped to clip[b]; returns
    (stacked grads, per-example norms (B, m)). `keep` (B, m), where given, leaves out the examples where
    it is False (the audit's canary)."""
    params = [p.detach().requires_grad_(True) for p in params]   # leaves for the graph, sharing storage
    logits, cache = forward(params, x)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum")
    gz = torch.autograd.grad(loss, [z for _, z in cache])
    with torch.no_grad():
        sq = torch.zeros(x.shape[:2], dtype=x.dtype, device=x.device)
        for (h, _), g in zip(cache, gz):
            sq += (g * g).sum(2) * ((h * h).sum(2) + 1.0)
        norms = sq.sqrt()
        scale = torch.clamp(per_network(clip, norms) / norms.clamp_min(1e-12), max=1.0)
        if keep is not None:
            scale = scale * keep
        grads = []
        for (h, _), g in zip(cache, gz):
            gs = g * scale.unsqueeze(2)
            grads += [_weight_sums(gs, h), gs.sum(1)]
    return grads, norms


def train_batch(x: np.ndarray, y: np.ndarray, arch: str, optimizer: str, batch: Batch,
                checkpoint=None) -> list[torch.Tensor]:
    """The stacked parameters of `batch`'s networks after its epochs of DP-SGD/DP-Adam. Every step: each
    network's lot, its clipped sum, N(0, (2 L z)^2) on every tensor (biases included), divided by m, and
    the SGD or Adam update with the network's learning rate. `checkpoint(epoch, params)`, where given, is
    called after every epoch with the stacked parameters: the parameters of a batch of that many epochs."""
    dev = device()
    # a release (secure) trains in float64: its clipped sums then move by at most the clipping norm to within
    # 1e-13, far inside the 7.6 ppm its exact noise pays for the grid (exact_noise); float32 sums of a lot can be
    # off by more
    real = torch.float64 if batch.secure is not None else torch.float32
    xs = torch.as_tensor(np.array(x, dtype=np.float32), device=dev).to(real)
    ys = torch.as_tensor(np.asarray(y, dtype=np.int64), device=dev)
    n, m, width = len(xs), batch.lot_size, batch.width
    params = [p.to(real) for p in init_batch(ARCHITECTURES[arch], batch, dev)]
    mu = [torch.zeros_like(p) for p in params]
    nu = [torch.zeros_like(p) for p in params]
    std = batch.noise_std(dev)
    clip, lr = batch.clips(dev).to(real), batch.rates(dev).to(real)
    pieces = parts(width, dev)
    steps = batch.steps(n)
    steps_per_epoch = steps // batch.epochs
    lots, stream = batch.streams(dev, sum(p[0].numel() for p in params))
    # a release's noise is drawn beside the steps, on cores torch leaves it, by a thread shut down when the
    # training ends or raises (SecureNoise)
    with (stream if isinstance(stream, SecureNoise) else nullcontext(),
          SecureNoise.sharing_cores() if batch.secure is not None else nullcontext()):
        for step in range(1, steps + 1):
            idx = draw_lots(lots, width, n, m, dev)
            grads, _ = clipped_gradient_sum(params, xs[idx], ys[idx], clip)
            with torch.no_grad():
                for k, (p, g) in enumerate(zip(params, grads)):
                    for part in pieces:
                        g_part = noised_average(g[part], stream, std[part], m)
                        rate = per_network(lr[part], g_part)
                        if optimizer == "sgd":
                            p[part] -= g_part.mul_(rate)
                        else:
                            mu[k][part].mul_(ADAM_BETA1).add_(g_part, alpha=1 - ADAM_BETA1)
                            nu[k][part].mul_(ADAM_BETA2).addcmul_(g_part, g_part, value=1 - ADAM_BETA2)
                            mu_hat = mu[k][part] / (1 - ADAM_BETA1**step)
                            nu_hat = nu[k][part] / (1 - ADAM_BETA2**step)
                            p[part] -= rate * mu_hat / (nu_hat.sqrt() + ADAM_KAPPA)
            if checkpoint is not None and step % steps_per_epoch == 0:
                checkpoint(step // steps_per_epoch, params)
    return params


def train(x: np.ndarray, y: np.ndarray, arch: str, optimizer: str, hp: DPSGDHyper, seed: int,
          checkpoint=None, secure: np.random.Generator | None = None) -> list[torch.Tensor]:
    """One network: `train_batch` of width 1, its parameters unstacked (W (out, in), b (out) per layer).
    `checkpoint(epoch, params)` sees the unstacked parameters after every epoch. With `secure` (a release's
    cryptographic generator) every draw comes from it (`Batch.secure`)."""
    watch = None if checkpoint is None else (lambda epoch, params: checkpoint(epoch, [p[0] for p in params]))
    batch = Batch((hp,), (int(seed),), secure)
    return [p[0] for p in train_batch(x, y, arch, optimizer, batch, watch)]


def _stacked(params):
    return params if params[0].dim() == 3 else [p.unsqueeze(0) for p in params]


@torch.no_grad()
def logits(params, x: np.ndarray, chunk: int = 2000) -> torch.Tensor:
    """(B, rows, 10) logits of stacked networks (or (1, rows, 10) of one network's parameters) on x."""
    params = _stacked(params)
    xs = torch.as_tensor(np.asarray(x), dtype=params[0].dtype, device=params[0].device)
    return torch.cat([forward(params, xs[s:s + chunk])[0] for s in range(0, len(xs), chunk)], dim=1)


def accuracies(params, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Test accuracy of each of the stacked networks: (B,)."""
    predicted = logits(params, x).argmax(2).cpu().numpy()
    return (predicted == np.asarray(y)[None, :]).mean(axis=1)


def accuracy(params, x: np.ndarray, y: np.ndarray) -> float:
    """One network's test accuracy."""
    return float(accuracies(params, x, y)[0])
