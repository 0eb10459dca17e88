#!/usr/bin/env python3
"""Tests of kernel_resources.py's readers on reports shaped like the compilers' (run by ctest:
scripts_kernel_resources)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_resources  # noqa: E402
import sass_budget  # noqa: E402

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


# PTX of one kernel, as nvcc 13 prints it: a 16-byte vector load and store, a predicated
# 8-byte pair store, four 4-byte stores (what nvcc had made of a 16-byte store), 16-, 8- and
# 4-byte asynchronous copies, and 8- and 4-byte loads.
PTX_LISTING = """\
.visible .entry _Z6vectorv(
)
{
	ld.global.v4.u32 	{%r1, %r2, %r3, %r4}, [%rd1];
	st.global.v4.b32 [%rd2], {%r1, %r2, %r3, %r4};
	@%p1 st.global.v2.b32 [%rd3], {%r1, %r2};
	st.global.u32 	[%rd4], %r1;
	st.global.u32 	[%rd4+4], %r2;
	st.global.u32 	[%rd4+8], %r3;
	st.global.u32 	[%rd4+12], %r4;
	cp.async.cg.shared.global [%r5], [%rd5], 16, %r6;
	cp.async.ca.shared.global [%r7], [%rd6], 8, ignore;
	cp.async.ca.shared.global [%r8], [%rd7], 4, ignore;
	ld.global.v2.u32 	{%r9, %r10}, [%rd8];
	ld.global.u32 	%r11, [%rd8];
	ret;
}
"""


class PtxCounts(unittest.TestCase):
    def test_vector_loads_and_stores_are_counted_and_narrow_ones_are_not(self):
        counts = kernel_resources.ptx_counts(PTX_LISTING)["_Z6vectorv"]
        self.assertEqual(counts["load128"], 2)   # ld.global.v4 and the 16-byte cp.async
        self.assertEqual(counts["store128"], 1)  # st.global.v4 only: v2 of 32-bit words is 8 bytes
        self.assertEqual(counts["load64"], 2)    # the 8-byte cp.async and load, not the 4- or 16-byte ones

# nvdisasm -c, shaped as it prints a kernel: a prologue, then a main loop of two asynchronous
# 16-byte copies of a 4-stage pipeline (the wait leaves the 2 newest stages' copies in flight),
# the products, and a cold path inside the loop that the cheapest iteration skips.
PIPELINE_LISTING = """\
.text._Z8pipelinev:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   DEPBAR.LE SB0, 0x2 ;
        /*0020*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0030*/              @P0  BRA `(.L_x_2) ;
        /*0040*/                   IADD3 R4, P1, R4, 0x40, RZ ;
        /*0050*/                   LDGSTS.E.BYPASS.128 [R6], desc[UR4][R4.64], P2 ;
        /*0060*/                   LDGSTS.E.BYPASS.128 [R6+0x2000], desc[UR4][R8.64], P3 ;
.L_x_2:
        /*0070*/                   LDGDEPBAR ;
        /*0080*/                   LDSM.16.M88.4 R12, [R10] ;
        /*0090*/                   HMMA.16816.F32 R16, R12, R14, R16 ;
        /*00a0*/              @P4  BRA `(.L_x_3) ;
        /*00b0*/                   IMAD R20, R20, R21, RZ ;
        /*00c0*/                   IMAD R20, R20, R21, RZ ;
        /*00d0*/                   IMAD R20, R20, R21, RZ ;
.L_x_3:
        /*00e0*/                   ISETP.GE.AND P5, PT, R2, R3, PT ;
        /*00f0*/              @!P5 BRA `(.L_x_1) ;
        /*0100*/                   EXIT ;
"""

# A shared-memory loop (LDS, FFMA, STS; a cold IMAD) inside a global-loading one.
NESTED_LISTING = """\
.text._Z6nestedv:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDG.E R2, desc[UR4][R4.64] ;
.L_x_2:
        /*0020*/                   LDS R6, [R8] ;
        /*0030*/                   FFMA R7, R6, R6, R7 ;
        /*0040*/              @P1  BRA `(.L_x_3) ;
        /*0050*/                   IMAD R9, R9, R9, RZ ;
.L_x_3:
        /*0060*/                   STS [R8], R7 ;
        /*0070*/              @!P2 BRA `(.L_x_2) ;
        /*0080*/                   IADD3 R4, R4, 0x4, RZ ;
        /*0090*/              @!P3 BRA `(.L_x_1) ;
        /*00a0*/                   EXIT ;
"""


class SassBudget(unittest.TestCase):
    def test_pipelined_copies_are_counted_for_every_stage_in_flight(self):
        code = sass_budget.parse_listing(PIPELINE_LISTING)["_Z8pipelinev"]
        need = {"copies": (sass_budget.is_op("LDGSTS"), 2), "products": (sass_budget.is_op("HMMA"), 1)}
        instructions, per_byte, in_flight, ops, path = sass_budget.budget(code, need, 32.0)
        # The loop without its cold path (3 IMAD): 12 instructions, over 32 DRAM bytes.
        self.assertEqual(instructions, 12)
        self.assertAlmostEqual(per_byte, 12 / 32.0)
        self.assertEqual(ops["IMAD"], 0)
        # 32 bytes copied a stage, 3 stages outstanding at the wait.
        self.assertEqual(in_flight, 96)
        # The path listed (--path): the counted instructions, a line each, in the order they run.
        lines = sass_budget.listing_of(code, path)
        self.assertEqual(len(lines), 12)
        self.assertEqual(sum(" LDGSTS" in line for line in lines), 2)
        self.assertFalse(any(" IMAD" in line for line in lines))
        addresses = [int(line.split()[0], 16) for line in lines]
        self.assertEqual(addresses, sorted(addresses))

    def test_an_iteration_of_two_stages_keeps_the_same_stages_in_flight(self):
        # The loop body twice over (two stages an iteration, as the GEMM's groups of whole steps
        # run): 64 bytes copied an iteration, still 32 a stage and 3 stages at the wait.
        body = PIPELINE_LISTING.split(".L_x_1:\n")[1].split("        /*00e0*/")[0]
        twice = body.replace(".L_x_2", ".L_x_4").replace(".L_x_3", ".L_x_5").replace("/*00", "/*01")
        listing = PIPELINE_LISTING.replace("        /*00e0*/", twice + "        /*00e0*/")
        code = sass_budget.parse_listing(listing)["_Z8pipelinev"]
        need = {"copies": (sass_budget.is_op("LDGSTS"), 4), "products": (sass_budget.is_op("HMMA"), 2)}
        instructions, per_byte, in_flight, ops, _ = sass_budget.budget(code, need, 64.0)
        self.assertEqual(instructions, 22)
        self.assertEqual(in_flight, 96)

    def test_a_loop_without_the_modelled_copies_has_no_path(self):
        code = sass_budget.parse_listing(PIPELINE_LISTING)["_Z8pipelinev"]
        self.assertIsNone(sass_budget.budget(code, {"copies": (sass_budget.is_op("LDGSTS"), 3)}, 32.0))

    def test_matrix_unit_model_follows_the_stage_width(self):
        # A group of four K stages (the main loop's iteration over whole steps).
        need, dram, what = sass_budget.mma_model("half", 64, 64, 2, 2)
        self.assertEqual(need["16-byte copies"][1], 4 * 4)  # (64 + 64) rows x 64 bytes / 16 / 128 threads
        self.assertEqual(need["products"][1], 4 * 16)       # 2 x 4 tiles of a warp, two 32-byte steps
        self.assertEqual(dram, 4 * 32)
        need, dram, what = sass_budget.mma_model("float", 128, 128, 2, 4)
        self.assertEqual(need["16-byte copies"][1], 4 * 2)  # 32-byte stages: 3 of 64 bytes would exceed 48 KiB
        self.assertEqual(need["products"][1], 4 * 48)       # 4 x 4 tiles, three products each (3xTF32)
        self.assertEqual(dram, 4 * 16)

    def test_a_shared_memory_loop_is_the_narrowest_loop_that_does_the_work(self):
        code = sass_budget.parse_listing(NESTED_LISTING)["_Z6nestedv"]
        need = {"reads": (sass_budget.is_op("LDS"), 1), "products": (sass_budget.is_op("FFMA"), 1),
                "stores": (sass_budget.is_op("STS"), 1)}
        # The inner loop without its cold IMAD: LDS, FFMA, BRA, STS, BRA; no global loads in flight.
        instructions, per_byte, in_flight, ops, _ = sass_budget.budget(code, need, 10.0, shared_loop=True)
        self.assertEqual((instructions, in_flight, ops["IMAD"]), (5, 0, 0))
        self.assertAlmostEqual(per_byte, 0.5)
        # A main-loop model takes the outer, global-loading loop: the inner one once, and its own 3.
        self.assertEqual(sass_budget.budget(code, need, 10.0)[0], 8)

    def test_fused_strip_models_count_each_form(self):
        models = {what: (need, dram) for need, dram, what, _ in sass_budget.fused_strip_models("half", True)}
        need, dram = models["step 3: a strip of 7 outputs, 3x3 s1"]
        self.assertEqual(need["window and tap reads"][1], 3 * (9 + 3))  # 3 rows of 9 window values and 3 taps
        self.assertEqual(need["products"][1], 63)
        self.assertEqual(dram, 7 * 2 * 2 * 2)  # the expanded value and the depthwise output, each written and read
        need, dram = models["step 3: a strip of 7 outputs, 5x5 s2"]
        self.assertEqual(need["window and tap reads"][1], 5 * (17 + 5))
        self.assertEqual(dram, 7 * 2 * 2 * 5)  # 4 expanded values an output at stride 2
        need, _ = dict((w, (n, d)) for n, d, w, _ in sass_budget.fused_strip_models("float", False))[
            "step 3: a strip of 7 outputs, 3x3 s1"]
        self.assertTrue(need["stores"][0](sass_budget.Instruction(0, None, "STG.E", "")))  # (not projecting: to global memory)
        need, dram, what, shared_loop = sass_budget.fused_expand_model("half")
        self.assertEqual((need["products"][1], need["stores"][1], dram, shared_loop), (2, 4, 32, True))
        self.assertFalse(need["stores"][0](sass_budget.Instruction(0, None, "STS", "")))  # (8-byte stores, not split)

    def test_stream_forms_follow_the_plan(self):
        # (c_in, c_out) -> (held, blocks a slice, chunks, slices a block, grid rows), as
        # dispatch/pointwise_stream_plan.hpp plans them (tests/test_pointwise.cpp checks the plan
        # on the same layers).
        cases = {(40, 32): (True, 4, 2, 1, 1), (24, 96): (True, 4, 1, 3, 1), (64, 1024): (True, 4, 2, 8, 4),
                 (16, 16): (True, 2, 1, 1, 1), (24, 48): (True, 3, 1, 2, 1), (32, 8): (True, 1, 1, 1, 1), (72, 48): (True, 3, 3, 2, 1), (112, 64): (True, 4, 4, 2, 1),
                 (96, 40): (True, 1, 3, 5, 1), (160, 24): (False, 3, 5, 1, 1), (200, 40): (False, 1, 7, 1, 5),
                 (136, 64): (False, 4, 5, 1, 2), (1152, 192): (False, 2, 36, 1, 12)}
        for layer, form in cases.items():
            self.assertEqual(sass_budget.stream_form(*layer), form, layer)
        # Each model takes only the layers of its own form, width and chunks.
        self.assertIsNone(sass_budget.stream_model("half", 4)(40, 32))
        self.assertIsNone(sass_budget.stream_held_model("half", 4, 4)(40, 32))
        self.assertIsNotNone(sass_budget.stream_held_model("half", 4, 2)(40, 32))
        need = sass_budget.stream_held_model("half", 4, 2)(64, 1024)
        self.assertEqual((need["16-byte loads"][1], need["stores"][1], need["relu"][1]), (8, 32, 128))

    def test_small_map_models_read_each_input_once_and_only_the_used_taps(self):
        # 16-bit 5x5 on 2x2 maps: 8 channels a thread, the 9 taps within one of the centre.
        nhwc, nchw = sass_budget.small_map_models("half", 5, 1, 2, sass_budget.SCALE)
        need, dram, what, _ = nhwc
        self.assertEqual(need["vector loads"][1], 2 * 4)     # 4 pixels of dz and of the saved tensor
        self.assertEqual(need["weight reads"][1], 9 * 8 // 4)
        self.assertEqual(need["scale products"][1], 4 * 8 // 2)  # (16-bit pairs packed)
        self.assertEqual(dram, 8 * 2 * (4 + 2 * 4))
        self.assertEqual(nchw[0]["vector loads"][1], 2 * 4)  # 8 planes of 4 elements, 64 bytes, each tensor
        # Stride 2 onto 1x1 from 2x2 inputs: the output's 4 taps of a 3x3 filter, 2 of a 5x5's side.
        need, dram, _, _ = sass_budget.small_map_models("float", 3, 2, 1)[0]
        self.assertEqual((need["vector loads"][1], need["weight reads"][1], dram), (4, 4, 4 * 4 * (1 + 4)))
        self.assertEqual(sass_budget.small_map_vector(2, 1, 4), 2)  # 4x4 maps: (16 + 16) x 2 floats
        # Stride 2 onto 4x4 maps: the 8x8 box held in words beside the 16 accumulators, at most 96
        # registers: float 1 channel (64 + 16), 16-bit 2 (64 words + 32).
        self.assertEqual((sass_budget.small_map_vector(4, 2, 4), sass_budget.small_map_vector(2, 2, 4)), (1, 2))
        need, dram, what, _ = sass_budget.small_map_models("float", 3, 2, 4)[0]
        self.assertEqual((need["vector loads"][1], need["vector stores"][1], dram), (64, 16, 4 * (16 + 64)))
        self.assertIn("x 1 channels", what)
        # The float NHWC data gradient through a gate: 3 rows of 4 outputs x 2 channels, 6 pixels'
        # 8-byte vectors of grad_output and of the saved tensor a row, 4 stores a row.
        need, dram, what, _ = sass_budget.register_column_model(3, sass_budget.SCALE, 2)[0]
        self.assertEqual((need["loads"][1], need["stores"][1], need["scale products"][1], dram),
                         (2 * 6 * 3, 4 * 3, 6 * 3 * 2 // 2, 3 * 4 * 2 * 4 * 3))
        self.assertEqual((need["loads"][0](sass_budget.Instruction(0, None, "LDG.E.64", "")),
                          need["loads"][0](sass_budget.Instruction(0, None, "LDG.E", ""))), (True, False))

    def test_register_model_takes_two_float_channels_at_stride_2(self):
        # Float 3x3 strips at stride 2: 4 outputs x 2 channels (8-byte vectors), 3 rows of (4 - 1)
        # x 2 + 3 pixels; 16-bit ones 4 channels (8 bytes); float at stride 1 4 (16).
        need, dram, what = sass_budget.register_model("float", 3, 2)
        self.assertEqual((need["vector loads"][1], need["vector stores"][1], need["weight reads"][1]), (3 * 9, 4, 9 * 2 // 4))
        self.assertTrue(need["vector loads"][0](sass_budget.Instruction(0, None, "LDG.E.64.CONSTANT", "")))
        self.assertEqual(dram, 4 * 2 * 4 * (4 + 1))
        self.assertIn("x 2 channels", what)
        self.assertIn("x 4 channels", sass_budget.register_model("float", 3, 1)[2])
        self.assertIn("x 4 channels", sass_budget.register_model("half", 5, 2)[2])
        # Float 5x5 at stride 2: strips of 3 outputs x 2 channels, 5 rows of (3 - 1) x 2 + 5 pixels.
        need, dram, what = sass_budget.register_model("float", 5, 2)
        self.assertEqual((need["vector loads"][1], need["vector stores"][1], dram), (5 * 9, 3, 3 * 2 * 4 * (4 + 1)))
        self.assertIn("3 outputs x 2 channels", what)

    def test_nchw_matrix_model_copies_the_forward_and_loads_the_gradient(self):
        # The forward's ring: two 8-byte copies a 16-byte item and a 4-byte copy a halo word, two
        # images at stride 1 (5x5: 20 rows x 2 items, 2 halo words a row: 2 and 2 a lane); the
        # halo words read back and cleared where a column lies outside the filter's reach (3x3,
        # and stride 2's right word).
        need, dram, _, _ = sass_budget.nchw_matrix_model("half", 5, 1)[0]
        self.assertEqual((need["vector copies"][1], need["halo copies"][1], dram), (2 * 2 * 2, 2 * 2, 2 * 16 * 2))
        self.assertNotIn("halo words cleared", need)
        self.assertFalse(need["halo copies"][0](sass_budget.Instruction(0, None, "LDGSTS.E.64", "")))
        need, _, _, _ = sass_budget.nchw_matrix_model("half", 5, 2)[0]
        self.assertEqual((need["vector copies"][1], need["halo copies"][1], need["halo words cleared"][1]), (5 * 2, 3, 3))
        self.assertEqual(sass_budget.nchw_matrix_model("half", 3, 1)[0][0]["halo words cleared"][1], 2 * 2)
        # The gated data gradient: both tensors' loads, gated into shared memory.
        need, dram, _, _ = sass_budget.nchw_matrix_model("half", 5, 1, sass_budget.SCALE)[0]
        self.assertEqual((need["vector loads"][1], need["halo loads"][1], need["staging stores"][1]), (8, 8, 2 * (4 + 2)))
        self.assertEqual(dram, 2 * 16 * 3)


class BudgetTable(unittest.TestCase):
    class Search:
        def __init__(self, rows):
            self.rows = rows

        def result(self):
            return self.rows

    def test_kernels_the_layers_launch_are_the_ones_held_to_the_aim(self):
        ops = {"LDG": 0, "FFMA": 0, "HADD2": 0, "F2FP": 0, "PRMT": 0}
        launched_name = "depthwise_small_map<dsconv::half, 5, 1, 4, (dsconv::detail::gate_kind)2>"
        idle_name = "depthwise_nhwc_register<dsconv::half, 5, 1, (dsconv::detail::gate_kind)2>"
        searches = [self.Search([(launched_name, "a map", (500, 5.0, 64, ops)), (idle_name, "a strip", (900, 9.0, 64, ops))])]
        rows = [{"kernel": launched_name.replace("dsconv::", ""), "target": "sm_90", "registers": "128"}]
        # (the planner's listing names the enumerator where c++filt casts its value)
        launched = kernel_resources.collections.Counter(
            {kernel_resources.launch_key("depthwise_small_map<half, 5, 1, 4, detail::gate_kind::scale>"): 3})
        text = kernel_resources.sass_budget_lines(rows, searches, launched)
        self.assertIn("| 512 | 32 KiB | 3 |", text)   # (128 registers: two blocks of 256 threads)
        self.assertIn("| 9.00 | 64 | 1024 | 64 KiB | 0 |", text)
        self.assertIn("1 of the iterations above the aim", text)
        self.assertIn("depthwise_small_map", text.split("above the aim")[1])
        self.assertNotIn("nhwc_register", text.split("above the aim")[1])
        # Without the planner's launches, no count and no such line.
        self.assertNotIn("above the aim", kernel_resources.sass_budget_lines(rows, searches))


class InFlightAsLaunched(unittest.TestCase):
    """Bytes in flight per multiprocessor of each launch as the planner makes it."""

    HEADER = ("device,warp_size,multiprocessors,max_threads_per_multiprocessor,registers_per_multiprocessor,"
              "shared_per_multiprocessor,shared_reserved_per_block,layer,kind,pass,type,layout,batch,kernel,grid_blocks,"
              "block_threads,dynamic_shared_bytes,read_bytes\n")

    def launch(self, layout, batch, grid, read, kernel="depthwise_small_map<half, 5, 1, 4, detail::gate_kind::none>"):
        return (f"sm90,32,132,2048,65536,233472,1024,net/32/1:depthwise,dw,forward,half,{layout},{batch},"
                f"\"kernels::{kernel}\",{grid},256,0,{read}\n")

    def test_a_small_grid_is_credited_with_its_own_threads_and_a_small_layer_needs_only_its_bytes(self):
        name = "depthwise_small_map<dsconv::half, 5, 1, 4, (dsconv::detail::gate_kind)0>"
        ops = {"LDG": 0}
        searches = [BudgetTable.Search([(name, "NHWC: a map", (500, 4.0, 64, ops)),
                                                 (name, "NCHW: a map", (500, 4.0, 32, ops))])]
        rows = [{"kernel": name.replace("dsconv::", ""), "target": "sm_90", "registers": "128"}]  # 512 resident
        listing = self.HEADER + "".join([
            # a full grid: 512 resident threads x 64 bytes = 32 KiB against 48: short
            self.launch("nhwc", 128, 132 * 8, 10 ** 9),
            # a grid of 132 blocks, 256 threads on each multiprocessor, each with all of its 64
            # bytes: 16 KiB, all that 132 x 16 KiB of reads can have in flight: met
            self.launch("nhwc", 8, 132, 132 * 16 * 1024),
            # the same grid, NCHW (32 bytes a thread): 8 KiB of 16: short
            self.launch("nchw", 8, 132, 132 * 16 * 1024),
            # a data-gradient launch of another kernel without a model: not counted
            self.launch("nhwc", 8, 132, 1, kernel="depthwise_nhwc_register<half, 3, 1, detail::gate_kind::none>")])
        text, short = kernel_resources.in_flight_as_launched(rows, searches, listing)
        self.assertEqual(short, 2)
        self.assertIn("| depthwise_small_map | 3 | 2 | net/32/1:depthwise forward half nchw batch 8 | 32 | 256 | "
                      "8.0 KiB | 16.0 KiB |", text)
        self.assertIn("2 of 3 launches short", text)
        self.assertEqual(kernel_resources.in_flight_as_launched(rows, searches, None), ("", 0))

    def test_a_pass_of_several_launches_holds_each_to_its_share_of_the_bytes(self):
        name = "depthwise_small_map<dsconv::half, 5, 1, 4, (dsconv::detail::gate_kind)0>"
        searches = [BudgetTable.Search([(name, "NHWC: a map", (500, 4.0, 64, {"LDG": 0}))])]
        rows = [{"kernel": name.replace("dsconv::", ""), "target": "sm_90", "registers": "128"}]
        # one pass (the same layer, pass, type, layout, batch) of a main launch of 3 x 132 blocks
        # and a tail of 132, the pass's 132 x 64 KiB read: the main launch 512 threads x 64 bytes =
        # 32 KiB against 48 (short), the tail 256 x 64 = 16 KiB against its quarter, 16 KiB (met)
        listing = self.HEADER + self.launch("nhwc", 8, 3 * 132, 132 * 64 * 1024) + self.launch("nhwc", 8, 132, 132 * 64 * 1024)
        text, short = kernel_resources.in_flight_as_launched(rows, searches, listing)
        self.assertEqual(short, 1)
        self.assertIn("| depthwise_small_map | 2 | 1 | net/32/1:depthwise forward half nhwc batch 8 | 64 | 512 | "
                      "32.0 KiB | 48.0 KiB |", text)


class ArchitectureBranches(unittest.TestCase):
    """Which element types need sm_90's SASS from a compute_90 PTX of their own (the kept
    compute_80 PTX would show sm_90 their sm_80 code)."""

    def test_thresholds_that_split_sm_80_from_sm_90_are_found_and_others_are_not(self):
        branches = kernel_resources.arch_branch_types
        self.assertEqual(branches("return nvidia_arch_for<T, 530, 900>();"), {"bfloat16"})
        self.assertEqual(branches("return nvidia_arch_for<T, 860, 800>();"), {"half"})
        self.assertEqual(branches("return nvidia_arch_for<T, 530, 800>();"), set())
        self.assertEqual(branches("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800"), set())
        self.assertEqual(branches("#if __CUDA_ARCH__ < 750"), set())
        self.assertEqual(branches("#if __CUDA_ARCH__ >= 900"), {"float", "half", "bfloat16"})
        self.assertEqual(branches("#if __CUDA_ARCH__ > 800"), {"float", "half", "bfloat16"})
        # (the threshold's definition names no number)
        self.assertEqual(branches("__CUDA_ARCH__ >= HalfArch : __CUDA_ARCH__ >= Bf16Arch"), set())

    def test_the_library_branches_past_sm_80_for_bfloat16_alone(self):
        # packed_gate: bfloat16's packed clamp gate needs sm_90; every other branch is at 800 or below.
        self.assertEqual(kernel_resources.OWN_SM90_TYPES, ("bfloat16",))
        self.assertEqual(kernel_resources.sm80_sm90("bfloat16"), ("sm_80",))
        self.assertEqual(kernel_resources.sm80_sm90("half"), ("sm_80", "sm_90"))


if __name__ == "__main__":
    unittest.main()
