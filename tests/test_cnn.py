"""The Basic MNIST Example CNN's DP-SGD (train/cnn.py): per-example clipping against a naive
per-example loop, and the lots, steps and noise that dpsgd's accounting (Table 3's candidates) assumes."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from dptradeoff.expost import ml, ml_tasks
from dptradeoff.privacy import dpsgd
from dptradeoff.seeds import seed_sequence, torch_generator
from dptradeoff.train import batch, cnn
from dptradeoff.train.hyper import DPSGDHyper


def _net(seed=0, dtype=torch.float64):
    model = cnn.Net()
    cnn.init_params(model, torch_generator(seed_sequence(seed)))
    return model.to(dtype)


def _naive_clipped_sum(model, x, y, masks, clip):
    """One example at a time: its gradient over all parameters, clipped to `clip`, summed."""
    names = [k for k, _ in model.named_parameters()]
    total, norms, clipped_norms = {k: 0.0 for k in names}, [], []
    for i in range(len(x)):
        loss = F.nll_loss(model(x[i:i + 1], (masks[0][i:i + 1], masks[1][i:i + 1])), y[i:i + 1], reduction="sum")
        grads = torch.autograd.grad(loss, list(model.parameters()))
        norm = torch.sqrt(sum((g * g).sum() for g in grads))
        factor = min(1.0, clip / float(norm))
        clipped = [g * factor for g in grads]
        clipped_norms.append(float(torch.sqrt(sum((g * g).sum() for g in clipped))))
        norms.append(float(norm))
        for k, g in zip(names, clipped):
            total[k] = total[k] + g
    return total, np.array(norms), np.array(clipped_norms)


def test_cnn_clipped_gradient_sum_is_the_sum_of_per_example_clipped_gradients():
    """Ghost norms for the dense layers, unfolded convolutions, dropout masks, chunking: the same
    numbers as clipping each example's own gradient (float64); each clipped gradient has norm <= L."""
    gen = torch.Generator().manual_seed(3)
    xs = torch.randn(2, 7, 1, 28, 28, generator=gen, dtype=torch.float64)
    ys = torch.randint(0, 10, (2, 7), generator=gen)
    all_masks = tuple(m.double() for m in cnn.dropout_masks(2, 7, gen, "cpu"))
    params = {k: v.double() for k, v in cnn.init_batch([5, 0], "cpu").items()}   # two networks stacked
    clips = []
    for b in range(2):   # every network against its own naive loop
        model = cnn.network({k: v.float() for k, v in params.items()}, b).double().train()
        x, y, masks = xs[b], ys[b], tuple(m[b] for m in all_masks)
        _, norms, _ = _naive_clipped_sum(model, x, y, masks, math.inf)
        clips.append(float(np.median(norms)))   # some examples clipped, some not
        assert (norms > clips[b]).sum() >= 3 and (norms < clips[b]).sum() >= 3
    stacked, stacked_norms = cnn.clipped_gradient_sum(params, xs, ys, all_masks, torch.tensor(clips, dtype=torch.float64),
                                                      chunk=3)
    for b in range(2):
        model = cnn.network({k: v.float() for k, v in params.items()}, b).double().train()
        expected, naive_norms, clipped_norms = _naive_clipped_sum(model, xs[b], ys[b], tuple(m[b] for m in all_masks), clips[b])
        assert np.all(clipped_norms <= clips[b] * (1 + 1e-12))
        np.testing.assert_allclose(stacked_norms[b].numpy(), naive_norms, rtol=1e-10)
        assert set(stacked) == set(expected)
        for k in stacked:
            torch.testing.assert_close(stacked[k][b], expected[k], rtol=1e-9, atol=1e-12)


def test_both_ways_of_the_convolutions_per_example_gradients_agree():
    """The CPU's grouped convolution and the GPU's unfold give every example's, every network's gradient of
    both convolutions alike, so CI (a CPU) vouches for the GPU's way too (clipped sums: the test above)."""
    gen = torch.Generator().manual_seed(1)
    for c_in, c_out, size in ((1, 32, 28), (32, 64, 26)):
        h = torch.randn(5, 3 * c_in, size, size, generator=gen, dtype=torch.float64)
        g = torch.randn(5, 3 * c_out, size - 2, size - 2, generator=gen, dtype=torch.float64)
        conv, unfold = (cnn.conv_per_example_gradients(h, g, 3, method) for method in ("conv", "unfold"))
        assert conv.shape == (5, 3, c_out, c_in * 9)
        torch.testing.assert_close(conv, unfold, rtol=1e-10, atol=1e-12)


def test_cnn_trainer_one_noiseless_step_is_the_clipped_mean_gradient(monkeypatch):
    """Zero noise, one step over all n = m examples: the update is -lr/m times the sum of per-example
    gradients each clipped to L (dropout off here so the naive loop sees the same function)."""
    n, clip, lr = 6, 0.05, 0.5
    rng = np.random.default_rng(0)
    x, y = rng.random((n, 784)).astype(np.float32), rng.integers(0, 10, n)
    ones = lambda width, count, generator, dev: tuple(torch.ones(width, count, *s, device=dev)  # noqa: E731
                                                      for s in ((64, 12, 12), (128,)))
    monkeypatch.setattr(cnn, "dropout_masks", ones)
    monkeypatch.setattr(cnn, "device", lambda: torch.device("cpu"))
    monkeypatch.setattr(batch, "device", lambda: torch.device("cpu"))
    hp = DPSGDHyper(epochs=1, lot_size=n, learning_rate=lr, noise=0.0, clip=clip)
    assert hp.steps(n) == 1
    trained = cnn.train(x, y, hp, seed=4)
    start = _net(seed=4, dtype=torch.float32)
    xs = torch.as_tensor(cnn.images(x))
    expected, norms, clipped_norms = _naive_clipped_sum(start, xs, torch.as_tensor(y), tuple(o[0] for o in ones(1, n, None, "cpu")),
                                                        clip)
    assert np.all(norms > clip) and np.all(clipped_norms <= clip * (1 + 1e-5))   # every example clipped
    for (k, p0), p1 in zip(start.named_parameters(), trained.parameters()):
        torch.testing.assert_close(p1 - p0, -lr * expected[k] / n, rtol=1e-4, atol=1e-7)


def _recording_trainer(monkeypatch):
    """cnn.train with the gradient replaced by zeros; returns the list of lots (as row indices) it used."""
    lots = []

    def zero_gradients(params, x, y, masks, clip, keep=None, chunk=cnn.CHUNK):
        # rows are constant images whose value encodes the row index (see below); one network
        lots.append(np.rint((x[0, :, 0, 0, 0].cpu().numpy() * cnn.MNIST_STD + cnn.MNIST_MEAN) * 1000).astype(int))
        return {k: torch.zeros_like(v) for k, v in params.items()}, torch.zeros(x.shape[:2])

    monkeypatch.setattr(cnn, "clipped_gradient_sum", zero_gradients)
    monkeypatch.setattr(cnn, "device", lambda: torch.device("cpu"))
    monkeypatch.setattr(batch, "device", lambda: torch.device("cpu"))
    return lots


def test_cnn_trainer_runs_the_lots_and_steps_dpsgd_accounts_for(monkeypatch):
    """T = epochs * round(n/m) steps, as dpsgd.steps and the candidates' rdp_curve assume; each lot m
    distinct indices drawn uniformly without replacement, afresh every step (not a shuffled epoch:
    consecutive lots overlap as often as independent m-subsets do)."""
    lots = _recording_trainer(monkeypatch)
    n, m, epochs = 20, 6, 100   # round(20/6) = 3 steps per epoch (not 20 // 6 + 1 or ceil)
    x = np.repeat((np.arange(n) / 1000.0)[:, None], 784, axis=1).astype(np.float32)
    cnn.train(x, np.zeros(n, dtype=int), DPSGDHyper(epochs, m, 0.1, 1.0, 1.0), seed=0)
    assert len(lots) == dpsgd.steps(n, m, epochs) == epochs * 3
    candidate = ml.Candidate(1.0, 0.1, epochs, m, 1.0, 2.0, 1.0)
    np.testing.assert_array_equal(ml.rdp_curve(candidate, n), dpsgd.rdp_curve(n, m, 2.0, len(lots)))
    lots = np.array(lots)
    assert lots.shape == (len(lots), m) and lots.min() >= 0 and lots.max() < n
    assert all(len(set(lot)) == m for lot in lots)
    member = np.zeros((len(lots), n))
    np.put_along_axis(member, lots, 1.0, axis=1)
    counts, expected = member.sum(axis=0), len(lots) * m / n
    assert ((counts - expected) ** 2 / expected).sum() * (n - 1) / (n - m) < 55   # chi-square, 19 dof: p ~ 2e-5
    overlap = np.mean([len(set(a) & set(b)) > 0 for a, b in zip(lots[:-1], lots[1:])])
    p_overlap = 1 - math.comb(n - m, m) / math.comb(n, m)   # 0.943
    assert abs(overlap - p_overlap) < 5 * math.sqrt(p_overlap * (1 - p_overlap) / len(lots))


def test_cnn_trainer_noise_is_2Lz_over_m_per_coordinate(monkeypatch):
    """With zero gradients every step moves every parameter by -lr (N(0, (2 L z)^2)) / m: the replace-one
    sensitivity 2L that dpsgd's noise multiplier z is calibrated for. Checked tensor by tensor, each
    bias on its own (fc2.bias has 10 coordinates: 16 steps, n = m so one step an epoch, a checkpoint
    after each), so a tensor without noise or at another scale fails however small it is."""
    from scipy import stats

    _recording_trainer(monkeypatch)
    n, steps = 8, 16
    hp = DPSGDHyper(epochs=steps, lot_size=n, learning_rate=0.5, noise=1.3, clip=0.7)
    seen = []
    trained = cnn.train(np.zeros((n, 784), dtype=np.float32), np.zeros(n, dtype=int), hp, seed=2,
                        checkpoint=lambda e, model: seen.append({k: v.detach().clone() for k, v in model.named_parameters()}))
    start = _net(seed=2, dtype=torch.float32)
    path = [{k: v.detach() for k, v in start.named_parameters()}] + seen
    assert len(seen) == steps, f"{len(seen)} steps (checkpoints), the accountant counts {steps}"
    assert all(torch.equal(p, seen[-1][k]) for k, p in trained.named_parameters())
    sigma = hp.learning_rate * 2 * hp.clip * hp.noise / hp.lot_size
    total, errors = 0, []
    for k, _ in start.named_parameters():
        u = torch.stack([b[k] - a[k] for a, b in zip(path[:-1], path[1:])]).double().flatten() / sigma
        total += len(u)
        q, low, high = float((u * u).sum()), stats.chi2.ppf(5e-7, len(u)), stats.chi2.isf(5e-7, len(u))
        if not low < q < high:   # chi-square(N), two-sided at 1e-6
            errors.append(f"{k}: noise std {math.sqrt(q / len(u)):.4g} x 2Lz/m (want 1) over {len(u)} draws")
        elif abs(float(u.mean())) > 5.5 / math.sqrt(len(u)):
            errors.append(f"{k}: noise mean {float(u.mean()):.3g} x 2Lz/m")
    assert not errors, "; ".join(errors)
    assert total == steps * 1_199_882


def test_cnn_trainer_is_deterministic_and_scores():
    rng = np.random.default_rng(0)
    x, y = rng.random((24, 784)).astype(np.float32), rng.integers(0, 10, 24)
    hp = DPSGDHyper(epochs=1, lot_size=8, learning_rate=0.1, noise=1.0, clip=1.0)
    a, b, c = cnn.train(x, y, hp, seed=5), cnn.train(x, y, hp, seed=5), cnn.train(x, y, hp, seed=6)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))
    assert not a.training and 0.0 <= cnn.accuracy(a, x, y) <= 1.0


def test_the_network_is_the_basic_mnist_example_and_the_opacus_example_uses_it():
    sys.path.insert(0, str(Path(__file__).parent.parent / "examples"))
    import opacus_cnn

    model = opacus_cnn.network()
    assert type(model) is cnn.Net
    assert [(k, tuple(v.shape)) for k, v in model.named_parameters()] == [
        ("conv1.weight", (32, 1, 3, 3)), ("conv1.bias", (32,)), ("conv2.weight", (64, 32, 3, 3)), ("conv2.bias", (64,)),
        ("fc1.weight", (128, 9216)), ("fc1.bias", (128,)), ("fc2.weight", (10, 128)), ("fc2.bias", (10,))]
    assert (model.dropout1.p, model.dropout2.p) == cnn.DROPOUT == (0.25, 0.5)
    model.eval()   # no dropout: the masked path with all-one masks is the same function
    x = torch.randn(3, 1, 28, 28)
    ones = (torch.ones(3, 64, 12, 12), torch.ones(3, 128))
    torch.testing.assert_close(model(x), model(x, ones))
    torch.testing.assert_close(model(x).exp().sum(1), torch.ones(3))


def test_table3_mnist_trains_the_configured_network(monkeypatch):
    rng = np.random.default_rng(1)
    x, y = rng.random((16, 784)), rng.integers(0, 10, 16)
    assert ml_tasks.prepare("mnist", x, y, x, y, 0.5, 1.0).model.name == "mlp2"
    task = ml_tasks.prepare("mnist", x, y, x, y, 0.5, 1.0, "cnn")
    assert task.model.name == "cnn"
    with pytest.raises(Exception, match="no model 'cnn' on gisette"):
        ml_tasks.prepare("gisette", x, y, x, y, 0.5, 1.0, "cnn")
    calls = []
    real = cnn.train
    monkeypatch.setattr(cnn, "train", lambda *args: calls.append(args[2]) or real(*args))
    candidate = ml.Candidate(1.0, 0.1, 1, 8, 1.0, 2.0, 1.0)
    assert 0.0 <= ml.train_and_score(task, candidate, np.random.default_rng(0)) <= 1.0
    assert calls == [candidate.hyper()]


def test_table3_trials_runtime_follows_the_network_and_its_candidates():
    """One Alg. 3 attempt (epochs x E[e^{-eps_i k}] = eps' / (eps' + eps_i)) plus doubling's E[K] runs per
    budget, times trials, n and the network's cost per example; at least 60 minutes."""
    import pandas as pd

    from dptradeoff import resources

    frame = pd.DataFrame({"eps": [0.4, 0.8], "epochs": [1, 5], "rdp_at_alpha": [0.01, 0.03]})
    t3 = {"trials": 10, "eps_prime": 0.01, "doubling": {"budgets": [0.4, 0.8], "mean_runs": 3}}
    epochs = 0.5 * 1 + 0.25 * 5 + 3 * 1 + 3 * 5
    seconds = resources.STARTUP_SECONDS + 10 * epochs * 60_000 * resources.TABLE3_SECONDS_PER_EXAMPLE["cnn"]
    assert resources.table3_trials_runtime(frame, 60_000, "cnn", t3) == math.ceil(2 * seconds / 60) == 1187
    assert resources.table3_trials_runtime(frame, 60_000, "cnn", t3, attempt=2) == 2374
    assert resources.table3_trials_runtime(frame, 60_000, "mlp2", t3) == 60          # 6 minutes estimated
    assert resources.table3_trials_runtime(frame, 60_000, None, t3, attempt=3) == 180  # the linear models
    rule = (Path(__file__).parent.parent / "workflow/rules/expost.smk").read_text().split("rule expost_ml_trials:")[1]
    assert "runtime=expost_ml_trials_runtime" in rule.split("rule ")[0] and "gpu=expost_ml_gpu" in rule.split("rule ")[0]
