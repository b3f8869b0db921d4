# Helpers and input functions shared by the rule files.
import os
import sys

# The workflow imports the library from this checkout; rule jobs import the installed package
# (envs/setup.sh and envs/environment.yaml install this checkout in editable mode).
sys.path.insert(0, os.path.join(workflow.basedir, "src"))

from dptradeoff import UserError
from dptradeoff.config import check as check_config
from dptradeoff.data.build import SPLIT_OUTPUTS, raw_inputs
from dptradeoff.data.sources import DATASETS, TWITTER_MEMBER, file_specs
from dptradeoff.problems import PROBLEMS

try:
    check_config(config, os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml"))
except UserError as exc:
    raise WorkflowError(str(exc)) from None

CONDA_ENV = "../../envs/environment.yaml"


wildcard_constraints:
    dataset="|".join(DATASETS),


def dataset_config(dataset):
    return config["datasets"][dataset]


def data_outputs(dataset):
    if dataset in SPLIT_OUTPUTS:
        return [f"results/data/{dataset}/{split}.parquet" for split in ("train", "test")]
    return [f"results/data/{dataset}/histogram.parquet"]


def data_targets():
    return [path for dataset in DATASETS for path in data_outputs(dataset)]


def dataset_inputs(wildcards):
    dataset = wildcards.dataset if hasattr(wildcards, "dataset") else wildcards
    return raw_inputs(dataset, dataset_config(dataset)["source"], dataset_config(dataset))


def raw_file_spec(wildcards):
    specs = file_specs(wildcards.dataset, dataset_config(wildcards.dataset).get("files"))
    if wildcards.filename not in specs:
        raise WorkflowError(f"{wildcards.filename} is not a file of dataset {wildcards.dataset}; its files are {sorted(specs)}.")
    return specs[wildcards.filename]


wildcard_constraints:
    run=r"0|[1-9]\d*",
    batch=r"0|[1-9]\d*",
    problem="|".join(PROBLEMS),


def problem_settings(problem):
    return config["problems"].get(problem, {})


def problem_repeats(problem):
    return problem_settings(problem).get("repeats", PROBLEMS[problem].default_repeats)


def problem_data(wildcards):
    dataset = PROBLEMS[wildcards.problem].dataset
    return data_outputs(dataset) if dataset else []


def random_batches():
    sampling = config["random_sampling"]
    return -(-sampling["points"] // sampling["points_per_job"])


def random_targets():
    return [
        f"results/dpareto/{problem}/random/{run}/evaluations.parquet"
        for problem in config["dpareto"]["problems"]
        for run in range(config["random_sampling"]["runs"])
    ]
