"""Problems: dataset x model x optimizer x domain x privacy oracle x utility oracle x R."""
from .registry import PROBLEMS, Param, Problem, get_problem  # noqa: F401
