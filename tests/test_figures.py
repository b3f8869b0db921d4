"""What each DPareto figure draws (which problems, which methods, which points), checked on the
matplotlib figure the plotting function hands to `save`, and which files the figure rules read."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptradeoff.pareto import pareto_front
from dptradeoff.plots import dpareto, illustrations

ADULT = ["adult-logreg-sgd", "adult-logreg-adam", "adult-svm-sgd"]
MNIST = ["mnist-mlp1-sgd", "mnist-mlp2-sgd"]


@pytest.fixture
def drawn(monkeypatch):
    """The figures plotting functions would save: [(figure, caption)], instead of PDFs."""
    figures = []

    def capture(fig, path, caption, sources, config):
        figures.append((fig, caption))

    monkeypatch.setattr(dpareto, "save", capture)
    monkeypatch.setattr(illustrations, "save", capture)
    return figures


def evaluations(n: int, seed: int, method: str = "random") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    eps = 10 ** rng.uniform(-2, 1.5, n)
    utility = np.clip(0.85 - 0.3 / (1 + eps) + 0.03 * rng.standard_normal(n), 0.01, 0.99)
    return pd.DataFrame({"index": np.arange(n), "method": method, "epsilon": eps, "utility": utility,
                         "utility_min": utility - 0.02, "utility_max": utility + 0.02, "repeats": 10,
                         "source_label": "test data"})


def legend_labels(ax) -> list[str]:
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else []


def line_points(ax, label: str) -> np.ndarray:
    line = next(line for line in ax.get_lines() if line.get_label() == label)
    return np.column_stack([line.get_xdata(), line.get_ydata()])


def test_fig5_draws_every_method_under_every_metric_and_1500_random_points_against_dpareto_s_k(drawn):
    from dptradeoff.stats.front_metrics import MetricSettings

    problems = ADULT + MNIST
    chains = ("dpareto", "optuna-tpe", "botorch")
    methods = {m: {p: evaluations(16 + 40, 30 * j + i) for i, p in enumerate(problems)} for j, m in enumerate(chains)}
    methods |= {"random": {p: evaluations(56, 10 + i) for i, p in enumerate(problems)},
                "uniform": {p: evaluations(56, 20 + i) for i, p in enumerate(problems)}}
    for frames in methods.values():
        for frame in frames.values():
            frame["error"] = 1 - frame["utility"]
    metrics = {p: MetricSettings().metrics(0.24) for p in problems}
    comparison = evaluations(2000, 99, "comparison")
    comparison["error"] = 1 - comparison["utility"]
    dpareto.fig5(methods, comparison, 16, metrics, "unused.pdf", "test config")
    (fig, caption), = drawn
    axes = np.array(fig.axes).reshape(4, len(problems))   # raw, log-epsilon, region; then the fronts
    assert [ax.get_title() for ax in axes[:3, 0]] == ["LogReg+SGD: raw", "LogReg+SGD: log-epsilon", "LogReg+SGD: region"]
    assert legend_labels(axes[0, 0]) == ["DPareto", "Optuna TPE", "BoTorch qLogNEHVI", "random (Tables 3-4)",
                                         "uniform random"]
    # each curve is its metric over the first n evaluations of that method
    region = metrics["adult-logreg-adam"][2]
    frame = methods["botorch"]["adult-logreg-adam"]
    assert np.allclose(line_points(axes[2, 1], "BoTorch qLogNEHVI")[:, 1], region.curve(frame["epsilon"], frame["error"]))
    bottom_right = axes[3, 1]
    assert "random (1500 points)" in legend_labels(bottom_right) and "DPareto (40 points)" in legend_labels(bottom_right)
    # the DPareto front there is the front of its 40 points after the initial ones
    bo = methods["dpareto"]["adult-logreg-sgd"]
    front = pareto_front(np.column_stack([bo["epsilon"], 1 - bo["utility"]])[16:])
    assert np.allclose(line_points(bottom_right, "DPareto front")[:, 0], front[:, 0])
    assert "uniform random" in caption and "Optuna TPE" in caption


def test_fig7_draws_the_fronts_dpareto_recovered_on_the_three_adult_problems(drawn):
    bo = {p: evaluations(60, i, "dpareto") for i, p in enumerate(ADULT)}
    dpareto.fig7(bo, "unused.pdf", "test config")
    (fig, caption), = drawn
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["LogReg+SGD (R = 10)", "LogReg+Adam (R = 10)", "SVM+SGD (R = 10)"]
    for ax, problem in zip(panels, ADULT):
        frame = bo[problem]
        for label, column in (("mean", "utility"), ("best replication", "utility_max"), ("worst replication", "utility_min")):
            front = pareto_front(np.column_stack([frame["epsilon"], 1 - frame[column]]))
            assert np.allclose(line_points(ax, label)[:, 0], front[:, 0]), (problem, label)
    assert "DPareto recovered" in caption


def test_fig8_draws_only_dpareto_s_fronts(drawn):
    bo = {p: evaluations(60, i, "dpareto") for i, p in enumerate(ADULT + MNIST)}
    dpareto.fig8(bo, "unused.pdf", "test config")
    (fig, _), = drawn
    adult, mnist = fig.axes[:2]
    assert legend_labels(adult) == ["LogReg+SGD", "LogReg+Adam", "SVM+SGD"] and legend_labels(mnist) == ["MLP1", "MLP2"]
    front = pareto_front(np.column_stack([bo["mnist-mlp2-sgd"]["epsilon"], 1 - bo["mnist-mlp2-sgd"]["utility"]]))
    assert np.allclose(line_points(mnist, "MLP2")[:, 0], front[:, 0])


@pytest.mark.parametrize("problem, error", [("adult-logreg-outpert", "classification error"), ("svt", "1 − F1")])
def test_figs_3_and_4_show_the_error_the_gp_models_and_the_star_of_that_fit(drawn, monkeypatch, problem, error):
    from dptradeoff.bo.propose import Settings
    from dptradeoff.bo.surfaces import surfaces
    from dptradeoff.problems import get_problem

    p = get_problem(problem)
    rng = np.random.default_rng(0)
    unit = rng.random((30, 2))
    low = np.array([np.log(d.low) if d.log else d.low for d in p.domain])
    high = np.array([np.log(d.high) if d.log else d.high for d in p.domain])
    x = low + unit * (high - low)
    x = np.where([d.log for d in p.domain], np.exp(x), x)
    random = pd.DataFrame(x, columns=p.names)
    if p.domain[0].integer:
        random[p.names[0]] = random[p.names[0]].round()
    random["epsilon"] = 10 ** (2 * unit[:, 0] - 1)
    random["error"] = np.clip(0.1 + 0.5 * unit[:, 1] * unit[:, 0], 0.01, 0.99)
    random["problem"], random["source_label"] = problem, "test data"
    from dptradeoff.bo import surfaces as surfaces_module

    fits = []
    real_fit = surfaces_module.fit_surrogates
    monkeypatch.setattr(surfaces_module, "fit_surrogates", lambda *a, **k: fits.append(1) or real_fit(*a, **k))
    surface, star = surfaces(p, random, 12, Settings(candidates=500, gp_restarts=1), np.random.default_rng(1))
    assert len(fits) == 1   # the surfaces and the star come from one GP fit
    # the star is (near) the top of the plotted HVPoI surface: random candidates + L-BFGS-B on the same surface
    assert star["acquisition"].iloc[0] >= 0.9 * surface["hvpoi"].max() > 0
    grid = random.assign(utility_runs=[[0.5]] * len(random))
    illustrations.surfaces_figure(random, surface, star, grid, "unused.pdf", problem, "test config")
    (fig, caption), = drawn
    titles = [ax.get_title() for ax in fig.axes]
    assert f"GP mean of {error}" in titles and error.replace("−", "-") in caption and caption.isascii()
    star_drawn = next(c for ax in fig.axes for c in ax.collections if c.get_label() == "next point").get_offsets()
    assert np.allclose(star_drawn, star[p.names].to_numpy())


@pytest.mark.slow   # a dry run of config/paper-adult.yaml's thousands of jobs: about 18 s
def test_figure_rules_read_the_files_the_paper_s_figures_show(run_snakemake, tmp_path):
    """Dry run of the Adult study: Fig. 7 reads the three adult chains only (no random sampling), Fig. 5
    reads DPareto, random and uniform sampling and Table 2's sample, Fig. 6 the grids it draws; `all`
    builds the DPareto study alone (studies: [dpareto]).
    Runs Snakemake itself: a dry run of config/paper-adult.yaml, which no shared pipeline plans."""
    done = run_snakemake(tmp_path / "work", "all", "-n", "--configfile=config/paper-adult.yaml")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    inputs, priority = {}, {}
    for block in re.findall(r"^(?:local)?rule (\w+):\n((?:    .*\n)+)", out, re.MULTILINE):
        rule, body = block
        wildcard = re.search(r"wildcards: n=(\d)", body)
        files = re.search(r"input: (.*)", body)
        inputs[rule + (wildcard.group(1) if wildcard else "")] = files.group(1).split(", ") if files else []
        level = re.search(r"priority: (\d+)", body)
        priority[rule] = int(level.group(1)) if level else 0
    # The chains go first, and what starts a chain goes before a running chain's next job (Snakemake's
    # greedy scheduler breaks priority ties by input size, and these jobs have small or no inputs).
    assert priority["random_points"] > priority["bo_propose"] and priority["bo_initial"] > priority["bo_propose"]
    assert priority["dataset_split"] > priority["bo_propose"] and priority["embedded_wheel"] > priority["bo_propose"]
    assert priority["bo_propose"] == priority["bo_evaluate"] == priority["evaluate_random_batch"] > priority["evaluate_batch"]
    assert inputs["fig_fronts7"] == [f"results/dpareto/{p}/dpareto/0/evaluations.parquet" for p in ADULT]
    assert inputs["fig_fronts8"] == inputs["fig_fronts7"]
    assert sorted(inputs["fig5"]) == sorted([f"results/dpareto/{p}/{m}/0/evaluations.parquet" for p in ADULT
                                             for m in ("dpareto", "random", "uniform")]   # the paper configs: DPareto only
                                            + ["results/dpareto/adult-logreg-sgd/comparison/0/evaluations.parquet"]
                                            + [f"results/data/adult/{split}.parquet" for split in ("test", "train")])
    assert sorted(inputs["fig6"]) == sorted(["results/dpareto/adult-logreg-sgd/dpareto/0/evaluations.parquet"]
                                            + [f"results/dpareto/adult-logreg-sgd/grid{k}/0/evaluations.parquet" for k in (3, 4)])
    planned = set(inputs)
    assert {"table2", "overhead_table", "fig5", "fig6"} <= planned
    assert not planned & {"fig_oracles1", "fig_surfaces3", "batch_vs_sequential", "expost_fig1", "taylor_fig2", "proposetest_figures"}
    assert re.search(r"^bo_propose\s+768$", out, re.MULTILINE)                 # 3 problems x 256 rounds


def test_a_front_figure_draws_the_trivial_predictor_s_error_where_it_is_known(monkeypatch):
    """figures/front-<problem>.pdf: a labelled horizontal line at 1 - the trivial predictor's utility (the
    majority class's accuracy, or the config's utility_floor); none where the utility is unknown."""
    from dptradeoff.plots import front
    from dptradeoff.problems import PROBLEMS, resolve
    from dptradeoff.problems.oracle import Data

    monkeypatch.setattr(front, "save", lambda *args: None)
    rng = np.random.default_rng(0)
    data = Data(rng.random((40, 3)), np.r_[np.ones(30), np.zeros(10)], rng.random((20, 3)), np.r_[np.ones(15), np.zeros(5)],
                "test", "test data")
    adult = PROBLEMS["adult-logreg-sgd"]
    assert front.trivial_predictor(adult, data) == (0.75, "majority class / trivial predictor")   # label 1 on 15 of 20
    assert front.trivial_predictor(adult, data, 0.6) == (0.6, "trivial predictor (utility_floor)")
    own = resolve("gaussian-mean", {"oracle": str(Path(__file__).parent / "user_problems" / "gaussian_mean.py"),
                                    "domain": {"sigma": {"low": 0.001, "high": 1.0}, "clip": {"low": 0.1, "high": 1.0}}})
    assert front.trivial_predictor(own, None) is None

    evals = {m: evaluations(30, i, m).assign(error=lambda f: 1 - f["utility"]) for i, m in enumerate(["random", "dpareto"])}
    fig = front.front_figure("adult-logreg-sgd", "accuracy", evals, [], "unused.pdf", "test config",
                             front.trivial_predictor(adult, data))
    ax = fig.axes[0]
    line = next(line for line in ax.get_lines() if line.get_label().startswith("majority class / trivial predictor"))
    assert np.allclose(line.get_ydata(), 0.25) and line.get_label().endswith(": 0.25")
    assert "majority class / trivial predictor: 0.25" in legend_labels(ax)
    unknown = front.front_figure("gaussian-mean", "closeness", evals, [], "unused.pdf", "test config", None)
    assert not [line for line in unknown.axes[0].get_lines() if "trivial" in line.get_label()]


def test_a_front_where_nothing_beats_the_trivial_predictor_gets_a_loud_warning():
    import pandas as pd

    from dptradeoff.plots.front import trivial_warning

    learned = {"random": pd.DataFrame({"utility": [0.5, 0.81], "failure": [None, None]})}
    nothing = {"random": pd.DataFrame({"utility": [0.5, 0.7, float("nan")], "failure": [None, None, "x"]})}
    assert trivial_warning(learned, (0.76, "majority class / trivial predictor")) == ""
    assert trivial_warning(nothing, (0.76, "majority class / trivial predictor")).startswith(
        "WARNING: no evaluated point beats the majority class / trivial predictor (utility 0.76)")
    assert trivial_warning(nothing, None) == ""


def _front(monkeypatch, utility: str, errors: tuple[float, float], out: str | None = None):
    """The front figure of 40 points whose errors fall from errors[1] to errors[0] as epsilon grows (log-spaced),
    and its caption (what `save` got); the PDF written to `out` where given (its layout as saved)."""
    from dptradeoff.plots import common, front

    captions = []

    def capture(fig, path, caption, sources, config):
        captions.append(caption)
        if out:
            common.save(fig, out, caption, sources, config)

    monkeypatch.setattr(front, "save", capture)
    eps = np.logspace(-2, 1.5, 40)
    error = np.logspace(np.log10(errors[1]), np.log10(errors[0]), 40)
    frame = pd.DataFrame({"index": np.arange(40), "method": "random", "epsilon": eps, "utility": 1 - error, "error": error,
                          "utility_min": 1 - error, "utility_max": 1 - error, "repeats": 3, "source_label": "test data"})
    fig = front.front_figure("laplace-mean", utility, {"random": frame.iloc[:20], "dpareto": frame.iloc[20:]}, [],
                             "unused.pdf", "test config", (0.0, "trivial predictor (utility_floor)"))
    return fig, captions[0]


@pytest.mark.parametrize("utility, label", [
    ("accuracy", "1 − accuracy"), ("F1", "1 − F1"), ("test accuracy", "1 − test accuracy"),
    ("1 - |error|/100", "|error|/100 = 1 − utility"), ("1 − mse", "mse = 1 − utility"),
    ("1 - a + b", "1 − (1 - a + b)"), ("exp(-mse)", "1 − (exp(-mse))"), ("", "1 − utility"),
])
def test_the_error_axis_reads_right_for_any_utility_description(monkeypatch, utility, label):
    """A description that is a formula is not prefixed again: 1 − (1 − X) is X (issue 44: '1 − 1 - |error|/100')."""
    from dptradeoff.plots.common import error_label

    assert error_label(utility) == label
    fig, _ = _front(monkeypatch, utility, (0.1, 0.3))
    assert fig.axes[0].get_ylabel() == label


def test_the_oracles_utility_description_labels_the_front_of_the_laplace_example(tmp_path):
    from dptradeoff.plots.common import error_label

    (tmp_path / "ages.csv").write_text("age\n" + "\n".join(str(20 + i % 50) for i in range(200)) + "\n")
    problem = resolve_user(tmp_path / "ages.csv")
    assert problem.utility == "1 - |error|/100" and error_label(problem.utility) == "|error|/100 = 1 − utility"


def resolve_user(csv):
    from dptradeoff.problems import resolve

    example = Path(__file__).parent.parent / "examples" / "laplace_mean.py"
    return resolve("laplace-mean", {"oracle": f"{example}:ClampedLaplaceMean", "options": {"csv": str(csv)},
                                    "domain": {"scale": {"low": 0.001, "high": 10, "log": True},
                                               "lower": {"low": 0, "high": 35}, "upper": {"low": 40, "high": 120}}})


@pytest.mark.parametrize("errors, log", [((2e-4, 0.1), True), ((0.1, 0.3), False), ((0.05, 0.5), False),
                                         ((0.049, 0.5), True)])
def test_a_front_spanning_more_than_a_decade_of_error_is_drawn_on_a_log_error_axis(monkeypatch, errors, log):
    """Errors 2e-4 to 0.1 on a linear axis lie flat along 0; the rule (largest front error more than ten times
    the smallest) is stated in the caption with the span, and epsilon stays on a log axis."""
    fig, caption = _front(monkeypatch, "1 - |error|/100", errors)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert ax.get_yscale() == ("log" if log else "linear")
    assert ("Error on a log axis: the front's errors span more than a decade" in caption) == log
    assert ax.get_ylabel().endswith("(log scale)") == log


def test_the_front_legend_lies_below_the_axes_never_over_a_point_nor_wider_than_the_plot(monkeypatch, tmp_path):
    """The legend of a crowded front (points in every corner) is drawn outside the axes, below them: its box and the
    axes' do not overlap in the saved layout, it is no wider than the plot, and it stays inside the figure."""
    fig, _ = _front(monkeypatch, "accuracy", (0.1, 0.9), str(tmp_path / "front.pdf"))
    fig.canvas.draw()
    ax = fig.axes[0]
    legend, frame = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert legend.y1 <= frame.y0                # below the axes
    assert legend.width <= frame.width + 1      # never wider than the plot (the Laplace example's was)
    assert legend.x1 <= fig.bbox.x1 + 1 and legend.x0 >= fig.bbox.x0 - 1      # and inside the figure


def test_a_front_figure_shades_the_problems_region_of_interest(monkeypatch):
    """The region of interest (the one the chain searched, `front.shaded_region`) is a labelled band over its
    epsilon range, and the caption names it and the metrics' region where that differs; without a region, no band."""
    from dptradeoff.plots import front
    from dptradeoff.stats.front_metrics import Region

    captions = []
    monkeypatch.setattr(front, "save", lambda fig, out, caption, *rest: captions.append(caption))
    evals = {m: evaluations(30, i, m).assign(error=lambda f: 1 - f["utility"]) for i, m in enumerate(["random", "dpareto"])}
    searched = "the region DPareto's chain searched in its last round (derived from the problem)"
    fig = front.front_figure("mine", "accuracy", evals, [], "unused.pdf", "test config", None,
                             (Region(1e-4, 0.008, 0.1), searched, "The front metrics count in ε [1e-05, 2.9]."))
    band = next(p for p in fig.axes[0].patches if p.get_label().startswith("region of interest"))
    xs = band.get_transform().transform(band.get_path().vertices)[:, 0]          # display coordinates
    low, high = fig.axes[0].transData.inverted().transform(np.c_[[xs.min(), xs.max()], [0, 0]])[:, 0]
    assert np.isclose(low, 1e-4, rtol=1e-6) and np.isclose(high, 0.008, rtol=1e-6)
    assert "region of interest: ε in [0.0001, 0.008]" in legend_labels(fig.axes[0])
    assert f"Shaded: {searched}, ε in [0.0001, 0.008]. The front metrics count in ε [1e-05, 2.9]." in captions[-1]
    plain = front.front_figure("mine", "accuracy", evals, [], "unused.pdf", "test config")
    assert not [p for p in plain.axes[0].patches if p.get_label().startswith("region of interest")]
