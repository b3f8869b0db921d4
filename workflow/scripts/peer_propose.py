from dptradeoff.workflow_support import limit_threads, rule_context

limit_threads(snakemake.threads)

from dptradeoff.bo.chain_round import propose_round  # noqa: E402

with rule_context(snakemake):   # logs to the rule's log (propose_round: log=None)
    w, p, i = snakemake.wildcards, snakemake.params, snakemake.input
    propose_round(method=p.method, problem=w.problem, definition=p.problem, initial=i.initial, evaluations=list(i.evals),
                  previous=None, output=snakemake.output[0], log=None, batch_size=p.batch_size,
                  seed=p.seed, run=int(w.run), round_index=int(w.round))
