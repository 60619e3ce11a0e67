"""``songlab campaign serve``: serve a saved listening campaign to raters who arrive.

    songlab campaign serve CAMPAIGN.json --clips DIR [--db URL] [--host H] [--port P]
        [--workers N] [--public-url URL] [--raters N] [--ratings N] [--timeout S]
        [--prolific-complete CODE] [--prolific-screened-out CODE]

``CAMPAIGN.json`` is what ``Campaign.save`` wrote; ``DIR`` holds one folder per model with one
audio file per prompt (name order). ``--db`` is ``sqlite:///PATH`` (default: a private file
beside the campaign file) or ``postgresql://...`` (several replicas may share it). Workers
default to the machine's cores (at most 4).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["campaign_main", "parser"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="songlab campaign", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve a saved campaign to raters who arrive")
    s.add_argument("campaign", type=Path, help="the campaign file (Campaign.save)")
    s.add_argument(
        "--clips", type=Path, required=True, help="one folder per model, a file per prompt"
    )
    s.add_argument("--db", help="sqlite:///PATH (default: beside the campaign) or postgresql://...")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=0, help="0 picks a free port")
    s.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    s.add_argument("--public-url", help="the address raters use (behind a proxy)")
    s.add_argument("--raters", type=int, help="raters wanted (finished and kept); then it closes")
    s.add_argument("--ratings", type=int, help="ratings wanted per clip; then it closes")
    s.add_argument(
        "--timeout", type=float, help="seconds without a sign of a page before its slot is freed"
    )
    s.add_argument("--prolific-complete", help="the study's completion code")
    s.add_argument("--prolific-screened-out", help="the code for a participant screened out")
    return p


def campaign_main(argv: list[str]) -> int:
    """Run ``songlab campaign ...``; the exit code."""
    from songlab.listening import ListeningError
    from songlab.listening.crowd.run import run

    args = parser().parse_args(argv)
    settings: dict[str, object] = {
        k: v
        for k, v in (("raters", args.raters), ("ratings", args.ratings), ("timeout", args.timeout))
        if v is not None
    }
    if args.prolific_complete:
        codes = {"complete": args.prolific_complete}
        if args.prolific_screened_out:
            codes["screened_out"] = args.prolific_screened_out
        settings["prolific"] = codes
    db = args.db or f"sqlite:///{args.campaign.resolve().with_suffix('.sqlite')}"
    if args.workers < 1:
        print("songlab campaign: --workers must be at least 1")
        return 2
    try:
        return run(
            args.campaign,
            args.clips,
            db=db,
            host=args.host,
            port=args.port,
            workers=args.workers,
            public_url=args.public_url,
            settings=settings,
        )
    except ListeningError as exc:
        print(f"songlab campaign: {exc}")
        return 2
