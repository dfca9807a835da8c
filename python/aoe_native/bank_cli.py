"""The ``aoe-bank`` command: inspect and merge knowledge banks.

    aoe-bank merge SRC_DIR... -o DST_DIR     # same SoC only; the faster entry of a key wins
    aoe-bank show  [BANK_DIR | --soc_version S [--bank ROOT]] [--op OP]
    aoe-bank stats [BANK_DIR | --soc_version S [--bank ROOT]]

A bank directory holds one SoC's files (e.g. $TUNE_BANK_PATH/Ascend910B3).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from .bank import Bank, BankError, bank_dir, merge_banks

__all__ = ["main"]


def _open(args) -> Bank:
    if args.bank_dir:
        if not os.path.isdir(args.bank_dir):
            raise BankError(f"{args.bank_dir}: not a bank directory")
        return Bank(args.bank_dir).load()
    if not args.soc_version:
        raise ValueError("give a bank directory or --soc_version")
    return Bank(bank_dir(args.soc_version, args.bank), args.soc_version).load()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="aoe-bank", description="Inspect and merge aoe-native knowledge banks.")
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("merge", help="merge banks of one SoC into DST")
    m.add_argument("sources", nargs="+", metavar="SRC")
    m.add_argument("-o", "--output", required=True, metavar="DST")
    for name in ("show", "stats"):
        p = sub.add_parser(name, help=f"{name} a bank")
        p.add_argument("bank_dir", nargs="?", help="bank directory (one SoC)")
        p.add_argument("--soc_version", help="use the configured bank of this SoC")
        p.add_argument("--bank", help="bank root (as aoe --bank)")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "show":
            p.add_argument("--op", help="only entries of this op type")
    args = ap.parse_args(argv)
    try:
        if args.command == "merge":
            c = merge_banks(args.sources, args.output)
            print(f"merged {c['source_entries']} entries from {c['sources']} bank(s) into {args.output}: "
                  f"{c['stored']} stored, {c['new_keys']} new keys, {c['entries']} entries now")
            return 0
        b = _open(args)
        if args.command == "stats":
            st = b.stats()
            if args.json:
                print(json.dumps(st, indent=1, sort_keys=True))
            else:
                print(f"bank {st['directory']} (SoC {st['soc_version']}): {st['entries']} entries")
                for op, v in st["op_types"].items():
                    print(f"  {op:<20} {v['entries']:>6} entries  mean improvement {v['mean_improvement'] * 100:.2f}%")
            return 0
        rows = sorted((k, e) for k, e in b.entries.items() if not args.op or e["op_type"] == args.op)
        if args.json:
            print(json.dumps(dict(rows), indent=1, sort_keys=True))
        else:
            print(f"bank {b.directory} (SoC {b.soc_version}): {len(rows)} entries")
            for k, e in rows:
                tiling = " ".join(f"{n}={v}" for n, v in sorted(e["tiling"].items()))
                print(f"{k}\n    {e['time_before_us']:.3f} us -> {e['time_after_us']:.3f} us  [{tiling}]  "
                      f"v{e['tool_version']} {e['date']}")
        return 0
    except (BankError, ValueError, OSError) as e:
        print(f"aoe-bank: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
