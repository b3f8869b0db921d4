"""What every Snakemake script needs: logging to the rule's log file and one-sentence user errors."""
from __future__ import annotations

import contextlib
import logging
import sys

from . import UserError


@contextlib.contextmanager
def rule_context(snakemake):
    """Log to the rule's log file (and stderr); a UserError ends the job with its one sentence, no traceback."""
    handlers = [logging.StreamHandler(sys.stderr)]
    if snakemake.log:
        handlers.append(logging.FileHandler(str(snakemake.log[0]), mode="w"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", handlers=handlers, force=True)
    try:
        yield
    except UserError as exc:
        logging.getLogger("dptradeoff").error("%s", exc)
        sys.exit(1)
