"""``t3sim params``: the reference of every configuration parameter."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from t3sim.config.params import render_markdown, render_text

DOC = Path("docs/parameters.md")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("params", help="list every parameter with type, default, unit, description and source")
    p.add_argument("--markdown", action="store_true", help="print the Markdown table (the content of docs/parameters.md)")
    p.add_argument("--write", action="store_true", help=f"(re)write {DOC}")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.write:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(render_markdown())
        print(f"wrote {DOC}")
        return 0
    sys.stdout.write(render_markdown() if args.markdown else render_text())
    return 0
