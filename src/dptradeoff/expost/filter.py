"""Composing ex-post private mechanisms under an ex-ante budget: paper 004's filter (Alg. 4) and Lemma 7
live in privacy/ (filter, conversions); imported here under the names the experiments use."""
from ..privacy.conversions import dp_to_rdp_budget, rdp_to_dp  # noqa: F401
from ..privacy.filter import ExPostFilter  # noqa: F401
