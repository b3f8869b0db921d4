# What `all` builds: for each entry of `studies`, its tables and figures and the evaluations they
# summarise (the data they read come as their inputs).


def dpareto_targets():
    problems = config["dpareto"]["problems"]
    study = [f for problem in problems for f in problem_study_files(problem)]
    present = {6: grid_problems(), 7: table2_problems(), 8: figure_problems("8")}
    figures = [paths.figure(f"fig{i}") for i in (5, 6, 7, 8) if present.get(i, True)] + [paths.figure("front_cost")]
    tables = [path for name in ["overhead", "front_quality"] + (["table2"] if table2_problems() else [])
              for path in paths.tables(name)]
    fronts = [path for problem in problems for path in front_targets(problem)]
    return study + figures + tables + fronts


def front_targets(problem):
    return [paths.figure(f"front-{problem}"), *paths.tables(f"front-{problem}")]


def illustration_targets():
    tables = [paths.illustration(example, name) for example in ILLUSTRATIONS
              for name in ("grid", "random", "surfaces", "next")]
    return tables + [paths.figure(f"fig{i}") for i in range(1, 5)]


def batch_targets():
    return [paths.figure("batch_vs_sequential"), *paths.tables("batch_vs_sequential")]


def expost_targets():
    return [paths.figure("expost_fig1")] + [paths.table(f"expost_table{i}", "csv") for i in (1, 2, 3)]


def proposetest_targets():
    return [paths.figure("proposetest_fig1"), paths.figure("proposetest_fig2"), paths.table("proposetest_adult", "csv")]


def taylor_targets():
    return [paths.figure("taylor_fig1"), paths.table("taylor_table1", "csv"), paths.figure("taylor_fig2")]


def release_targets():
    problem = RELEASE_SETTINGS.problem
    return [paths.ReleaseFiles(problem).record, paths.figure(f"release-{problem}"),
            *paths.tables(f"release-{problem}")]


def audit_targets():
    return [path for problem in config["audit"]["problems"]
            for path in [paths.figure(f"audit-{problem}"), *paths.tables(f"audit-{problem}")]]


STUDY_TARGETS = {"dpareto": dpareto_targets, "illustrations": illustration_targets, "batch": batch_targets,
                 "expost": expost_targets, "proposetest": proposetest_targets, "taylor": taylor_targets,
                 "release": release_targets, "audit": audit_targets}


def all_targets():
    return [path for study in config["studies"] for path in STUDY_TARGETS[study]()]
