"""`python -m transformer.train`: the command's short name. The code is `transformer.training.train`."""
from transformer.training.train import cli

if __name__ == "__main__":
    cli()
