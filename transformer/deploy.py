"""`python -m transformer.deploy`: the command's short name. The code is `transformer.explorer.deploy`."""
import sys

from transformer.explorer.deploy import main

if __name__ == "__main__":
    sys.exit(main())
