# Helpers and input functions shared by the rule files.
import os
import re
import sys

import pandas as pd

# The workflow imports the library from this checkout; rule jobs import the installed package
# (envs/setup.sh and envs/environment.yaml install this checkout in editable mode).
sys.path.insert(0, os.path.join(workflow.basedir, "src"))

from dptradeoff import UserError
from dptradeoff.config import check as check_config
from dptradeoff.data.build import SPLIT_OUTPUTS, raw_inputs
from dptradeoff.data.sources import DATASETS, TWITTER_MEMBER, file_specs
from dptradeoff.baselines.grid import grid
from dptradeoff.bo.propose import DPareto, Settings
from dptradeoff.peers import PEERS
from dptradeoff.problems import PROBLEMS, definition, resolve
from dptradeoff.stats.front_metrics import MetricSettings
from dptradeoff.stats.ttest import PAPER_TABLE2
from dptradeoff import resources
from dptradeoff.problems.tables import read_frame

try:
    check_config(config, os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml"))
except UserError as exc:
    raise WorkflowError(str(exc)) from None

CONDA_ENV = "../../envs/environment.yaml"
# A DPareto chain is sequential: its jobs, and those of the random run whose first points start it,
# go first whenever one is ready, so the independent fan-out fills the cores around the chains
# instead of a chain running alone at the end of a run.
CHAIN_PRIORITY = 10
# How every privacy oracle turns DP-SGD's RDP into (epsilon, delta): dp_accounting's improved
# conversion, or the classic one the DPareto paper (autodp) used (config/README.md).
RDP_CONVERSION = config["privacy"]["conversion"]
# Grid axes: log-spaced where a parameter is searched on a log scale, or linspace (the original).
GRID_SPACING = config["dpareto"]["grid_spacing"]
METRIC_SETTINGS = MetricSettings.from_config(config["statistics"])


def problem_definition(problem):
    """The keys of problems.<problem> that define the problem (a rule's `problem` param)."""
    return definition(config, problem)


# Every problem this config can name: the built-ins and those its `problems:` entries define
# (config.check has resolved each definition once already, so these cannot fail).
KNOWN_PROBLEMS = {**PROBLEMS, **{name: resolve(name, problem_definition(name), RDP_CONVERSION)
                                 for name, settings in config["problems"].items() if "oracle" in settings}}


wildcard_constraints:
    dataset="|".join(DATASETS),


def dataset_config(dataset):
    return config["datasets"][dataset]


def data_outputs(dataset):
    if dataset in SPLIT_OUTPUTS:
        return [f"results/data/{dataset}/{split}.parquet" for split in ("train", "test")]
    return [f"results/data/{dataset}/histogram.parquet"]


def dataset_inputs(dataset):
    return raw_inputs(dataset, dataset_config(dataset)["source"], dataset_config(dataset))


def raw_file_spec(wildcards):
    specs = file_specs(wildcards.dataset, dataset_config(wildcards.dataset).get("files"))
    if wildcards.filename not in specs:
        raise WorkflowError(f"{wildcards.filename} is not a file of dataset {wildcards.dataset}; its files are {sorted(specs)}.")
    return specs[wildcards.filename]


wildcard_constraints:
    run=r"0|[1-9]\d*",
    batch=r"0|[1-9]\d*",
    round=r"0|[1-9]\d*",
    chain=r"bo|bo-q[1-9]\d*|" + "|".join(re.escape(name) for name in PEERS),
    i=r"0|[1-9]\d*",
    k=r"[1-9]\d*",
    problem="|".join(re.escape(name) for name in KNOWN_PROBLEMS),


def problem_settings(problem):
    return config["problems"].get(problem, {})


def problem_repeats(problem):
    return problem_settings(problem).get("repeats", KNOWN_PROBLEMS[problem].default_repeats)


def problem_data(problem):
    """The Parquet files of a problem's dataset (none for SVT)."""
    dataset = KNOWN_PROBLEMS[problem].dataset
    return data_outputs(dataset) if dataset else []


# Resources of the jobs that train (resources.py): runtime from the job's own points, memory from
# the shape of its data, a GPU where config asks and the oracle trains with torch. Each grows with
# `attempt`, so a job retried after running out gets more.
def evaluation_runtime(points_of):
    """A rule's `runtime`: `points_of(wildcards, input)` are the points the job trains."""

    def runtime(wildcards, input, attempt):
        problem = KNOWN_PROBLEMS[wildcards.problem]
        return resources.evaluation_runtime(problem, points_of(wildcards, input), problem_repeats(wildcards.problem),
                                            resources.training_rows(list(input.data)), attempt)

    return runtime


def evaluation_mem_mb(wildcards, input, attempt):
    return resources.evaluation_mem_mb(list(input.data), attempt)


def evaluation_gpu(wildcards):
    return int(config["cluster"]["gpu"] and KNOWN_PROBLEMS[wildcards.problem].oracle.uses_gpu)


# Table 3's trial jobs (expost_ml_trials): runtime from the job's candidates and network.
def expost_ml_model(wildcards):
    """The network (or linear model) Table 3 trains on the dataset: MNIST's is expost.table3.mnist_model."""
    return config["expost"]["table3"]["mnist_model"] if wildcards.dataset == "mnist" else None


def expost_ml_trials_runtime(wildcards, input, attempt):
    """Minutes from the job's own candidates, n and the model's measured cost (resources.py)."""
    return resources.table3_trials_runtime(read_frame(input.candidates), resources.training_rows([input.train]),
                                           expost_ml_model(wildcards), config["expost"]["table3"], attempt)


def expost_ml_gpu(wildcards):
    """One GPU for the MNIST trials (torch) where config asks (cluster.gpu)."""
    return int(config["cluster"]["gpu"] and wildcards.dataset == "mnist")


def per_attempt(amount):
    """A fixed request (minutes or MB) that grows with each retry. The rules that simulate or build
    data use these: peak RSS measured on the default config through SLURM is 0.2-1.6 GB and run
    times 10-90 s (README, "On a cluster"); the requests leave room for the paper configs."""
    return lambda wildcards, attempt: amount * attempt


def batch_points(wildcards, input):
    first = int(wildcards.batch) * config["random_sampling"]["points_per_job"]
    return read_frame(input.points).iloc[first:first + config["random_sampling"]["points_per_job"]]


def chain_point(wildcards, input):
    i = int(wildcards.i) % chain_batch_size(wildcards.chain)
    return read_frame(input.proposal).iloc[i:i + 1]


def costliest_point(wildcards, input):
    problem = resolve(wildcards.problem, problem_definition(wildcards.problem), RDP_CONVERSION)
    return pd.DataFrame([resources.costliest_point(problem)])


def batches(points):
    return -(-points // config["random_sampling"]["points_per_job"])


def method_points(problem, method):
    if method in ("random", "uniform"):
        return config["random_sampling"]["points"]
    if method == "comparison":
        return config["statistics"]["comparison_parts"] * comparison_part_size()
    k = int(method[len("grid"):])
    return len(grid(resolve(problem, problem_definition(problem)), k, GRID_SPACING))


def sampling_methods():
    """The random-sampling runs of every DPareto problem: the paper's distributions, and uniform."""
    return ["random"] + (["uniform"] if config["random_sampling"]["uniform"] else [])


def initial_batches(wildcards):
    k0 = config["dpareto"]["initial_points"]
    return [f"results/dpareto/{wildcards.problem}/random/{wildcards.run}/evals/{b}.parquet" for b in range(batches(k0))]


def chain_batch_size(chain):
    """q of a chain: `bo-q<q>` uses q, DPareto's `bo` and the peers' chains dpareto.batch_size."""
    return int(chain[len("bo-q"):]) if chain.startswith("bo-q") else config["dpareto"]["batch_size"]


def chain_of(method):
    """The chain directory of a `dpareto.methods` entry: `bo` for DPareto (its paths predate the peers)."""
    return "bo" if method == "dpareto" else method


def chain_methods():
    """The chains every DPareto problem runs (`dpareto.methods`), as directory names."""
    return [chain_of(m) for m in config["dpareto"]["methods"]]


def chain_method(chain):
    """The object that proposes a chain's rounds: DPareto (`bo`, `bo-q<q>`) or a peer optimiser."""
    return PEERS[chain] if chain in PEERS else DPareto(bo_settings())


def previous_proposal(wildcards):
    """The round before's proposal file (its GP hyperparameters start this round's ML-II); listed
    after the evaluations, which already depend on it, so building the DAG never recurses 256 deep."""
    r = int(wildcards.round)
    return [f"results/dpareto/{wildcards.problem}/{wildcards.chain}/{wildcards.run}/proposals/{r - 1}.parquet"] if r else []


def bo_settings():
    return Settings.from_config(config["dpareto"], config["statistics"])


def proposal_round(wildcards, input, output, params, log):
    """The body of the bo_propose run: rule (Snakemake's objects in, the library's arguments out)."""
    from dptradeoff.bo.chain_round import propose_round

    try:
        propose_round(method=params.method, problem=wildcards.problem, definition=params.problem, initial=input.initial,
                      evaluations=list(input.evals), previous=input.previous[0] if input.previous else None,
                      output=output[0], log=log[0], batch_size=params.batch_size, seed=params.seed,
                      run=int(wildcards.run), round_index=int(wildcards.round), utility_floor=params.utility_floor)
    except UserError as exc:
        # Raised afresh, so Snakemake shows the sentence (also in the round's log) with this
        # function's location instead of the library's traceback.
        raise UserError(str(exc)) from None


def chain_evaluation(wildcards, params, input, output, log):
    """The body of the bo_evaluate run: rule."""
    from dptradeoff.bo.chain_round import evaluate_point

    try:
        evaluate_point(method=params.method, problem=wildcards.problem, definition=params.problem,
                       conversion=params.conversion, proposal=input.proposal, output=output[0], log=log[0],
                       chain=wildcards.chain, index=int(wildcards.i), batch_size=params.batch_size,
                       repeats=params.repeats, seed=params.seed, run=int(wildcards.run),
                       initial_points=params.initial_points)
    except UserError as exc:
        raise UserError(str(exc)) from None   # the sentence, not the library's traceback (see proposal_round)


def evaluations_before_round(wildcards):
    first = int(wildcards.round) * chain_batch_size(wildcards.chain)
    return [f"results/dpareto/{wildcards.problem}/{wildcards.chain}/{wildcards.run}/evals/{i}.parquet" for i in range(first)]


def problem_study_files(problem):
    """Every evaluation file of one problem's DPareto study: sampling runs, chains, grids, Table 2's sample."""
    runs = range(config["dpareto"]["runs"])
    files = [f"results/dpareto/{problem}/{method}/{run}/evaluations.parquet" for method in sampling_methods() + chain_methods()
             for run in runs]
    files += [f"results/dpareto/{problem}/grid{k}/0/evaluations.parquet" for k in problem_settings(problem).get("grids", [])]
    if problem in table2_problems():
        files.append(f"results/dpareto/{problem}/comparison/0/evaluations.parquet")
    return files


def front_quality_files(problem):
    """The evaluation files the front-quality table reads for one problem: chains (and their proposals),
    sampling runs, and the rest of its study (grids, Table 2's sample) for the reference front."""
    chains = {m: chain_files(problem, chain_of(m))["evaluations"] for m in config["dpareto"]["methods"]}
    proposals = {m: chain_files(problem, chain_of(m))["proposals"] for m in config["dpareto"]["methods"]}
    sampling = {m: f"results/dpareto/{problem}/{m}/0/evaluations.parquet" for m in sampling_methods()}
    others = [f for f in problem_study_files(problem) if f not in set(chains.values()) | set(sampling.values())]
    return {"chains": chains, "proposals": proposals, "sampling": sampling, "others": others}


def dpareto_targets():
    return [f for problem in config["dpareto"]["problems"] for f in problem_study_files(problem)]


if config["random_sampling"]["points"] < config["dpareto"]["initial_points"]:
    raise WorkflowError(
        f"random_sampling.points ({config['random_sampling']['points']}) is smaller than dpareto.initial_points "
        f"({config['dpareto']['initial_points']}); the initial points are the first points of the random run, so raise random_sampling.points."
    )


ILLUSTRATIONS = {"outpert": "adult-logreg-outpert", "svt": "svt"}


wildcard_constraints:
    example="|".join(ILLUSTRATIONS),


def illustration_targets():
    return [
        f"results/illustrations/{example}/{name}.parquet"
        for example in ILLUSTRATIONS
        for name in ("grid", "random", "surfaces", "next")
    ]


def comparison_part_size():
    """Points in each of Table 2's random parts: k, as the paper's text says ("parts of 256"), or
    DPareto's whole budget k0 + k (272), as the original analysis code did (`statistics.part_size`)."""
    k0, k = config["dpareto"]["initial_points"], config["dpareto"]["iterations"]
    return k if config["statistics"]["part_size"] == "iterations" else k0 + k


def config_label():
    files = ", ".join(str(f) for f in workflow.configfiles) or "config/config.yaml"
    return f"{files} (seed {config['seed']})"


def table2_problems():
    """The study's problems that are rows of the paper's Table 2 (the three adult DP-SGD problems)."""
    return [p for p in config["dpareto"]["problems"] if p in PAPER_TABLE2]


def grid_problems():
    """{problem: grid sizes} of the study's problems with grids, all drawn in Fig. 6."""
    return {p: problem_settings(p)["grids"] for p in config["dpareto"]["problems"] if problem_settings(p).get("grids")}


def figure_problems(n):
    """Fig. 7: the adult problems (the paper's LogReg+SGD, LogReg+Adam, SVM+SGD); Fig. 8: the paper's
    adult and mnist problems (a problem of your own has its figures/front-<problem>.pdf)."""
    if n == "7":
        return table2_problems()
    return [p for p in config["dpareto"]["problems"] if p in PROBLEMS and PROBLEMS[p].dataset in ("adult", "mnist")]


def bo_rounds(chain):
    return -(-config["dpareto"]["iterations"] // chain_batch_size(chain))


def chain_files(problem, chain="bo", run=0):
    base = f"results/dpareto/{problem}/{chain}/{run}"
    return {
        "initial": f"{base}/initial.parquet",
        "proposals": [f"{base}/proposals/{r}.parquet" for r in range(bo_rounds(chain))],
        "evaluations": f"{base}/evaluations.parquet",
    }


def study_targets(study):
    """The outputs `all` builds for one entry of `studies` (the data they read come as their inputs)."""
    if study == "dpareto":
        tables = [f"tables/{name}.{ext}" for name in ["overhead", "front_quality"] + (["table2"] if table2_problems() else [])
                  for ext in ("csv", "md")]
        present = {6: grid_problems(), 7: table2_problems(), 8: figure_problems("8")}
        figures = [f"figures/fig{i}.pdf" for i in (5, 6, 7, 8) if present.get(i, True)]
        fronts = [path for p in config["dpareto"]["problems"] for path in front_targets(p)]
        return dpareto_targets() + figures + tables + fronts
    if study == "illustrations":
        return illustration_targets() + [f"figures/fig{i}.pdf" for i in range(1, 5)]
    if study == "batch":
        return ["figures/batch_vs_sequential.pdf"] + [f"tables/batch_vs_sequential.{ext}" for ext in ("csv", "md")]
    return {"expost": expost_targets, "proposetest": proposetest_targets, "taylor": taylor_targets}[study]()


def query_files(problem):
    """The answers to problems.<problem>.queries: {epsilon: [targets], utility: [targets]}."""
    queries = problem_settings(problem).get("queries", {})
    return [f"results/dpareto/{problem}/query/{kind}{float(t):g}.parquet"
            for key, kind in (("epsilon", "eps"), ("utility", "utility")) for t in queries.get(key, [])]


def front_inputs(wildcards):
    files = {m: f"results/dpareto/{wildcards.problem}/{m}/0/evaluations.parquet" for m in sampling_methods() + chain_methods()}
    return {**files, "queries": query_files(wildcards.problem)}


def front_targets(problem):
    return [f"figures/front-{problem}.pdf", f"tables/front-{problem}.csv", f"tables/front-{problem}.md"]


def all_targets():
    return [path for study in config["studies"] for path in study_targets(study)]


FIGURE_EXAMPLE = {"1": "outpert", "2": "svt", "3": "outpert", "4": "svt"}
EXAMPLE_NAMES = {"outpert": "Output-perturbation logistic regression (adult)", "svt": "Sparse vector technique"}


def batch_chain():
    return f"bo-q{config['statistics']['batch_comparison']['batch_size']}"


# Papers 004, 003, 002: the rows and targets of their rules.
def expost_thread_rows(table):
    rows = [f"S{n}" for n in config["expost"]["synthetic"]["samples"]]
    return rows + (["Reddit"] if table == "table1" else [])


def expost_targets():
    return ["figures/expost_fig1.pdf", "tables/expost_table1.csv", "tables/expost_table2.csv", "tables/expost_table3.csv"]


def proposetest_targets():
    return ["figures/proposetest_fig1.pdf", "figures/proposetest_fig2.pdf", "tables/proposetest_adult.csv"]


def taylor_targets():
    return ["figures/taylor_fig1.pdf", "tables/taylor_table1.csv", "figures/taylor_fig2.pdf"]


def taylor_panels():
    """(reading, dataset, loss) of Fig. 1 and Table 1, readings in config order."""
    taylor = config["taylor"]
    return [(r["name"], d, l) for r in taylor["readings"] for d in taylor["datasets"] for l in taylor["losses"]]


def taylor_fig2_runs():
    """(reading, dataset, loss, n) of Fig. 2: its one reading, every size."""
    fig2 = config["taylor"]["fig2"]
    return [(fig2["reading"], d, l, n) for d in fig2["datasets"] for l in config["taylor"]["losses"] for n in fig2["samples"]]


# Snakemake 9 (9.27.1 here) starts a 1 s threading.Timer on every pass of its scheduling loop whenever a
# job-rate limiter exists, which the CLI always makes (--max-jobs-per-timespan defaults to 100/1s); each
# timer wakes the loop, which starts another, so the chains of timers multiply with every job that
# finishes. On the default config's ~800 jobs the scheduler spent 17 of the run's first 31 minutes of CPU
# re-evaluating, with 600+ timers alive and 224,000 threads started (py-spy; snakemake/snakemake#3804
# reports such a thread storm). A local run submits to no queue, so the limiter protects nothing: it is
# switched off there (a cluster executor keeps it).
onstart:
    if workflow.local_exec and getattr(workflow, "scheduler", None) is not None:
        workflow.scheduler.job_rate_limiter = None
        print("dptradeoff: Snakemake's job-rate limiter is off for this local run (its timers multiplied; "
              "workflow/rules/common.smk)", file=sys.stderr)
