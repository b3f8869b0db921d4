"""Streams that do not collide: every torch stream keeps its seed's 64 bits (seeds.torch_generator), and a
batch's stream entropy is unambiguous (seeds.entropy_words)."""
import numpy as np
import torch

from dptradeoff.seeds import MT_STATE_OFFSET, MT_WORDS, entropy_words, seed_sequence, torch_generator
from dptradeoff.train.batch import Batch
from dptradeoff.train.hyper import DPSGDHyper


def test_a_cpu_generators_state_sits_where_torch_generator_writes_it():
    # torch's manual_seed(s) fills the Mersenne Twister words as numpy's MT19937 does for a 32-bit seed: if a torch
    # release moved them, torch_generator would write into the wrong bytes
    state = torch.Generator().manual_seed(12345).get_state().numpy()
    words = state[MT_STATE_OFFSET:MT_STATE_OFFSET + 8 * MT_WORDS].view("<u8")
    assert np.array_equal(words, np.random.RandomState(12345).get_state()[1])


def test_seeds_two_to_the_32_apart_draw_different_noise():
    assert torch.equal(torch.randn(8, generator=torch.Generator().manual_seed(5)),
                       torch.randn(8, generator=torch.Generator().manual_seed(5 + 2**32)))   # torch's own: 32 bits
    a, b = (torch.randn(8, generator=torch_generator(seed_sequence(s))) for s in (5, 5 + 2**32))
    assert not torch.equal(a, b)
    again = torch.randn(8, generator=torch_generator(seed_sequence(5)))
    assert torch.equal(a, again)                       # and the same seed, the same draws


def test_batch_streams_keep_every_seeds_64_bits_and_their_order():
    hp = DPSGDHyper(1, 4, 0.1, 1.0, 1.0)

    def draws(seeds):
        lots, noise = Batch.replications(hp, seeds).streams("cpu")
        return lots.integers(2**62, size=4).tolist(), torch.randn(4, generator=noise).tolist()

    assert draws([2**32]) != draws([0, 1]) != draws([1, 0])     # numpy's list coercion would make the first two equal
    assert draws([7]) != draws([7 + 2**40]) and draws([7]) == draws([7])
    assert not np.array_equal(entropy_words([2**32]), entropy_words([0, 1]))
