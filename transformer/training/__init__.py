"""Training: corpora and batches, the training loop, validation and selection, export, evaluation, model cards.

Builds on the model core (`transformer.*`); never imports the explorer. The commands keep their
short names: `python -m transformer.train` and `python -m transformer.evaluate` run
`transformer.training.train` and `transformer.training.evaluate`.
"""
