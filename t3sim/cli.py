"""``t3sim`` command line: a thin layer over the Python API.

Each command group lives beside the code it drives and exposes
``add_parser(subparsers)``; the handler it sets (``func``) returns an exit code.
Bad input raises :class:`~t3sim.errors.InputError`, printed here as one line on
stderr with exit code 2 and no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

from t3sim import __version__
from t3sim.errors import EXIT_INPUT_ERROR, InputError, SimulationError
from t3sim.exec.executors import ExecutorError

#: Modules providing ``add_parser(subparsers)``, in help order.
COMMAND_MODULES = (
    "t3sim.commands.config_cmds",
    "t3sim.commands.params_cmd",
    "t3sim.commands.run_cmd",
    "t3sim.commands.advise_cmd",
    "t3sim.commands.decision_map_cmd",
    "t3sim.commands.validate_cmd",
    "t3sim.commands.reproduce_cmd",
    "t3sim.workload.cli",
    "t3sim.commands.chakra_cmd",
    "t3sim.memory.cli",
    "t3sim.commands.bench_cmd",
)


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line with exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_INPUT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="t3sim", description="Cycle-level multi-GPU simulator for compute-communication overlap (T3, ASPLOS'24).")
    parser.add_argument("--version", action="version", version=f"t3sim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name):
                continue  # command group not built yet
            raise
        mod.add_parser(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc = args.func(args)
    except InputError as exc:
        sys.stderr.write(f"t3sim: error: {exc.one_line()}\n")
        return EXIT_INPUT_ERROR
    except SimulationError as exc:
        sys.stderr.write(f"t3sim: simulation failed: {exc}\n")
        return 3
    except ExecutorError as exc:  # run, reproduce: a worker died or the cluster went away
        sys.stderr.write(f"t3sim: error: {exc}; finished points are saved, run again to resume\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("t3sim: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
