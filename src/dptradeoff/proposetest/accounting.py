"""Privacy of propose-test tuning: T iterations of an eps0-DP test composed (advanced composition,
Dwork-Rothblum-Vadhan 2010), plus the final (eps, delta)-DP training by basic composition
(`privacy.composition`; imported here under the names the experiments use)."""
from ..privacy.composition import TotalPrivacy, advanced_composition  # noqa: F401
from ..privacy.composition import training_and_tuning as total  # noqa: F401
