"""DP-SGD for the CNN of PyTorch's "Basic MNIST Example", the model paper 004 §6.2 tunes on MNIST.

`Net` is the one definition of the network in the project (examples/opacus_cnn.py trains it with
Opacus): conv(1, 32, 3, 1) -> relu -> conv(32, 64, 3, 1) -> relu -> max-pool 2 -> dropout 0.25 ->
fc(9216, 128) -> relu -> dropout 0.5 -> fc(128, 10) -> log-softmax (pytorch/examples at
e9a4e75, mnist/main.py, which paper 004 cites).

`train_batch` trains B networks side by side (batch.py): stacked parameters, the convolutions of all B
networks as one grouped convolution (the lot of network b in channel group b), the dense layers as
batched matrix products. It is the same DP-SGD as mlp.py, so that `dpsgd` accounts for it unchanged: T =
epochs * round(n / m) steps (`DPSGDHyper.steps`), each on a lot of m distinct examples drawn
uniformly without replacement, afresh every step (`DPSGDHyper.lots`); every per-example gradient
is clipped to L2 norm L, N(0, (2 L z)^2) is added to the sum (replace-one sensitivity 2L) and the
result divided by m. Per-example gradient norms and the clipped sum come from one ordinary forward
and backward pass (`clipped_gradient_sum`: per-example gradients materialised for the two small
convolutions only, ghost norms for the dense layers, whose fc1 alone has 1.2 M weights), `CHUNK`
examples at a time so memory stays bounded. Dropout is applied with masks drawn on the device from the batch's generator, one per example,
with nn.Dropout's law (zero with probability p, else scaled by 1 / (1 - p)); dropout only changes
the function whose gradient is clipped, not the privacy analysis. Input: MNIST pixel rows in [0, 1]
(784 features, data/mnist.py), reshaped to 1x28x28 and normalised as the Basic MNIST Example does.
Runs on the GPU when one is present.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .batch import Batch, device, draw_lots, noised_average, parts, per_network
from ..seeds import seed_sequence, torch_generator
from .hyper import DPSGDHyper
from .mlp import _dense, _weight_sums

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081   # the Basic MNIST Example's normalisation
DROPOUT = (0.25, 0.5)
CHUNK = 128   # examples per forward/backward pass: ~0.15 GB of activations and unfolded inputs in float32


class Net(nn.Module):
    """The Basic MNIST Example's CNN. `masks` (optional): dropout masks already scaled by 1 / (1 - p),
    used instead of the nn.Dropout modules (the DP-SGD trainer draws them itself)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(DROPOUT[0])
        self.dropout2 = nn.Dropout(DROPOUT[1])
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x, masks=None):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x) if masks is None else x * masks[0]
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x) if masks is None else x * masks[1]
        return F.log_softmax(self.fc2(x), dim=1)


def images(x) -> np.ndarray:
    """MNIST rows (784 pixels in [0, 1]) as normalised 1x28x28 float32 images."""
    return ((np.asarray(x, dtype=np.float32) - MNIST_MEAN) / MNIST_STD).reshape(-1, 1, 28, 28)


def init_params(model: Net, generator: torch.Generator) -> None:
    """PyTorch's default Conv2d / Linear initialisation, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights
    and biases, drawn from `generator` (not torch's global one)."""
    with torch.no_grad():
        for module in (model.conv1, model.conv2, model.fc1, model.fc2):
            bound = 1.0 / math.sqrt(module.weight[0].numel())
            for p in (module.weight, module.bias):
                p.copy_((torch.rand(p.shape, generator=generator) * 2 - 1) * bound)


NAMES = ("conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")
SHAPES = {"conv1.weight": (32, 1, 3, 3), "conv1.bias": (32,), "conv2.weight": (64, 32, 3, 3), "conv2.bias": (64,),
          "fc1.weight": (128, 9216), "fc1.bias": (128,), "fc2.weight": (10, 128), "fc2.bias": (10,)}


def init_batch(seeds, dev) -> dict[str, torch.Tensor]:
    """Every network initialised from its own seed (as `init_params`), stacked: name -> (B, ...)."""
    nets = []
    for s in seeds:
        model = Net()
        init_params(model, torch_generator(seed_sequence(s)))
        nets.append(dict(model.named_parameters()))
    return {k: torch.stack([net[k].detach() for net in nets]).to(dev) for k in NAMES}


def network(params: dict[str, torch.Tensor], b: int = 0) -> Net:
    """Network b of a batch as a `Net` in eval mode (on the batch's device)."""
    model = Net().to(params[NAMES[0]].device)
    with torch.no_grad():
        for k, p in model.named_parameters():
            p.copy_(params[k][b])
    return model.eval()


def stacked(model: Net) -> dict[str, torch.Tensor]:
    """One network's parameters as a batch of width 1."""
    return {k: p.detach().unsqueeze(0) for k, p in model.named_parameters()}


def dropout_masks(width: int, count: int, generator: torch.Generator, dev) -> tuple[torch.Tensor, torch.Tensor]:
    """One pair of dropout masks per network and example: after the pooling (B, m, 64, 12, 12) and after fc1
    (B, m, 128), each entry 0 with probability p, else 1 / (1 - p)."""
    return tuple(torch.bernoulli(torch.full((width, count, *shape), 1.0 - p, device=dev), generator=generator).div_(1.0 - p)
                 for p, shape in zip(DROPOUT, ((64, 12, 12), (128,))))


def _grouped(x: torch.Tensor) -> torch.Tensor:
    """(B, m, C, H, W) -> (m, B * C, H, W): network b's examples in channel group b."""
    b, m, c, h, w = x.shape
    return x.transpose(0, 1).reshape(m, b * c, h, w)


def forward(params, x, masks=None):
    """Log-probabilities (B, m, 10) of the stacked networks on images x (B, m, 1, 28, 28), and the layers'
    (input, output) pairs: the convolutions' in grouped layout (m, B * C, H, W), the dense layers' (B, m, .).
    `masks`: dropout masks as `dropout_masks` draws them, or None (eval mode: no dropout)."""
    width, m = x.shape[:2]
    cache = []
    h = _grouped(x)
    for name in ("conv1", "conv2"):
        w = params[f"{name}.weight"]
        z = F.conv2d(h, w.reshape(-1, *w.shape[2:]), params[f"{name}.bias"].reshape(-1), groups=width)
        cache.append((h, z))
        h = F.relu(z)
    h = F.max_pool2d(h, 2).reshape(m, width, 9216).transpose(0, 1)     # (B, m, 64 * 12 * 12)
    if masks is not None:
        h = h * masks[0].reshape(width, m, 9216)
    z = _dense(h, params["fc1.weight"], params["fc1.bias"])
    cache.append((h, z))
    h = F.relu(z)
    if masks is not None:
        h = h * masks[1]
    z = _dense(h, params["fc2.weight"], params["fc2.bias"])
    cache.append((h, z))
    return F.log_softmax(z, dim=2), cache


def conv_per_example_gradients(h, g, width: int, method: str | None = None) -> torch.Tensor:
    """Every example's gradient of a 3x3, stride-1 convolution's weight, for each network: (m, B, C_out, C_in 9),
    from its input h and the loss's gradient at its output g, both in grouped layout (m, B C, H, W).
    Example i's gradient is the cross-correlation of h_i with g_i:
    - "conv" (on a CPU): that cross-correlation as one convolution grouped by (example, network), g_i the
      kernel; 4-6 times faster there than unfolding (im2col is most of a CPU step);
    - "unfold" (on a GPU): g_i unfold(h_i)^T, batched matrix products.
    The two agree (tests/test_cnn.py)."""
    method = method or ("conv" if h.device.type == "cpu" else "unfold")
    rows = g.shape[0]
    c_out = g.shape[1] // width
    if method == "unfold":
        unfolded = F.unfold(h, 3).reshape(rows, width, -1, g.shape[2] * g.shape[3])   # (m, B, C_in 9, positions)
        return torch.einsum("mbcp,mbkp->mbck", g.reshape(rows, width, c_out, -1), unfolded)
    c_in = h.shape[1] // width
    inputs = h.reshape(rows, width, c_in, *h.shape[2:]).permute(2, 0, 1, 3, 4).reshape(c_in, rows * width, *h.shape[2:])
    kernels = g.reshape(rows * width * c_out, 1, *g.shape[2:])
    out = F.conv2d(inputs, kernels, groups=rows * width)                              # (C_in, m B C_out, 3, 3)
    return out.reshape(c_in, rows, width, c_out, 9).permute(1, 2, 3, 0, 4).reshape(rows, width, c_out, c_in * 9)


def clipped_gradient_sum(params, x, y, masks, clip, keep=None, chunk: int = CHUNK):
    """For each network b, the sum over its lot x[b] of per-example gradients clipped to L2 norm clip[b] (the
    norm over all parameters together); returns (stacked gradient sums by parameter name, per-example norms
    before clipping (B, m)). `keep` (B, m), where given, leaves out the examples where it is False.

    One forward and one backward pass to the layers' outputs per chunk of examples. Per-example
    gradients: a convolution's is g_i unfold(h_i)^T (materialised: 18,496 numbers per example for
    conv2); a dense layer's is the outer product g_i h_i^T, whose squared norm ||g_i||^2 ||h_i||^2 (plus
    ||g_i||^2 for the bias) needs no materialising, and whose clipped sum is (s * G)^T H (as mlp.py)."""
    width = x.shape[0]
    params = {k: params[k].detach().requires_grad_(True) for k in NAMES}   # leaves for the graph, sharing storage
    sums = {k: torch.zeros_like(params[k]) for k in NAMES}
    norms = []
    for s in range(0, x.shape[1], chunk):
        part = slice(s, s + chunk)
        log_probs, cache = forward(params, x[:, part], (masks[0][:, part], masks[1][:, part]))
        loss = F.nll_loss(log_probs.flatten(0, 1), y[:, part].flatten(), reduction="sum")
        grads = torch.autograd.grad(loss, [z for _, z in cache])
        with torch.no_grad():
            per_conv, sq = [], 0.0
            for (h, _), g, name in zip(cache[:2], grads[:2], ("conv1", "conv2")):
                w = conv_per_example_gradients(h, g, width)                               # (m, B, C_out, C_in k k)
                b = g.reshape(g.shape[0], width, g.shape[1] // width, -1).sum(3)          # (m, B, C_out)
                per_conv.append((name, w, b))
                sq = sq + w.pow(2).sum((2, 3)).T + b.pow(2).sum(2).T                     # (B, m)
            for (h, _), g in zip(cache[2:], grads[2:]):
                sq = sq + g.pow(2).sum(2) * (h.pow(2).sum(2) + 1.0)
            norm = sq.sqrt()
            scale = torch.clamp(per_network(clip, norm) / norm.clamp_min(1e-12), max=1.0)
            if keep is not None:
                scale = scale * keep[:, part]
            for name, w, b in per_conv:
                sums[f"{name}.weight"] += torch.einsum("bm,mbck->bck", scale, w).view_as(sums[f"{name}.weight"])
                sums[f"{name}.bias"] += torch.einsum("bm,mbc->bc", scale, b)
            for name, (h, _), g in zip(("fc1", "fc2"), cache[2:], grads[2:]):
                gs = g * scale.unsqueeze(2)
                sums[f"{name}.weight"] += _weight_sums(gs, h)
                sums[f"{name}.bias"] += gs.sum(1)
        norms.append(norm)
    return sums, torch.cat(norms, dim=1)


def train_batch(x: np.ndarray, y: np.ndarray, batch: Batch, checkpoint=None) -> dict[str, torch.Tensor]:
    """DP-SGD (plain SGD steps) of `batch`'s CNNs on pixel rows x, labels y; returns the stacked parameters.
    Every step draws, from the batch's generator: the lots, the dropout masks, then the noise of each tensor.
    `checkpoint(epoch, params)`, where given, is called after every epoch with the stacked parameters
    (as mlp.train_batch: what it sees after epoch e is a batch of e epochs from the same seeds)."""
    dev = device()
    xs = torch.as_tensor(images(x), device=dev)
    ys = torch.as_tensor(np.asarray(y, dtype=np.int64), device=dev)
    n, m, width = len(xs), batch.lot_size, batch.width
    params = init_batch(batch.seeds, dev)
    lots, stream = batch.streams(dev)
    std = batch.noise_std(dev)
    clip, lr = batch.clips(dev), batch.rates(dev)
    pieces = parts(width, dev)
    steps = batch.steps(n)
    steps_per_epoch = steps // batch.epochs
    for step in range(1, steps + 1):
        idx = draw_lots(lots, width, n, m, dev)
        masks = dropout_masks(width, m, stream, dev)
        grads, _ = clipped_gradient_sum(params, xs[idx], ys[idx], masks, clip)
        with torch.no_grad():
            for name in NAMES:
                p, g = params[name], grads[name]
                for part in pieces:
                    # (g + noise * std) / m, as mlp.py: N(0, (2 L z)^2) on the sum of clipped gradients
                    g_part = noised_average(g[part], stream, std[part], m)
                    p[part] -= g_part.mul_(per_network(lr[part], g_part))
        if checkpoint is not None and step % steps_per_epoch == 0:
            checkpoint(step // steps_per_epoch, params)
    return params


def train(x: np.ndarray, y: np.ndarray, hp: DPSGDHyper, seed: int, checkpoint=None) -> Net:
    """One network: `train_batch` of width 1, as a `Net` in eval mode. `checkpoint(epoch, model)` sees the
    network after every epoch, in eval mode."""
    watch = None if checkpoint is None else (lambda epoch, params: checkpoint(epoch, network(params)))
    return network(train_batch(x, y, Batch.replications(hp, [seed]), watch))


@torch.no_grad()
def accuracies(params, x: np.ndarray, y: np.ndarray, chunk: int = 500) -> np.ndarray:
    """Test accuracy of each of the stacked networks (or of one `Net`): (B,)."""
    params = stacked(params) if isinstance(params, Net) else params
    width = params[NAMES[0]].shape[0]
    xs = torch.as_tensor(images(x), device=params[NAMES[0]].device)
    predicted = torch.cat([forward(params, xs[s:s + chunk].unsqueeze(0).expand(width, -1, -1, -1, -1))[0].argmax(2)
                           for s in range(0, len(xs), chunk)], dim=1).cpu().numpy()
    return (predicted == np.asarray(y)[None, :]).mean(axis=1)


def accuracy(model, x: np.ndarray, y: np.ndarray) -> float:
    """One network's test accuracy (a `Net`, or a batch of width 1)."""
    return float(accuracies(model, x, y)[0])
