"""The `dptradeoff` subcommands that read a config (`front`, `release`, ...): the layer above
`dptradeoff.config`, which itself imports the problems, the release settings and the study. Nothing
that `config` imports may import `config` back (tests/test_layers.py, docs/architecture.md)."""
