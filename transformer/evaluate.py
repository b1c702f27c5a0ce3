"""`python -m transformer.evaluate`: the command's short name. The code is `transformer.training.evaluate`."""
from transformer.training.evaluate import cli

if __name__ == "__main__":
    cli()
