"""CLI command groups that belong to no single simulator layer."""

import sys
from typing import List


def cli_argv(*args: str) -> List[str]:
    """The command line that runs ``t3sim ARGS`` in a child process with this interpreter (the installed
    ``t3sim`` script may not be on PATH, or may belong to another environment)."""
    return [sys.executable, "-c", "import sys; from t3sim.cli import main; sys.exit(main(sys.argv[1:]))", *args]
