# Input functions: what the rules read and the parameters they pass, from the config and a job's
# wildcards. Paths come from dptradeoff.paths.
from dptradeoff.baselines.grid import grid
from dptradeoff.bo.propose import DPareto, Settings
from dptradeoff.data.build import raw_inputs
from dptradeoff.data.sources import file_specs
from dptradeoff.problems.batches import Batches
from dptradeoff.problems.traces import TraceSettings
from dptradeoff.stats.ttest import PAPER_TABLE2
from dptradeoff import study


def config_label(accountant=True):
    """The config files and seed, and (`accountant`) how DP-SGD's epsilon was accounted: every table and figure of a
    study that trains DP-SGD names it (papers 003/004, RDP algorithms, name their own RDP conversion instead)."""
    files = ", ".join(str(f) for f in workflow.configfiles) or "config/config.yaml"
    how = f"; DP-SGD epsilon: {accountant_named(ACCOUNTING).description}" if accountant else ""
    return f"{files} (seed {config['seed']}{how})"


# Datasets.
def dataset_config(dataset):
    return config["datasets"][dataset]


def data_outputs(dataset):
    return [paths.data(dataset, part) for part in DATASETS[dataset].outputs]


def dataset_inputs(dataset):
    return raw_inputs(dataset, dataset_config(dataset)["source"], dataset_config(dataset))


def raw_file_spec(wildcards):
    specs = file_specs(wildcards.dataset, dataset_config(wildcards.dataset).get("files"))
    if wildcards.filename not in specs:
        raise WorkflowError(f"{wildcards.filename} is not a file of dataset {wildcards.dataset}; its files are {sorted(specs)}.")
    return specs[wildcards.filename]


# Problems.
def problem_definition(problem):
    """The keys of problems.<problem> that define the problem (a rule's `problem` param)."""
    return definition(config, problem)


def problem_settings(problem):
    return config["problems"].get(problem, {})


def chain_steering(problem, chain):
    """What steers a DPareto chain's rounds (`bo.chain_round.chain_context`): the problem's region rule, and
    its declared queries (the `dpareto` chain only: a batch chain or a peer steers by the front alone)."""
    queries = problem_settings(problem).get("queries", {}) if chain == paths.DPARETO else {}
    return {"region": REGION_RULES[problem], "queries": queries}


def problem_repeats(problem):
    return problem_settings(problem).get("repeats", KNOWN_PROBLEMS[problem].default_repeats)


def problem_data(problem):
    """The Parquet files of a problem's dataset (none for SVT)."""
    dataset = KNOWN_PROBLEMS[problem].dataset
    return data_outputs(dataset) if dataset else []


# Sampling methods and grids: points written once, evaluated in batches of points_per_job.
def evaluation_batches():
    return Batches(config["random_sampling"]["points_per_job"])


def method_batches(wildcards):
    """The batch files of a method's run, in order."""
    run = paths.RunFiles(wildcards.problem, wildcards.method, wildcards.run)
    points = method_points(wildcards.problem, wildcards.method)
    return [run.evals(b) for b in range(evaluation_batches().count(points))]


def method_points(problem, method):
    if method in ("random", "uniform"):
        return config["random_sampling"]["points"]
    if method == "comparison":
        # traced, its parts are cut at the chain's training cost: half as many points again leave room
        # for parts of more, cheaper trainings (the default config's used 0.9 of a part's points)
        points = config["statistics"]["comparison_parts"] * comparison_part_size()
        return points + points // 2 if trace_settings() else points
    k = int(method[len("grid"):])
    return len(grid(resolve(problem, problem_definition(problem)), k, GRID_SPACING))


def sampling_methods():
    """The random-sampling runs of every DPareto problem: the paper's distributions, and uniform."""
    return study.sampling_methods(config)


def comparison_part_size():
    """Points in each of Table 2's random parts: k, as the paper's text says ("parts of 256"), or
    DPareto's whole budget k0 + k (272), as the original analysis code did (`statistics.part_size`)."""
    k0, k = config["dpareto"]["initial_points"], config["dpareto"]["iterations"]
    return k if config["statistics"]["part_size"] == "iterations" else k0 + k


# Chains: DPareto's and its peers'.
def initial_batches(wildcards):
    """The random run's batches that hold the chain's k0 initial points."""
    random_run = paths.RunFiles(wildcards.problem, "random", wildcards.run)
    return [random_run.evals(b) for b in range(evaluation_batches().count(config["dpareto"]["initial_points"]))]


def chain_batch_size(chain):
    """q of a chain: `dpareto-q<q>` uses q, DPareto's `dpareto` and the peers' chains dpareto.batch_size."""
    batch = paths.batch_chain("")
    return int(chain[len(batch):]) if chain.startswith(batch) else config["dpareto"]["batch_size"]


def problem_methods(problem):
    """The chains the study runs on a problem (each folder named as its method): problems.<name>.methods,
    else DPareto alone for a problem of your own, else dpareto.methods (dptradeoff.study)."""
    return study.problem_methods(config, problem)


def study_evaluations():
    """{method: {problem: its run 0's evaluations}} of every method some study problem runs: the chains,
    then the sampling baselines; a problem appears under the methods it runs only."""
    problems = config["dpareto"]["problems"]
    return {method: {p: paths.RunFiles(p, method).evaluations for p in problems
                     if method in problem_methods(p) + sampling_methods()}
            for method in study.study_methods(config, problems)}


def method_evaluations():
    """The files of `study_evaluations` as named inputs (a method's name with - as _)."""
    return {method.replace("-", "_"): list(files.values()) for method, files in study_evaluations().items()}


def chain_method(chain):
    """The object that proposes a chain's rounds: DPareto (`dpareto`, `dpareto-q<q>`) or a peer optimiser."""
    if chain in PEERS:
        return PEERS[chain].configured(config["dpareto"]["peer_gp_points"])
    return DPareto(bo_settings())


def trace_settings():
    """The config's epoch-trace settings (`dpareto.traces`), None when traces are off."""
    return TraceSettings.from_config(config["dpareto"])


def bo_settings():
    return Settings.from_config(config["dpareto"], config["statistics"])


def chain_round_seconds(problem, chain):
    """The chain's seconds a round where the problem gives the chain seconds (problems.<name>.seconds.chain, else
    dpareto.chain_seconds), None otherwise: a batch round trains as long as it chose (dptradeoff.bo.batch_rounds)."""
    seconds = problem_settings(problem).get("seconds", {}).get("chain", config["dpareto"].get("chain_seconds"))
    return float(seconds) / bo_rounds(chain) if seconds else None


def bo_rounds(chain):
    return -(-config["dpareto"]["iterations"] // chain_batch_size(chain))


def chain_run(wildcards):
    return paths.RunFiles(wildcards.problem, wildcards.chain, wildcards.run)


def evaluations_before_round(wildcards):
    first = int(wildcards.round) * chain_batch_size(wildcards.chain)
    return [chain_run(wildcards).evals(i) for i in range(first)]


def previous_proposal(wildcards):
    """The round before's proposal file (its GP hyperparameters start this round's ML-II); listed
    after the evaluations, which already depend on it, so building the DAG never recurses 256 deep."""
    r = int(wildcards.round)
    return [chain_run(wildcards).proposal(r - 1)] if r else []


def point_proposal(wildcards):
    """The proposal of the round that holds point i."""
    return chain_run(wildcards).proposal(int(wildcards.i) // chain_batch_size(wildcards.chain))


def chain_evaluations(wildcards):
    return [chain_run(wildcards).evals(i) for i in range(config["dpareto"]["iterations"])]


def chain_files(problem, chain=paths.DPARETO, run=0):
    files = paths.RunFiles(problem, chain, run)
    return {
        "initial": files.initial,
        "proposals": [files.proposal(r) for r in range(bo_rounds(chain))],
        "evaluations": files.evaluations,
    }


def batch_chain():
    return paths.batch_chain(config["statistics"]["batch_comparison"]["batch_size"])


# A problem's study and what reads it.
def problem_study_files(problem):
    """Every evaluation file of one problem's DPareto study: sampling runs and the problem's chains (every
    run), grids, Table 2's sample."""
    runs = [study.runs_of(config, problem, run) for run in range(config["dpareto"]["runs"])]
    files = [files[method] for method in runs[0] for files in runs]
    return files + list(study.other_files(config, problem).values())


def first_runs(problem, methods):
    """{method: the evaluations of its run 0} (the run the figures and tables show)."""
    return {m: paths.RunFiles(problem, m).evaluations for m in methods}


def front_quality_files(problem):
    """The evaluation files the front-quality table reads for one problem: chains (and their proposals),
    sampling runs, and the rest of its study (grids, Table 2's sample) for the reference front."""
    chains = {m: chain_files(problem, m)["evaluations"] for m in problem_methods(problem)}
    proposals = {m: chain_files(problem, m)["proposals"] for m in problem_methods(problem)}
    sampling = first_runs(problem, sampling_methods())
    others = [f for f in problem_study_files(problem) if f not in set(chains.values()) | set(sampling.values())]
    return {"chains": chains, "proposals": proposals, "sampling": sampling, "others": others}


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


def query_files(problem):
    """The answers to problems.<problem>.queries: {epsilon: [targets], utility: [targets]}."""
    queries = problem_settings(problem).get("queries", {})
    return [paths.query(problem, kind, f"{float(t):g}")
            for key, kind in (("epsilon", "eps"), ("utility", "utility")) for t in queries.get(key, [])]


def front_evaluations(problem):
    """{method: evaluations file} the front figure and table show: run 0 of the problem's sampling runs and
    chains, its grids and Table 2's sample (dptradeoff.study, as `dptradeoff front`)."""
    return study.evaluation_files(config, problem)


def front_inputs(wildcards):
    evaluations = front_evaluations(wildcards.problem)
    proposals = chain_files(wildcards.problem)["proposals"] if paths.DPARETO in evaluations else []
    return {**evaluations, "queries": query_files(wildcards.problem), "proposals": proposals,
            "data": problem_data(wildcards.problem), "audit": audit_table(wildcards.problem)}


def audit_table(problem):
    """The problem's audit table where audit.problems lists it (its front table carries a violation's warning)."""
    return [paths.table(f"audit-{problem}", "csv")] if problem in config["audit"]["problems"] else []


def audit_inputs(wildcards):
    return {**front_evaluations(wildcards.problem), "data": problem_data(wildcards.problem)}


# Papers 004 and 002: the rows and runs of their tables and figures.
def expost_thread_rows(table):
    rows = [f"S{n}" for n in config["expost"]["synthetic"]["samples"]]
    return rows + (["Reddit"] if table == "table1" else [])


def taylor_panels():
    """(reading, dataset, loss) of Fig. 1 and Table 1, readings in config order."""
    taylor = config["taylor"]
    return [(r["name"], d, l) for r in taylor["readings"] for d in taylor["datasets"] for l in taylor["losses"]]


def taylor_fig2_runs():
    """(reading, dataset, loss, n) of Fig. 2: its one reading, every size."""
    fig2 = config["taylor"]["fig2"]
    return [(fig2["reading"], d, l, n) for d in fig2["datasets"] for l in config["taylor"]["losses"] for n in fig2["samples"]]


# The illustrative example each of Figs 1-4 shows.
FIGURE_EXAMPLE = {"1": "outpert", "2": "svt", "3": "outpert", "4": "svt"}
EXAMPLE_NAMES = {"outpert": "Output-perturbation logistic regression (adult)", "svt": "Sparse vector technique"}


def figure_illustration(name):
    """An input function: the table `name` of the example that figure {n} shows."""
    return lambda wildcards: paths.illustration(FIGURE_EXAMPLE[wildcards.n], name)


# The release (docs/release.md).
def release_settings(wildcards):
    if RELEASE_SETTINGS is None or wildcards.problem != RELEASE_SETTINGS.problem:
        configured = RELEASE_SETTINGS.problem if RELEASE_SETTINGS else "nothing"
        raise WorkflowError(f"release.problem is {configured}, not {wildcards.problem}; set release.problem: "
                            f"{wildcards.problem} in a config, or run `dptradeoff release --problem {wildcards.problem}`.")
    return RELEASE_SETTINGS


def release_tuning_definition(settings):
    """The tuning problem's definition, None where the tuning is private (no tuning problem)."""
    return None if settings.tuning_problem is None else problem_definition(settings.tuning_problem)


def release_tuning_settings(settings):
    return {} if settings.tuning_problem is None else problem_settings(settings.tuning_problem)


def release_inputs(wildcards):
    settings = release_settings(wildcards)
    tuning = settings.tuning_problem
    if tuning is None:   # a private tuning: the search runs on the private rows, no front is read
        return {"data": problem_data(settings.problem)}
    return {"tuning": paths.RunFiles(tuning, paths.DPARETO, 0).evaluations,
            "data": sorted(set(problem_data(settings.problem) + problem_data(tuning)))}
