"""``t3sim config show|check``.

``check`` validates every file it is given and reports every error it finds (one line each on stderr):
all pydantic errors of a file, and for an experiment every sweep point that cannot be simulated
(:func:`t3sim.exec.checks.check_experiment`). Exit 0 when every file is good, else 2.
"""

from __future__ import annotations

import argparse
import sys

from typing import List

import yaml
from pydantic import ValidationError

from t3sim.config import ROOT_MODELS, detect_kind, load_config, load_raw
from t3sim.config.loader import validation_errors
from t3sim.config.sweep import expand
from t3sim.errors import EXIT_INPUT_ERROR, InputError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="show or check config files")
    csub = p.add_subparsers(dest="config_command", metavar="SUBCOMMAND", parser_class=type(p))
    csub.required = True

    show = csub.add_parser("show", help="print the resolved config (bases merged, overrides applied, defaults filled) as YAML")
    show.add_argument("config", help="YAML config file (experiment, system or model)")
    show.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                      help="override one field, e.g. --set system.interconnect.num_gpus=16 (repeatable)")
    show.set_defaults(func=_show)

    check = csub.add_parser("check", help="validate config files; report every error of every file (exit 2 if any)")
    check.add_argument("files", nargs="+", help="YAML config files")
    check.set_defaults(func=_check)


def resolved_yaml(model) -> str:
    """The resolved config as YAML (the form saved beside every result)."""
    return yaml.safe_dump(model.model_dump(mode="json"), sort_keys=False, default_flow_style=False)


def _show(args: argparse.Namespace) -> int:
    kind, model = load_config(args.config, args.overrides)
    if kind == "experiment":
        _check_points(args.config, args.overrides)
    sys.stdout.write(f"# {kind}: {args.config} (resolved)\n")
    sys.stdout.write(resolved_yaml(model))
    return 0


def _check(args: argparse.Namespace) -> int:
    bad = 0
    for f in args.files:
        errors = file_errors(f)
        for e in errors:
            sys.stderr.write(f"t3sim: error: {e.one_line()}\n")
        if errors:
            bad += 1
        else:
            print(f"ok  {detect_kind(load_raw(f)[0]):<10} {f}")
    if bad and len(args.files) > 1:
        sys.stderr.write(f"t3sim: {bad} of {len(args.files)} files have errors\n")
    return EXIT_INPUT_ERROR if bad else 0


def file_errors(path: str) -> List[InputError]:
    """Every error of one config file: its validation errors, or (an experiment) its points' check errors."""
    try:
        data, prov = load_raw(path)
        kind = detect_kind(data)
        model = ROOT_MODELS[kind]
        try:
            model.model_validate(data)
        except ValidationError as exc:
            return validation_errors(exc, model, prov, path)
        if kind != "experiment":
            return []
        return _check_points(path, (), collect=True)
    except InputError as exc:
        return [exc]


def _check_points(path: str, overrides, collect: bool = False) -> List[InputError]:
    """Check every point of an experiment (:func:`t3sim.exec.checks.check_experiment`); raise the first
    error, or return them all with ``collect``."""
    from t3sim.exec.checks import check_experiment  # lazy: the simulator loads when a command runs (fast --help)

    points = expand(path, overrides)
    errors = []
    for p in points:
        try:
            check_experiment(p.config, f"{path}: point {p.label}" if len(points) > 1 else path)
        except InputError as exc:
            if not collect:
                raise
            errors.append(exc)
    return errors
