"""The cells of the exact normal sampler (`exact_noise`): where |N| (N ~ N(0, 1)) falls among cells 2^-CELL_BITS
standard deviations wide, as the binary expansions of their cumulative probabilities.

Row i is floor(2^256 C_i), C_i = P(|N| < i 2^-m) = erf(i 2^-m / sqrt 2) for i = 0 .. NORMAL_BODY 2^m. A uniform U compared digit by digit with
these expansions falls in cell i (C_i <= U < C_(i+1)) with exactly that cell's probability. The sampler reads
a row in whole w-bit digits: floor(256 / w) of them, the first 212 bits at a Generator's w = 53 (at w = 1 all
256). Where U ties a boundary on all of them (probability 2^-212 a boundary at w = 53), the boundary's further
digits come from `boundary_bits`, computed exactly with mpmath, and the comparison goes on. A tie stops a draw
only where U's own digits run out (`exact_noise.MAX_DIGITS` of them, 1,060 bits at w = 53: probability 2^-1060).

The digits are written out here (no work at import); `expansions` recomputes them with mpmath at 600 bits,
and `tests/test_exact_noise.py` checks they are equal and that no C_i lies within 2^-200 of a 256-bit boundary
(where 600 bits could round the wrong way). The jitted sampler reads them as constants compiled into it;
its on-disk cache is keyed on this file's bytes (`jit_cache`), so a changed table is compiled afresh.

    ./in-env python -m dptradeoff.exact_cells    # prints the rows below, recomputed
"""
from __future__ import annotations

import threading

import numpy as np

CELL_BITS = 4        # m: cells 1/16 of a scale wide
NORMAL_BODY = 4      # |N| < 4 (all but 6.3e-5 of the mass) in cells; beyond, Karney's algorithm from 4 up
EXPANSION_BITS = 256

_NORMAL_HEX = (
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0cc2023b2576644b2002ca37a0640c8719e596fd5f7daa3c0a83990d6ab522be",
    "197749e2034acc0c9571acf7e8356969b60d226e36408cb4d7cc66612c1a8fc9",
    "2613426d25f2236abe730ebfa7dc57f51b0539ff48510d6c5b07d50f66f18273",
    "3289a2b16ed6c350b2958315f7e92f2358b0b7783375652f38187a1eb21f360c",
    "3ece90ba13e4636bc9ec0d5ee5c5ab7e7c1ddd959a865ea07008fe16cb7e10a6",
    "4ad6c37f0bede7358b5be6ce80ba38719c4e9c389765a98308b68a5147d28214",
    "5697a1d88f91f0684df464be533a9cfbed08da0492a1e15f8f9584a860955f7a",
    "62075e232ac76de681c79085394bf5d11d09424e8181f5508eaff96d4136760e",
    "6d1d0e1e25f1f693da119e09b3d39ac050fb38db779d6eb2a8e7649195f04d40",
    "77d0bea70d9b016290fa64ad156cca06e27f66015344cd55dd53eb5f2f777305",
    "821b83100122f73606e7b3efffc6f17f6694ddd2e549854dbace0f333dd5a241",
    "8bf77fea5316c92b4e17c3f97cebfdd7a5c4c4914cb05a91ca10ae92a0f114e9",
    "955ff13b0716503f49c5efe9c4a0897f878fd2b9d47ad60b7cd5c8849353de1a",
    "9e512c29fd6d183e1d7af3d37ddbabdbc468019b18d2b39348a0f84cb1f2c011",
    "a6c89c565632370afe31cf5ecc6adbe7b8fce51dc5bad0ccbc06ea8d15becff5",
    "aec4bd120d37d3497e45d3de5ba3ac935a00ebb62939d833eba369f5a92b8d9e",
    "b6450edb69577f5fd8f8a26830a305b2435fe76e819fb88aafe5f734b89ee64a",
    "bd4a097c193d1dfbb0f6ee9275eb7d40052f717259ec36ece55431c73d643b1d",
    "c3d50b4365b83fa7ce04aa5f814ac51dcbf80fabd0f08be9ac650a54dbd285fe",
    "c9e845da8ac7ad76173d9cdbf099e9df5f1bbbf1dddb286e12474e684bcde7a6",
    "cf86a937febe3361e71cc8f4649091ddf6e41e50c65b152cd2d4ea7a3685a744",
    "d4b3cd3846dbf40efc6fc872f9f6605cbbf1b2f226ef79d41078545455fb2fe2",
    "d973da612765dfb00dff4f8fc53ddf72fe781587424a3b0ba3223c35df26a321",
    "ddcb724ed37022c3aa4ab698983be0c5ec403e56d676a490b1cfdbc8499859c6",
    "e1bf9842a5ea500baf40ceb9b1d7ff805825aec85dcec8f33103614e0d8d69f4",
    "e5559a405b07d1f3cbe9a4bc41c1ff0065f425d4d29e4108138e9b5240e86346",
    "e892fb1a3b53a99412a4d450b9f976cd50e286be4a0755a8914947c7c8d5b9b4",
    "eb7d5dbebaa9235758c325d609acb18f551eba5a34360d36c2f5b36d17109b94",
    "ee1a720b3ef665690f61d75d98060346ac214035a50efe734b5e55b4d0e46b50",
    "f06fe3589a04c289c1bdc8cfd9c31dd25bdeafa54fda15a2c29ecd0686d08de6",
    "f28348e6b9e184089d5ff6f9a05075c8d67434a3d67744ff6acd30b74d5170cc",
    "f45a183e9b13d03318bb3e531cc1a69b33bf93449a56854e7720dd48980f4869",
    "f5f99993fccecabe8fa7bc2adb294fb6066d0db42d77d88aeb7abc835c93ff5d",
    "f766de24063fec292b3f74c89a4367f9fe7988ad55fd576115f620a6acffbf4b",
    "f8a6b8832ece0619f72e2dcb840c6dbc75ddb7a33c65b8b3eaf16572df9a7f4b",
    "f9bdb6c378b27b6c7bfbc7969f8b83a48740d9e14a0907fb649123595938b6bc",
    "fab01e547ae384dfa87085e33848b488dd536b69ddb78154acfe85ac6b47a30b",
    "fb81e978d935a08c0d7fea29f6fab01107af5ceaf97fd3df08f808517a0e31ac",
    "fc36c6289580cf16e551899103811d1e750bbdb03042701da61db306652f18db",
    "fcd21635036c6374d57de63d190cef5854ea9c5b24939b0bee2f59a74203de52",
    "fd56f081f91656d966ae72141b438eade9b3906a5f4f0060c64adf0a141f4968",
    "fdc82327f041d73801b2107f753873446979774f776b39daa52a980dd1a48a9e",
    "fe2836540018ce4383e60c7cf416cd1323bfce773195944e47ada208bf83d352",
    "fe796fbcb6137fd315aeeaacd4886d1ad018c7c0a45c46e4097f943501447ab9",
    "febdd685abe4d6310a1794732d1ee5140d2a4b8d5779555ac078dfb7af4d302f",
    "fef7376f18324091295beef348397a7f02112ba10cc42c2f7f2394c012690a30",
    "ff27293253033929ed2dbd4168ab70186398c6ac3ec1965db9776160610954b7",
    "ff4f10f033d25149dd537b698460daf9008ecc48ffcd7ca10c856ecd92563213",
    "ff70269a2974a4b2fd038210e266535bf73f96c365a3630786a4e59a3862968d",
    "ff8b7942d47c8a4ac669aea619f65c88a3d8bf29e305a4eb9b71dc732110230b",
    "ffa1f346a9ca3eb3fc9fe706302f0081fccbdeb377da577e15fa5b5eac358dd0",
    "ffb45e40a0bf2fe67fec0b295baec825998ea3107795aab741b141729ad75baa",
    "ffc366c220761452c8f28dd87b749e9bd6b12066c64531f6754bc9c0884f6645",
    "ffcf9fc837ed0a80cc0ac1e384372780fa1b2ad5a0ed4fa19924af7a5e2ddec4",
    "ffd985eaa91d0d28bc19b6bc5735849e65c8ad2962abc59739a40dd50b95348f",
    "ffe182436d48822b47d6cc0cb7e32830d338bc38b2d2fbaf712a0c2d30fad96c",
    "ffe7ed0f1b492e7c1bac248c067fcb1dffb933dd7cab97bb65a112acdd0a0f96",
    "ffed100803cee187beba53dd4a0c7e92b5edec37304a58a14d5029c3dd6f6931",
    "fff1287ef1b7901be28fb724724127b8250fe53030564fd2db633e598cd7feb8",
    "fff469354da69190048ea521d6e40ebbec1f31233559915b9989b9262ad9228d",
    "fff6fbfcf4477c81ac089e1cfb422b710f89ab544571547adce16cf12298dde2",
    "fff903226716d6f136d74ee1cc6c98ecac3bacf4d507d2db17285d182787efa2",
    "fffa9aa628f4d0900dc47efb9b891df23bf00974426f92e14ac4454b8e2b3c3b",
    "fffbd94a1aad40021d0684d8e1b28e86bd56a6a384847aaca82eb60275580ac0",
)



def table() -> np.ndarray:
    """The rows as (cells + 1, 4) uint64 words, most significant first: the sampler's boundaries."""
    return np.array([[int(row[16 * w:16 * (w + 1)], 16) for w in range(4)] for row in _NORMAL_HEX], dtype=np.uint64)


def expansions() -> list[int]:
    """floor(2^256 C_i) for every boundary, from mpmath at 600 bits; raises where a C_i lies within 2^-200 of
    a 256-bit boundary (its floor could then be wrong)."""
    import mpmath

    with mpmath.workprec(600):
        rows = []
        for i in range(NORMAL_BODY * 2**CELL_BITS + 1):
            x = mpmath.mpf(i) / 2**CELL_BITS
            scaled = mpmath.erf(x / mpmath.sqrt(2)) * mpmath.mpf(2) ** EXPANSION_BITS
            floor = int(mpmath.floor(scaled))
            if i > 0 and min(scaled - floor, floor + 1 - scaled) < mpmath.mpf(2) ** -200:
                raise ArithmeticError(f"boundary {i} lies within 2^-200 of a 256-bit number")
            rows.append(floor)
    return rows


_FURTHER: dict[int, tuple[int, int]] = {}   # row -> (bits, floor(2^bits C_row)): the longest computed so far
_FURTHER_LOCK = threading.Lock()            # the noise threads share it (and mpmath's context is not per thread)
_GUARD_BITS = 128


def boundary_bits(row: int, bits: int) -> int:
    """floor(2^bits C_row), exactly, for any bits >= 0: the table's row up to EXPANSION_BITS; beyond, from
    mpmath (`_scaled_floor`), computed to at least twice the bits asked before (later digits of a tie are
    then at hand) and kept."""
    if bits <= EXPANSION_BITS:
        return int(_NORMAL_HEX[row], 16) >> (EXPANSION_BITS - bits)
    with _FURTHER_LOCK:
        known = _FURTHER.get(row)
        if known is None or known[0] < bits:
            target = max(bits, 2 * known[0] if known else 2 * EXPANSION_BITS)
            known = (target, _scaled_floor(row, target))
            _FURTHER[row] = known
    return known[1] >> (known[0] - bits)


def _scaled_floor(row: int, bits: int) -> int:
    """floor(2^bits C_row) from mpmath at bits + 2g bits of precision (its erf is good to a few units in the
    last place: an error of about 2^-2g in 2^bits C_row), accepted once 2^bits C_row lies more than 2^-g from
    an integer, g doubled until it does (`expansions`' rule at 256 bits, with g = 172 and a margin of 2^-200);
    checked against the table's 256 bits. In a context of its own: mpmath's global one is every thread's."""
    if row == 0:
        return 0                              # C_0 = erf(0) = 0 exactly
    from mpmath.ctx_mp import MPContext

    ctx, guard = MPContext(), _GUARD_BITS
    while True:
        ctx.prec = bits + 2 * guard
        scaled = ctx.erf(ctx.mpf(row) / 2**CELL_BITS / ctx.sqrt(2)) * ctx.mpf(2) ** bits
        floor = int(ctx.floor(scaled))
        if min(scaled - floor, floor + 1 - scaled) > ctx.mpf(2) ** -guard:
            break
        guard *= 2
    if floor >> (bits - EXPANSION_BITS) != int(_NORMAL_HEX[row], 16):
        raise ArithmeticError(f"boundary {row} computed to {bits} bits disagrees with its tabulated 256")
    return floor


if __name__ == "__main__":
    print("_NORMAL_HEX = (\n" + "".join(f'    "{row:064x}",\n' for row in expansions()) + ")")
