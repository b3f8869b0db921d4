"""The MLP trainer as it was before batching (commit fa8a822), for benchmarks/gpu_trainers.py only.

DP-SGD / DP-Adam for ReLU multilayer perceptrons in torch (MLP1 784-1000-10, MLP2 784-128-64-10).

Per-example gradient norms without per-example gradients ("ghost clipping", Goodfellow 2015;
Li et al. 2022): for a dense layer z = h W^T + b, example i's gradient is the outer product
g_i h_i^T (and g_i for the bias), whose squared Frobenius norm is ||g_i||^2 (||h_i||^2 + 1).
One backward pass to the pre-activations gives every g_i; the clipped sum is then
(s * G)^T H with s_i = min(1, L / ||grad_i||): the same numbers as clipping materialised
per-example gradients (tested against Opacus), at the cost of one ordinary backward pass.
Lots are sampled by our own sampler (`DPSGDHyper.lots`: uniform, fixed size, without replacement). Runs on the GPU
when one is present.
"""
from __future__ import annotations

import numpy as np
import torch

from dptradeoff.train.hyper import ADAM_BETA1, ADAM_BETA2, ADAM_KAPPA, DPSGDHyper
from dptradeoff.train.mlp import ARCHITECTURES, init_params   # unchanged by batching

def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def forward(params, x):
    """Returns logits and the list of (layer input h, pre-activation z) for each layer."""
    h, cache = x, []
    layers = len(params) // 2
    for k in range(layers):
        z = h @ params[2 * k].T + params[2 * k + 1]
        cache.append((h, z))
        h = torch.relu(z) if k < layers - 1 else z
    return h, cache


def clipped_gradient_sum(params, x, y, clip: float):
    """Sum over the lot of per-example gradients clipped to `clip`; returns (grads, per-example norms)."""
    logits, cache = forward(params, x)
    loss = torch.nn.functional.cross_entropy(logits, y, reduction="sum")
    gz = torch.autograd.grad(loss, [z for _, z in cache])
    sq = torch.zeros(len(x), dtype=x.dtype, device=x.device)
    for (h, _), g in zip(cache, gz):
        sq += (g * g).sum(1) * ((h * h).sum(1) + 1.0)
    norms = sq.sqrt()
    scale = torch.clamp(clip / norms.clamp_min(1e-12), max=1.0)
    grads = []
    for (h, _), g in zip(cache, gz):
        gs = g * scale[:, None]
        grads += [gs.T @ h.detach(), gs.sum(0)]
    return grads, norms


def train(x: np.ndarray, y: np.ndarray, arch: str, optimizer: str, hp: DPSGDHyper, seed: int,
          checkpoint=None) -> list[torch.Tensor]:
    """The parameters after hp.epochs epochs of DP-SGD/DP-Adam. `checkpoint(epoch, params)`, where given,
    is called after every epoch: the draws of the first e epochs (lots, noise) come from the seed's
    streams in step order and the learning rate is constant, so the parameters it sees after epoch e
    are those of a training of e epochs from the same seed."""
    dev = device()
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    xs = torch.as_tensor(np.array(x, dtype=np.float32), device=dev)
    ys = torch.as_tensor(np.asarray(y, dtype=np.int64), device=dev)
    n = len(xs)
    params = [p.requires_grad_(True) for p in init_params(ARCHITECTURES[arch], gen, dev)]
    mu = [torch.zeros_like(p) for p in params]
    nu = [torch.zeros_like(p) for p in params]
    noise_std = 2.0 * hp.clip * hp.noise
    noise_gen = torch.Generator(device=dev).manual_seed(seed + 1)
    steps_per_epoch = hp.steps(n) // hp.epochs
    lots = (rng.choice(n, hp.lot_size, replace=False) for _ in range(hp.steps(n)))   # as DPSGDHyper.lots did
    for step, lot in enumerate(lots, start=1):
        idx = torch.as_tensor(lot, device=dev)
        grads, _ = clipped_gradient_sum(params, xs[idx], ys[idx], hp.clip)
        with torch.no_grad():
            for k, (p, g) in enumerate(zip(params, grads)):
                # (g + noise * std) / m, in place in the noise tensor: the same float32 operations
                # in the same order as the expression, without three temporaries of the layer's size
                g = torch.randn(g.shape, generator=noise_gen, device=dev).mul_(noise_std).add_(g).div_(hp.lot_size)
                if optimizer == "sgd":
                    p -= g.mul_(hp.learning_rate)
                else:
                    mu[k].mul_(ADAM_BETA1).add_(g, alpha=1 - ADAM_BETA1)
                    nu[k].mul_(ADAM_BETA2).addcmul_(g, g, value=1 - ADAM_BETA2)
                    mu_hat = mu[k] / (1 - ADAM_BETA1**step)
                    nu_hat = nu[k] / (1 - ADAM_BETA2**step)
                    p -= hp.learning_rate * mu_hat / (nu_hat.sqrt() + ADAM_KAPPA)
        if checkpoint is not None and step % steps_per_epoch == 0:
            checkpoint(step // steps_per_epoch, [p.detach() for p in params])
    return [p.detach() for p in params]


@torch.no_grad()
def accuracy(params, x: np.ndarray, y: np.ndarray) -> float:
    dev = params[0].device
    logits, _ = forward(params, torch.as_tensor(np.asarray(x, dtype=np.float32), device=dev))
    return float((logits.argmax(1).cpu().numpy() == np.asarray(y)).mean())
