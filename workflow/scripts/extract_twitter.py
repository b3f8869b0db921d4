from pathlib import Path

from dptradeoff.data.archives import extract_member
from dptradeoff.data.sources import TWITTER_MEMBER
from dptradeoff.workflow_support import rule_context

with rule_context(snakemake):
    extract_member(snakemake.input[0], TWITTER_MEMBER, Path(snakemake.input[0]).parent)
