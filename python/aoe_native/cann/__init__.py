"""A knowledge bank CANN reads: MatMulV3's runtime-KB files (issue 47, part 3).

- :func:`read_bank` / :func:`write_bank`: CANN's JSON-Lines bank files as :class:`CannEntry`
  (our op, shapes, dtype, attributes and tiling, and the record as read); bad lines are reported
  with file and line and skipped; writes are checked, merged by key under a lock, atomic, 0640.
- :func:`store_tuned`: a tuned MatMul into ``<bank root>/<soc>/unified_bank/`` (where CANN reads
  with ``TUNE_BANK_PATH``); :func:`builtin_lookup`: CANN's built-in record of a task.
- :func:`import_files` / :func:`export_bank`: ``aoe-bank cann-import`` / ``cann-export``.
- :mod:`.keys`: the 183-byte key and CANN's hash.  See docs/cann_bank.md.
"""
from __future__ import annotations

from .api import (ImportReport, builtin_dir, builtin_lookup, entry_for_task, export_bank, import_files,
                  store_tuned)
from .bank_file import (FILE_MODE, BankRead, CannBankWarning, CannEntry, CannProblem, bank_file_name,
                        builtin_bank_path, custom_bank_path, parse_bank_file_name, read_bank, read_bank_report,
                        write_bank)
from .keys import cann_hash, key_hash, pack_key, unpack_key
from .task import task_info, task_of_info

__all__ = ["BankRead", "CannBankWarning", "CannEntry", "CannProblem", "FILE_MODE", "ImportReport", "bank_file_name",
           "builtin_bank_path", "builtin_dir", "builtin_lookup", "cann_hash", "custom_bank_path", "entry_for_task",
           "export_bank", "import_files", "key_hash", "pack_key", "parse_bank_file_name", "read_bank",
           "read_bank_report", "store_tuned", "task_info", "task_of_info", "unpack_key", "write_bank"]
