"""Privacy accounting, the single home of every epsilon this package computes.

events: what ran (dp_accounting's DpEvent classes, ours for SVT, output and objective perturbation,
a pure-DP mechanism, a random choice); accountant: `Accountant(conversion)` turns an event into
epsilon at a delta; conversions: RDP -> (epsilon, delta), as objects; calibration: the noise for a
target epsilon. The analyses: wor_gaussian (WBK19 Thm 27), gaussian (analytic), svt,
output_perturbation, objective_perturbation, repeat_and_select (Papernot-Steinke), composition
(advanced; propose-test's total), zcdp, brownian, filter (paper 004 Alg. 4). dpsgd: a DP-SGD run as
an event, and `epsilon` / `calibrate_noise` by the config's conversion name.
"""
