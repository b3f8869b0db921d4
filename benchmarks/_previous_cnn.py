"""The CNN trainer as it was before batching (commit fa8a822), for benchmarks/gpu_trainers.py only.

DP-SGD for the CNN of PyTorch's "Basic MNIST Example", the model paper 004 §6.2 tunes on MNIST.

`Net` is the one definition of the network in the project (examples/opacus_cnn.py trains it with
Opacus): conv(1, 32, 3, 1) -> relu -> conv(32, 64, 3, 1) -> relu -> max-pool 2 -> dropout 0.25 ->
fc(9216, 128) -> relu -> dropout 0.5 -> fc(128, 10) -> log-softmax (pytorch/examples at
e9a4e75, mnist/main.py, which paper 004 cites).

`train` is the same DP-SGD as mlp.py, so that `dpsgd` accounts for it unchanged: T =
epochs * round(n / m) steps (`DPSGDHyper.steps`), each on a lot of m distinct examples drawn
uniformly without replacement, afresh every step (`DPSGDHyper.lots`); every per-example gradient
is clipped to L2 norm L, N(0, (2 L z)^2) is added to the sum (replace-one sensitivity 2L) and the
result divided by m. Per-example gradient norms and the clipped sum come from one ordinary forward
and backward pass (`clipped_gradient_sum`: per-example gradients materialised for the two small
convolutions only, ghost norms for the dense layers, whose fc1 alone has 1.2 M weights), `CHUNK`
examples at a time so memory stays bounded. Dropout is applied with masks drawn from the trainer's own generator, one per example,
with nn.Dropout's law (zero with probability p, else scaled by 1 / (1 - p)); dropout only changes
the function whose gradient is clipped, not the privacy analysis. Input: MNIST pixel rows in [0, 1]
(784 features, data/mnist.py), reshaped to 1x28x28 and normalised as the Basic MNIST Example does.
Runs on the GPU when one is present.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from _previous_mlp import device
from dptradeoff.train.cnn import DROPOUT, Net, images, init_params   # unchanged by batching
from dptradeoff.train.hyper import DPSGDHyper

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081   # the Basic MNIST Example's normalisation
CHUNK = 128   # examples per forward/backward pass


def dropout_masks(count: int, generator: torch.Generator, dev) -> tuple[torch.Tensor, torch.Tensor]:
    """One pair of dropout masks per example: after the pooling (64x12x12) and after fc1 (128)."""
    return tuple(torch.bernoulli(torch.full((count, *shape), 1.0 - p, device=dev), generator=generator).div_(1.0 - p)
                 for p, shape in zip(DROPOUT, ((64, 12, 12), (128,))))


def clipped_gradient_sum(model: Net, x, y, masks, clip: float, chunk: int = CHUNK):
    """Sum over the lot of per-example gradients clipped to L2 norm `clip` (the norm over all
    parameters together); returns (gradient sums by parameter name, per-example norms before clipping).

    One forward and one backward pass to the layers' outputs per chunk of examples. Per-example
    gradients: a convolution's is g_i unfold(h_i)^T (materialised: 18,496 numbers per example for
    conv2); a dense layer's is the outer product g_i h_i^T, whose squared norm ||g_i||^2 ||h_i||^2 (plus
    ||g_i||^2 for the bias) needs no materialising, and whose clipped sum is (s * G)^T H (as mlp.py)."""
    convs, dense = (model.conv1, model.conv2), (model.fc1, model.fc2)
    sums = {k: torch.zeros_like(v) for k, v in model.named_parameters()}
    norms = []
    for s in range(0, len(x), chunk):
        inputs, outputs = {}, {}

        def keep(module, args, out):
            inputs[module], outputs[module] = args[0].detach(), out

        handles = [layer.register_forward_hook(keep) for layer in convs + dense]
        try:
            loss = F.nll_loss(model(x[s:s + chunk], (masks[0][s:s + chunk], masks[1][s:s + chunk])), y[s:s + chunk],
                              reduction="sum")
        finally:
            for handle in handles:
                handle.remove()
        grads = torch.autograd.grad(loss, [outputs[layer] for layer in convs + dense])
        with torch.no_grad():
            per_conv, sq = [], 0.0
            for layer, g in zip(convs, grads[:2]):
                g = g.flatten(2)                                          # (B, C_out, positions)
                w = torch.bmm(g, F.unfold(inputs[layer], layer.kernel_size).transpose(1, 2))  # (B, C_out, C_in k k)
                b = g.sum(2)
                per_conv.append((w, b))
                sq = sq + w.pow(2).sum((1, 2)) + b.pow(2).sum(1)
            for layer, g in zip(dense, grads[2:]):
                sq = sq + g.pow(2).sum(1) * (inputs[layer].pow(2).sum(1) + 1.0)
            norm = sq.sqrt()
            scale = torch.clamp(clip / norm.clamp_min(1e-12), max=1.0)
            for name, (w, b) in zip(("conv1", "conv2"), per_conv):
                sums[f"{name}.weight"] += torch.tensordot(scale, w, dims=1).view_as(sums[f"{name}.weight"])
                sums[f"{name}.bias"] += scale @ b
            for name, layer, g in zip(("fc1", "fc2"), dense, grads[2:]):
                gs = g * scale[:, None]
                sums[f"{name}.weight"] += gs.T @ inputs[layer]
                sums[f"{name}.bias"] += gs.sum(0)
        norms.append(norm)
    return sums, torch.cat(norms)


def train(x: np.ndarray, y: np.ndarray, hp: DPSGDHyper, seed: int, checkpoint=None) -> Net:
    """DP-SGD (plain SGD steps) of the CNN on pixel rows x, labels y; returns the network in eval mode.
    `checkpoint(epoch, model)`, where given, is called after every epoch with the network in eval mode
    (as mlp.train: what it sees after epoch e is a training of e epochs from the same seed); the
    training continues in train mode after it."""
    dev = device()
    rng = np.random.default_rng(seed)
    model = Net()
    init_params(model, torch.Generator().manual_seed(seed))
    model.to(dev)
    xs = torch.as_tensor(images(x), device=dev)
    ys = torch.as_tensor(np.asarray(y, dtype=np.int64), device=dev)
    noise_std = 2.0 * hp.clip * hp.noise
    noise_gen = torch.Generator(device=dev).manual_seed(seed + 1)
    mask_gen = torch.Generator(device=dev).manual_seed(seed + 2)
    steps_per_epoch = hp.steps(len(xs)) // hp.epochs
    lots = (rng.choice(len(xs), hp.lot_size, replace=False) for _ in range(hp.steps(len(xs))))   # as DPSGDHyper.lots did
    for step, lot in enumerate(lots, start=1):
        idx = torch.as_tensor(lot, device=dev)
        grads, _ = clipped_gradient_sum(model, xs[idx], ys[idx], dropout_masks(len(idx), mask_gen, dev), hp.clip)
        with torch.no_grad():
            for name, p in model.named_parameters():
                g = grads[name]
                # (g + noise * std) / m, as mlp.py: N(0, (2 L z)^2) on the sum of clipped gradients
                g = torch.randn(g.shape, generator=noise_gen, device=dev).mul_(noise_std).add_(g).div_(hp.lot_size)
                p -= g.mul_(hp.learning_rate)
        if checkpoint is not None and step % steps_per_epoch == 0:
            checkpoint(step // steps_per_epoch, model.eval())
            model.train()
    return model.eval()


