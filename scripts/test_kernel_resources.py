#!/usr/bin/env python3
"""Tests of kernel_resources.py's readers on reports shaped like the compilers' (run by ctest:
scripts_kernel_resources)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_resources  # noqa: E402

# ptxas -v, as CUDA 13's prints it: an entry's spills in its own "Function properties", then
# those of a device function compiled apart, with none, before the next entry.
PTXAS_REPORT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z7spillerv' for 'sm_80'
ptxas info    : Function properties for _Z7spillerv
    24 bytes stack frame, 20 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 24 bytes cumulative stack size, 544 bytes cmem[0]
ptxas info    : Compile time = 115.253 ms
ptxas info    : Function properties for _Z6helperf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z5cleanv' for 'sm_80'
ptxas info    : Function properties for _Z5cleanv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 16384 bytes smem, 384 bytes cmem[0]
ptxas info    : Function properties for _Z6helperf
    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
"""


class PtxasReport(unittest.TestCase):
    def test_spills_belong_to_the_function_they_are_reported_for(self):
        rows = {r["mangled"]: r for r in kernel_resources.ptxas_rows(PTXAS_REPORT)}
        self.assertEqual(sorted(rows), ["_Z5cleanv", "_Z7spillerv"])
        # The device function's 0 bytes after it must not hide the entry's spills ...
        self.assertEqual(rows["_Z7spillerv"]["spill"], 44)
        # ... nor its 16 bytes count as the entry before it.
        self.assertEqual(rows["_Z5cleanv"]["spill"], 0)

    def test_registers_shared_memory_and_target(self):
        rows = {r["mangled"]: r for r in kernel_resources.ptxas_rows(PTXAS_REPORT)}
        self.assertEqual(rows["_Z7spillerv"]["registers"], "64")
        self.assertEqual(rows["_Z5cleanv"]["registers"], "40")
        self.assertEqual(rows["_Z5cleanv"]["smem"], 16384)
        self.assertEqual(rows["_Z7spillerv"]["target"], "sm_80")


if __name__ == "__main__":
    unittest.main()
