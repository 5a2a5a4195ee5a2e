"""``t3sim config show|check``."""

from __future__ import annotations

import argparse
import sys

import yaml

from t3sim.config import load_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="show or check config files")
    csub = p.add_subparsers(dest="config_command", metavar="SUBCOMMAND", parser_class=type(p))
    csub.required = True

    show = csub.add_parser("show", help="print the resolved config (bases merged, overrides applied, defaults filled) as YAML")
    show.add_argument("config", help="YAML config file (experiment, system or model)")
    show.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                      help="override one field, e.g. --set system.interconnect.num_gpus=16 (repeatable)")
    show.set_defaults(func=_show)

    check = csub.add_parser("check", help="validate config files; exit 2 at the first bad one")
    check.add_argument("files", nargs="+", help="YAML config files")
    check.set_defaults(func=_check)


def resolved_yaml(model) -> str:
    """The resolved config as YAML (the form saved beside every result)."""
    return yaml.safe_dump(model.model_dump(mode="json"), sort_keys=False, default_flow_style=False)


def _show(args: argparse.Namespace) -> int:
    kind, model = load_config(args.config, args.overrides)
    sys.stdout.write(f"# {kind}: {args.config} (resolved)\n")
    sys.stdout.write(resolved_yaml(model))
    return 0


def _check(args: argparse.Namespace) -> int:
    for f in args.files:
        kind, _ = load_config(f)
        print(f"ok  {kind:<10} {f}")
    return 0
