"""``aoe-bank cann-import`` and ``aoe-bank cann-export`` (called from :func:`aoe_native.cli.bank_main`)."""
from __future__ import annotations

import argparse
import sys
from collections import Counter

from .api import export_bank, import_files

__all__ = ["COMMANDS", "add_parsers", "run"]

COMMANDS = ("cann-import", "cann-export")


def add_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the two subcommands to ``aoe-bank``'s subparsers."""
    i = sub.add_parser("cann-import", help="read CANN MatMulV3 bank files (built-in or custom) into a bank")
    i.add_argument("files", nargs="+", metavar="FILE", help="<soc>_<cores>_AiCore_MatMulV3_runtime_kb.json")
    i.add_argument("--bank", help="bank root (as aoe --bank)")
    i.add_argument("--soc_version", help="the files' SoC, when their names do not say it")
    i.add_argument("--core_num", type=int, help="the files' cube core count, when their names do not say it")
    e = sub.add_parser("cann-export", help="write a bank's MatMul entries as CANN's MatMulV3 bank file")
    e.add_argument("--bank", help="bank root (as aoe --bank)")
    e.add_argument("--soc", "--soc_version", dest="soc", required=True, help="SoC, e.g. Ascend910B2")
    e.add_argument("--core_num", type=int, help="cube cores in the file name (default: the SoC's)")
    e.add_argument("--output", metavar="DIR", help="directory of the file (default ROOT/<soc>/unified_bank, "
                   "where CANN reads it with TUNE_BANK_PATH=ROOT)")


def run(args: argparse.Namespace, bank_root: str | None) -> int:
    """Run one subcommand; `bank_root` is the resolved bank root. 1 if lines were skipped."""
    if args.command == "cann-import":
        r = import_files(args.files, bank_root, args.soc_version, args.core_num)
        for p in r.problems:
            print(f"aoe-bank: skipped {p}", file=sys.stderr)
        print(f"read {r.records} records from {len(r.files)} file(s): {r.tilings} stored as tilings, "
              f"{len(r.verbatim)} kept verbatim (not expressible by the cost model), {r.kept_faster} kept the "
              f"bank's entry, {len(r.problems)} line(s) skipped")
        for reason, n in sorted(Counter(e.reason for e in r.verbatim).items(), key=lambda x: (-x[1], str(x[0]))):
            print(f"  verbatim x{n}: {reason}")
        return 1 if r.problems else 0
    path, written, left_out = export_bank(bank_root, args.soc, args.output, args.core_num)
    if path is None:
        print(f"no MatMul entries for {args.soc} that MatMulV3 runs ({left_out} left out); nothing written")
    else:
        print(f"wrote {written} records to {path} ({left_out} entries left out: MatMulV3 cannot run them)")
    return 0
