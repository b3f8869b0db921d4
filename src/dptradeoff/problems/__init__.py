"""Problems: a search space and the oracles of one DP algorithm, built in or your own."""
from .oracle import Data, Oracle  # noqa: F401
from .problem import Param, Problem  # noqa: F401
from .registry import DEFINITION_KEYS, PROBLEMS, definition, get_problem, resolve  # noqa: F401
from .tables import succeeded  # noqa: F401
