#!/usr/bin/env python3
"""Compiled resources of every dsconv kernel: registers, shared memory and spills per kernel
for CUDA (ptxas, sm_75, sm_80 and sm_90) and HIP (hipcc, gfx906 and gfx90a), the matrix-unit
instructions in each kernel (for CUDA mma.sync in the PTX and HMMA in the SASS, for HIP
v_mfma in the device assembly), its integer divisions by run-time values (PTX div/rem; HIP:
LLVM IR udiv/sdiv/urem/srem), in all and inside loops, and its 128-bit global loads (PTX
ld.global.v4 / .v2 of 64-bit, or cp.async of 16 bytes; HIP global_load_dwordx4) and stores
(st.global.v4 / .v2 of 64-bit; global_store_dwordx4).

Compiles tools/instantiate_kernels.cpp, which instantiates every kernel (one operation at a
time: OPERATIONS), with each compiler's resource report, prints one table and writes it to
results/kernel_resources.md.

With --plan-tool (the host build's bench/dsconv_plan_launches; found in build-ci/ or build/
when not given), sm_75 and sm_80 compile only the kernels their plans launch (PLANNED_ONLY),
and it also lists how each kernel is launched for every layer of both networks
(batches 1, 8, 32, 128; every type and layout; forward, backward data and backward weight) and
every block's forward (unfused and fused) on sm_75, sm_80, sm_90, gfx906 and gfx90a,
and from its registers, static and dynamic shared memory and threads the blocks and warps
that stay resident per multiprocessor (theoretical occupancy): a summary per kernel and
device in kernel_resources.md, every launch in occupancy.csv; and with the SASS budgets, each
sm_90 depthwise forward and data-gradient launch's bytes in flight per multiprocessor (those
short of their need are reported: in_flight.csv, in_flight_as_launched). The depthwise kernels' target
is 50 % occupancy or 4 resident blocks, where the grid has that many blocks per
multiprocessor (fused block launches below it are reported, not yet failed). Exits 1 when a depthwise tiled launch, forward or backward, is below that target, when
a kernel spills, when a matrix-unit kernel (pointwise_gemm_mma, and the fused block kernel
with a unit) has no HMMA instruction in its
SASS for a CUDA target (on sm_75: its half kernels; bf16 and tf32 need sm_80) or no MFMA
instruction for gfx90a, when another kernel has MFMA, when
a kernel's HMMA count differs from its mma.sync count (the SASS reader below would then be
wrong), when a kernel divides by a run-time value inside a loop, or when a kernel whose
vector form moves 16-byte runs has no 128-bit global load, or a matrix-unit GEMM kernel no
128-bit global store (its epilogue's runs of C); 2 when no compiler was found.
Usage: scripts/kernel_resources.py [--out DIR]
"""
import argparse
import collections
import concurrent.futures
import csv
import glob
import io
import operator
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import sass_budget

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "tools", "instantiate_kernels.cpp")
NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
PTXAS = os.path.join(os.path.dirname(NVCC), "ptxas")


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def short_name(demangled):
    """dsconv::kernels::depthwise_nchw_tiled<float, 3, 1>(...) -> depthwise_nchw_tiled<float, 3, 1>"""
    name = sass_budget.without_parameters(demangled)
    if name.startswith("void "):
        name = name[len("void "):]
    name = name.replace("dsconv::kernels::", "").replace("dsconv::", "")
    return name


def compile_listing(cmd):
    """Runs a compiler: (stdout, stderr), or exits with its errors."""
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(cmd[:2])} failed:\n{run.stderr}")
    return run.stdout, run.stderr


def kernel_bodies(listing, kernel_start, kernel_end):
    """Splits a compiler's text listing into kernels: {mangled name: lines}, a kernel's lines
    running from a kernel_start match (group 1: the name) to a kernel_end match (or the next
    kernel)."""
    bodies, current = {}, None
    for line in listing.splitlines():
        m = re.match(kernel_start, line)
        if m:
            current = bodies.setdefault(m.group(1), [])
        elif kernel_end and re.match(kernel_end, line):
            current = None
        elif current is not None:
            current.append(line)
    return bodies


def in_loops(lines, label, back_branch):
    """Indices of the lines inside a loop: from a label to a later branch back to it (a line
    matching back_branch, whose matches are its targets; of a conditional branch, the target
    nearest above is the loop's head, another one above may be the exit laid out earlier)."""
    labels, inside = {}, set()
    for i, line in enumerate(lines):
        m = re.match(label, line)
        if m:
            labels[m.group(1)] = i
        heads = [labels[t] for t in re.findall(back_branch, line) if t in labels]
        if heads:
            inside.update(range(max(heads), i + 1))
    return inside


def division_counts(body, division, label, back_branch):
    """(all, inside loops): integer divisions by run-time values in a kernel's lines."""
    loops = in_loops(body, label, back_branch)
    found = [i for i, line in enumerate(body) if re.search(division, line)]
    return len(found), sum(1 for i in found if i in loops)


# PTX: div / rem of 32- or 64-bit integers by a register (division by constants becomes
# multiplications before PTX); loads of 16 bytes (into registers, or into shared memory by
# cp.async); labels and branches.
PTX_DIVISION = r"^\s*(?:@!?%p\d+\s+)?(?:div|rem)\.[su](?:32|64)\s+%\w+,\s*%\w+,\s*%\w+;"
PTX_LOAD_128 = (r"^\s*(?:@!?%p\d+\s+)?(?:ld\.global(?:\.\w+)*\.(?:v4\.[bfsu]32|v2\.[bfsu]64)\s|"
                r"cp\.async\.c[ag]\.shared\.global\s+\[[^\]]+\],\s*\[[^\]]+\],\s*16\s*[,;])")
# Global reads of 8 bytes: loads, or asynchronous copies into shared memory (a 16-byte run
# that lies 8 bytes past a 16-byte slot moves as two: platform::async_copy_whole<8>, or on
# Turing its two 8-byte loads).
PTX_LOAD_64 = (r"^\s*(?:@!?%p\d+\s+)?(?:ld\.global(?:\.\w+)*\.(?:v2\.[bfsu]32|[bfsu]64)\s|"
               r"cp\.async\.ca\.shared\.global\s+\[[^\]]+\],\s*\[[^\]]+\],\s*8\s*[,;])")
# Global stores of 16 bytes (the PTX of platform::store_vec).
PTX_STORE_128 = r"^\s*(?:@!?%p\d+\s+)?st\.global(?:\.\w+)*\.(?:v4\.[bfsu]32|v2\.[bfsu]64)\s"
PTX_LABEL, PTX_BRANCH = r"^(\$L__BB\d+_\d+):", r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+)"


def ptx_counts(ptx):
    """Per kernel (mangled name) in a PTX listing: mma.sync, divisions (all, in loops),
    128-bit global loads and stores, and 8-byte global reads."""
    counts = {}
    for name, body in kernel_bodies(ptx, r".*\.entry\s+(\w+)", None).items():
        counts[name] = {"mma": sum("mma.sync" in line for line in body),
                        "division": division_counts(body, PTX_DIVISION, PTX_LABEL, PTX_BRANCH),
                        "load128": sum(bool(re.search(PTX_LOAD_128, line)) for line in body),
                        "store128": sum(bool(re.search(PTX_STORE_128, line)) for line in body),
                        "load64": sum(bool(re.search(PTX_LOAD_64, line)) for line in body)}
    return counts


# SASS opcode of HMMA (the tensor-core matrix multiply-accumulate) on sm_75 through sm_90:
# Volta and later encode every instruction in 16 bytes with the opcode in the low 12 bits (as
# the open-source Mesa NVIDIA compiler, NAK, encodes it). No disassembler is needed; the
# script checks the count against the PTX's mma.sync count, so a wrong opcode would show.
HMMA_OPCODE = 0x23C


def hmma_counts(cubin_path):
    """HMMA instructions per kernel (mangled name) in a cubin: the kernel's code is the ELF
    section .text.<name>."""
    data = open(cubin_path, "rb").read()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4]
    counts = {}
    for name_off, _, _, _, offset, size, *_ in sections:
        end = data.index(b"\0", names_at + name_off)
        name = data[names_at + name_off:end].decode()
        if not name.startswith(".text."):
            continue
        opcodes = collections.Counter(struct.unpack_from("<Q", data, offset + i)[0] & 0xFFF
                                      for i in range(0, size, 16))
        counts[name[len(".text."):]] = opcodes[HMMA_OPCODE]
    return counts


def ptxas_rows(report):
    """Per entry function in a ptxas -v report: {mangled, target, spill (bytes stored and
    loaded), registers, smem}. ptxas reports, per entry function: "Compiling entry function",
    "Function properties for" it (stack frame and spills), "Used N registers"; and between
    entries the "Function properties" of device functions it compiled apart, whose spills
    belong to those functions (read as the kernel's, they hid its spills)."""
    rows, current, properties_of = [], None, None
    for line in report.splitlines():
        m = re.search(r"Compiling entry function '(\w+)' for '(\w+)'", line)
        if m:
            current = {"mangled": m.group(1), "target": m.group(2), "spill": 0, "smem": 0}
            rows.append(current)
            continue
        if current is None:
            continue
        m = re.search(r"Function properties for (\w+)", line)
        if m:
            properties_of = m.group(1)
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and properties_of == current["mangled"]:
            current["spill"] = int(m.group(1)) + int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current["registers"] = m.group(1)
            s = re.search(r"(\d+) bytes smem", line)
            current["smem"] = int(s.group(1)) if s else 0
    return rows


# The sm_90 cubins, kept for the SASS budgets (scripts/sass_budget.py) until the script ends.
KEPT = tempfile.TemporaryDirectory()

# The source's shards (DSCONV_RESOURCE_OPERATION; on 9dafbb4, sm_90: pointwise 222 s, depthwise
# 192 s, the block's own kernels 10 s; AMD's 3-69 s): each target compiles each shard in a
# process of its own (sm_80 and sm_90 from one PTX: ptx_rows; or from a CUDA build's, kept_ptx),
# so that the cores stay busy until the last small one ends (the 15 builds
# took 708 s on 2 cores, 1412 s of compiling; 1081 and 2028 on 6bb1e79, before nhwc_matrix
# stopped compiling its walk 24 times over). (Searching the sm_90 budgets in each worker as
# its cubin was built, the largest builds first, took longer: 1283 s, the searches' Python
# holding the interpreter the other worker's parsing needs.) With the entry points
# of the other operations declared extern (DSCONV_EXTERN_TEMPLATES, as the host build's kernel
# sources do): the block's unfused path would otherwise instantiate every layer kernel again.
OPERATIONS = (("pointwise", 2), ("depthwise", 1), ("inverted_residual", 3))


def shard_flags(operation):
    return ["-DDSCONV_EXTERN_TEMPLATES=1", f"-DDSCONV_RESOURCE_OPERATION={dict(OPERATIONS)[operation]}"]


def ptx_rows(ptx_path, archs, name, planned=None):
    """The kernels' rows for the CUDA targets `archs` from one PTX (read for mma.sync, divisions
    and 128-bit loads): ptxas compiles it to a cubin for each (registers, shared memory and
    spills from its report, HMMA from the cubin; kept as kernels_<arch>_<name>.cubin), as nvcc
    itself would. sm_80 and sm_90 share compute_80's for float and half: their kernels branch on
    no architecture past 800, and nvcc's PTX for compute_90 differs from it in its .target line
    alone (the same sm_90 SASS, CUDA 13.0), where sm_90's own front end had been a sixth of the
    step. Not bfloat16's (OWN_SM90_TYPES).
    planned: {arch: launch keys} of the targets that compile only the kernels their plans
    launch (PLANNED_ONLY; ptxas --entry)."""
    with open(ptx_path) as f:
        text = f.read()
    ptx = ptx_counts(text)
    entries = re.findall(r"^\s*(?:\.\w+\s+)*\.entry\s+(\w+)", text, re.M)
    keys = dict(zip(entries, (launch_key(short_name(n)) for n in demangle(entries))))
    rows = []
    for arch in archs:
        cubin = os.path.join(KEPT.name, f"kernels_{arch}_{name}.cubin")
        only = []
        if planned is not None and arch in planned:
            chosen = [e for e in entries if keys[e] in planned[arch]]
            if not chosen:
                continue
            only = ["--entry", ",".join(chosen)]
        _, report = compile_listing([PTXAS, f"-arch={arch}", "-v", *only, ptx_path, "-o", cubin])
        hmma = hmma_counts(cubin)
        for r in ptxas_rows(report):
            r.update(ptx.get(r["mangled"], {"mma": 0, "division": (0, 0), "load128": 0, "store128": 0, "load64": 0}))
            r["hmma"] = hmma.get(r["mangled"], 0)
            rows.append(r)
    return rows


TYPES = (("float", 1), ("half", 2), ("bfloat16", 3))


def arch_branch_types(text):
    """The element types whose code in `text` (a header) compute_80 and compute_90 compile
    differently: an nvidia_arch_for<T, HalfArch, Bf16Arch> threshold that 800 and 900 fall on
    either side of (half's, bfloat16's), or any such __CUDA_ARCH__ comparison (every type's)."""
    compare = {">=": operator.ge, ">": operator.gt, "<": operator.lt, "<=": operator.le, "==": operator.eq}
    splits = lambda test, n: test(800, n) != test(900, n)
    types = set()
    for half_arch, bf16_arch in re.findall(r"nvidia_arch_for<\w+,\s*(\d+),\s*(\d+)>", text):
        types |= {t for t, n in (("half", half_arch), ("bfloat16", bf16_arch)) if splits(operator.ge, int(n))}
    for op, n in re.findall(r"__CUDA_ARCH__\s*(>=|>|<=|<|==)\s*(\d+)", text):
        if splits(compare[op], int(n)):
            types |= {t for t, _ in TYPES}
    return types


def own_sm90_types():
    """The element types whose kernels branch on an architecture past 800 (arch_branch_types, over
    the library's headers), so that sm_90's SASS comes from a compute_90 PTX of their own: on
    this source bfloat16, whose packed clamp gate needs sm_90 (platform/float16.hpp packed_gate;
    compute_80's widened one had counted nchw_register's bfloat16 3x3 clamp-gated band 791
    instructions, 4.12 a DRAM byte, where the sm_90 kernel has 577, 3.01)."""
    found = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "include")):
        for name in files:
            if name.endswith(".hpp"):
                with open(os.path.join(folder, name)) as f:
                    found |= arch_branch_types(f.read())
    return tuple(t for t, _ in TYPES if t in found)


OWN_SM90_TYPES = own_sm90_types()


def cuda_rows(archs, operation, planned=None, type_name=None):
    """The kernels' rows for CUDA targets that share a PTX (ptx_rows): nvcc compiles the
    source's shard (of one element type where `type_name` is given) to PTX once, for the first
    of `archs`."""
    only_type = [f"-DDSCONV_RESOURCE_TYPE={dict(TYPES)[type_name]}"] if type_name else []
    name = f"{operation}_{type_name}" if type_name else operation
    with tempfile.TemporaryDirectory() as tmp:
        ptx_path = os.path.join(tmp, "kernels.ptx")
        compile_listing([NVCC, "-std=c++17", "-x", "cu", f"-arch={archs[0]}", "-ptx", "-I", os.path.join(ROOT, "include"),
                         *shard_flags(operation), *only_type, SOURCE, "-o", ptx_path])
        return ptx_rows(ptx_path, archs, name, planned)


def sm80_sm90(type_name):
    """The targets that share compute_80's PTX of a type's kernels (ptx_rows)."""
    return ("sm_80",) if type_name in OWN_SM90_TYPES else ("sm_80", "sm_90")


def kept_ptx(folder):
    """The PTX a CUDA build kept of the library's kernel sources (CMake's
    DSCONV_CUDA_KEEP_PTX_DIR: <operation>_<type>.ptx, one per generated source), each for
    compute_80: {name: path}. Exits where one is missing or for another target."""
    kept = {}
    for operation, _ in OPERATIONS:
        for type_name in ("float", "half", "bfloat16"):
            path = os.path.join(folder, f"{operation}_{type_name}.ptx")
            if not os.path.exists(path):
                sys.exit(f"no {path}: build with -DDSCONV_CUDA_KEEP_PTX_DIR={folder} and CUDA architecture 80-virtual")
            with open(path) as f:
                head = f.read(4096)
            if not re.search(r"^\.target sm_80\b", head, re.M):
                sys.exit(f"{path} is not compute_80 PTX (.target sm_80)")
            kept[f"{operation}_{type_name}"] = path
    return kept


def hip_llvm_tools():
    """llc and llvm-dis beside the clang that hipcc runs (its -### listing names it)."""
    listing = subprocess.run(["hipcc", "-###", "-x", "hip", "--cuda-device-only", "-c", os.devnull, "-o", os.devnull],
                             capture_output=True, text=True).stderr
    m = re.search(r'^\s*"([^"]*/clang(?:-\d+)?)"', listing, re.M)
    tools = [os.path.join(os.path.dirname(m.group(1)), t) for t in ("llc", "llvm-dis")] if m else []
    if not tools or not all(os.path.exists(t) for t in tools):
        sys.exit("no llc and llvm-dis beside hipcc's clang (the llvm package hipcc depends on)")
    return tools


def hip_rows(arch, operation):
    """The kernels' rows for a HIP target: hipcc compiles the source to optimised LLVM bitcode
    once, read as IR for the divisions (the assembly expands each into a long sequence), and
    llc compiles that to device assembly with the resource remarks (registers, LDS, spills;
    MFMA and 128-bit global loads in the assembly): the assembly hipcc -S makes, with one pass
    of the front end and the optimiser for both."""
    llc, llvm_dis = hip_llvm_tools()
    with tempfile.TemporaryDirectory() as tmp:
        bitcode = os.path.join(tmp, "kernels.bc")
        compile_listing(["hipcc", "-std=c++17", "-x", "hip", f"--offload-arch={arch}", "--cuda-device-only", "-c",
                         "-emit-llvm", "-O3", "-I", os.path.join(ROOT, "include"), *shard_flags(operation), SOURCE,
                         "-o", bitcode])
        ir, _ = compile_listing([llvm_dis, bitcode, "-o", "-"])
        assembly, remarks = compile_listing([llc, "-O3", "-mtriple=amdgcn-amd-amdhsa", f"-mcpu={arch}",
                                             "-pass-remarks-analysis=kernel-resource-usage", bitcode, "-o", "-"])
    remarks = remarks.replace("remark: <unknown>:0:0: ", "remark: ")  # (llc's remarks name no source place)
    rows, current = [], None
    for line in remarks.splitlines():
        m = re.search(r"remark: Function Name: (\w+)", line)
        if m:
            current = {"mangled": m.group(1), "target": arch, "spill": 0, "smem": 0}
            rows.append(current)
            continue
        if current is None:
            continue
        for key, pattern in (("sgpr", r"SGPRs: (\d+)"), ("vgpr", r"VGPRs: (\d+)"), ("agpr", r"AGPRs: (\d+)"),
                             ("sgpr_spill", r"SGPRs Spill: (\d+)"),
                             ("vgpr_spill", r"VGPRs Spill: (\d+)"), ("smem", r"LDS Size \[bytes/block\]: (\d+)"),
                             ("scratch", r"ScratchSize \[bytes/lane\]: (\d+)")):
            m = re.search(r"remark:\s+" + pattern, line)
            if m:
                current[key] = int(m.group(1))
    counts = {}
    for name, body in kernel_bodies(assembly, r"^(_Z\w+):", r"^\.Lfunc_end").items():
        counts[name] = {"mfma": sum(line.strip().startswith("v_mfma") for line in body),
                        "load128": sum(line.strip().startswith("global_load_dwordx4") for line in body),
                        "store128": sum(line.strip().startswith("global_store_dwordx4") for line in body),
                        "division": (0, 0)}
    for name, body in kernel_bodies(ir, r"^define .*@(_Z\w+)\(", r"^}").items():
        if name in counts:
            counts[name]["division"] = division_counts(
                body, r"= (?:udiv|sdiv|urem|srem)(?: exact)? i(?:32|64) %[\w.]+, %[\w.]+", r"^([\w.]+):",
                r"label %([\w.]+)(?=[^!]*!llvm\.loop)")  # loop back edges carry !llvm.loop
    for r in rows:
        r["registers"] = f"{r.get('vgpr', '?')} v + {r.get('sgpr', '?')} s"
        r["spill"] = r.get("sgpr_spill", 0) + r.get("vgpr_spill", 0) + r.get("scratch", 0)
        r.update(counts.get(r["mangled"], {"mfma": 0, "load128": 0, "store128": 0, "division": (0, 0)}))
    return rows


# Per target: the device profile the planners use (bench/plan_launches.cpp), the most blocks a
# multiprocessor holds, and how registers are allocated: NVIDIA per warp in units of 256
# (CUDA occupancy calculator); AMD per wave and SIMD, VGPRs (with AGPRs on gfx90a) in units of
# 4 (gfx906) or 8 (gfx90a) out of 256 or 512 per lane, at most 10 or 8 waves per SIMD, 4 SIMDs
# a CU.
TARGETS = {
    "sm_75": {"profile": "sm75", "max_blocks": 16},
    "sm_80": {"profile": "sm80", "max_blocks": 32},
    "sm_90": {"profile": "sm90", "max_blocks": 32},
    "gfx906": {"profile": "gfx906", "max_blocks": 40, "vgpr_unit": 4, "vgprs": 256, "waves_per_simd": 10},
    "gfx90a": {"profile": "gfx90a", "max_blocks": 32, "vgpr_unit": 8, "vgprs": 512, "waves_per_simd": 8},
}


# The targets that compile only the kernels their plans launch on the networks' layers (every
# batch, type, layout and pass, and the blocks; bench/dsconv_plan_launches), where a plan tool
# is given: sm_80 runs ptxas on the PTX sm_90 compiles whole, and sm_75 is the step's one CUDA
# target with a front end of its own; their other kernels run only when a caller forces their
# variant or on shapes no network has. Every kernel is still compiled for sm_90, gfx906 and
# gfx90a. (On 0a3b57d the sm_75 and sm_80 plans launched 223 and 243 of the 528 CUDA kernels,
# 38 % and 49 % of the PTX; the two targets had been 1400 of the step's 2572 s of compiling.)
PLANNED_ONLY = ("sm_75", "sm_80")


def enum_declarations():
    """{name: [enumerators]} of the library's scoped enums declared without explicit values."""
    enums = {}
    for directory, _, files in os.walk(os.path.join(ROOT, "include", "dsconv")):
        for f in files:
            with open(os.path.join(directory, f)) as header:
                for name, body in re.findall(r"enum class (\w+) \{([^}=]*)\};", header.read()):
                    enums[name] = [e.split("//")[0].strip() for e in body.split(",") if e.split("//")[0].strip()]
    return enums


ENUMS = enum_declarations()


def enumerators_as_values(name):
    """A kernel name with each template argument `detail::E::x` of a library enum E written as
    c++filt writes it: (detail::E)N, N the enumerator's value."""
    def value(m):
        enumerators = ENUMS.get(m.group(2), [])
        return f"({m.group(1)}{m.group(2)}){enumerators.index(m.group(3))}" if m.group(3) in enumerators else m.group(0)
    return re.sub(r"((?:dsconv::)?detail::)(\w+)::(\w+)", value, name)


def round_up(x, unit):
    return (x + unit - 1) // unit * unit


def resident_blocks(row, launch):
    """Blocks of `launch` (a plan_launches CSV row) that one multiprocessor of its device holds
    at once, and what limits them."""
    target = TARGETS[row["target"]]
    threads = int(launch["block_threads"])
    warp = int(launch["warp_size"])
    warps = (threads + warp - 1) // warp
    limits = {"threads": int(launch["max_threads_per_multiprocessor"]) // threads, "blocks": target["max_blocks"]}
    if "vgprs" in target:
        vgprs = round_up(max(row.get("vgpr", 1) + row.get("agpr", 0), 1), target["vgpr_unit"])
        waves_per_simd = min(target["waves_per_simd"], target["vgprs"] // vgprs)
        limits["registers"] = 4 * waves_per_simd // warps
    else:
        per_warp = round_up(int(row["registers"]) * warp, 256)
        limits["registers"] = int(launch["registers_per_multiprocessor"]) // per_warp // warps
    shared = int(row["smem"]) + int(launch["dynamic_shared_bytes"])
    if shared:
        limits["shared memory"] = int(launch["shared_per_multiprocessor"]) // (shared + int(launch["shared_reserved_per_block"]))
    blocks = min(limits.values())
    return blocks, min(limits, key=limits.get), warps


def plan_listing(plan_tool):
    """The planner's launches (bench/dsconv_plan_launches: a CSV row each)."""
    listing = subprocess.run([plan_tool], capture_output=True, text=True)
    if listing.returncode != 0:
        sys.exit(f"{plan_tool} failed:\n{listing.stderr}")
    return listing.stdout


def planned_kernels(listing):
    """{target: launch keys of the kernels its plans launch} for the PLANNED_ONLY targets."""
    profiles = {TARGETS[t]["profile"]: t for t in PLANNED_ONLY}
    planned = {t: set() for t in PLANNED_ONLY}
    for launch in csv.DictReader(io.StringIO(listing)):
        if launch["device"] in profiles:
            planned[profiles[launch["device"]]].add(launch_key(launch["kernel"].replace("kernels::", "")))
    return planned


def occupancy_tables(rows, listing, out_dir):
    """The occupancy summary (markdown lines) and occupancy.csv from the planner's launches."""
    by_build = {(launch_key(r["kernel"]), TARGETS[r["target"]]["profile"]): r for r in rows if r["target"] in TARGETS}
    summary, unknown = collections.OrderedDict(), set()
    launched = collections.Counter()  # launches on sm_90's profile per kernel (launch_key)
    with open(os.path.join(out_dir, "occupancy.csv"), "w") as out:
        out.write("device,layer,pass,type,layout,batch,kernel,block_threads,dynamic_shared_bytes,grid_blocks,"
                  "resident_blocks,limited_by,occupancy,grid_blocks_per_multiprocessor,meets_target\n")
        for launch in csv.DictReader(io.StringIO(listing)):
            name = launch["kernel"].replace("kernels::", "")
            row = by_build.get((launch_key(name), launch["device"]))
            if row is None:
                unknown.add(name)
                continue
            if launch["device"] == "sm90":
                launched[launch_key(name)] += 1
            blocks, limit, warps = resident_blocks(row, launch)
            max_warps = int(launch["max_threads_per_multiprocessor"]) // int(launch["warp_size"])
            occupancy = blocks * warps / max_warps
            in_grid = -(-int(launch["grid_blocks"]) // int(launch["multiprocessors"]))
            # The target asks for 50 % or 4 blocks, where the grid has them.
            meets = occupancy >= 0.5 or blocks >= min(4, in_grid)
            forward = launch.get("pass", "forward") == "forward"
            out.write(f"{launch['device']},{launch['layer']},{launch['pass']},{launch['type']},{launch['layout']},{launch['batch']},"
                      f"\"{name}\",{launch['block_threads']},{launch['dynamic_shared_bytes']},{launch['grid_blocks']},"
                      f"{blocks},{limit},{occupancy:.3f},{in_grid},{int(meets)}\n")
            s = summary.setdefault((name, row["target"]), {"launches": 0, "min_blocks": blocks, "min_occ": occupancy,
                                                          "limits": collections.Counter(), "below": 0,
                                                          "below_backward": 0})
            s["launches"] += 1
            s["min_blocks"] = min(s["min_blocks"], blocks)
            s["min_occ"] = min(s["min_occ"], occupancy)
            s["limits"][limit] += 1
            s["below" if forward else "below_backward"] += not meets
    for name in sorted(unknown):
        print(f"launched but not in the resource table: {name}", file=sys.stderr)
    lines = ["| kernel | target | launches | resident blocks (min) | occupancy (min) | limited by | below target |",
             "|---|---|---|---|---|---|---|"]
    # (the register-blocked kernels and the tensor-core one keep their loads in flight in
    # registers at 2 to 4 blocks: their budget is the bytes in flight of scripts/sass_budget.py,
    # not this occupancy)
    tiled = lambda name: name.startswith("depthwise_n") and "register" not in name and "matrix" not in name
    fused = lambda name: name.startswith("inverted_residual")  # (reported, not yet failed: gfx906 holds 3 blocks)
    for (name, target), s in sorted(summary.items()):
        limits = ", ".join(f"{k} {v}" for k, v in s["limits"].most_common())
        lines.append(f"| {name} | {target} | {s['launches']} | {s['min_blocks']} | {100 * s['min_occ']:.0f} % | {limits} | "
                     f"{s['below'] + s['below_backward'] if tiled(name) or fused(name) else '-'} |")
    below = sum(s["below"] for (name, _), s in summary.items() if tiled(name))
    below_backward = sum(s["below_backward"] for (name, _), s in summary.items() if tiled(name))
    below_fused = sum(s["below"] for (name, _), s in summary.items() if fused(name))
    launches = sum(s["launches"] for s in summary.values())
    note = (f"{launches} launches of {len(summary)} kernel builds as planned for every layer; "
            f"{below} depthwise tiled forward launches below 50 % occupancy and 4 resident blocks (where the grid has "
            f"them); {below_backward} backward ones; {below_fused} fused block launches below it (reported, not yet a failure); "
            f"{len(unknown)} launched kernels missing from the resource table")
    return lines, note, bool(unknown), below + below_backward, launched


def launch_key(name):
    """A kernel's name as the planner's listing and c++filt both give it: enumerators as values
    (the registry names an enumerator where c++filt casts its value: gate_kind::clamp for
    (detail::gate_kind)1), without the namespace dsconv, spaces and the default template
    arguments (the registry's names omit Vectors = true and ElementForm = void of the tiles)."""
    return enumerators_as_values(name.replace("dsconv::", "")).replace(" ", "").replace(",void>", ">").replace(",true>", ">")


# The block size of each kernel the SASS budgets model, as its header declares it.
BLOCK_THREADS = {"depthwise_nhwc_register": ("kernels/depthwise/nhwc_register.hpp", "register_block_threads"),
                 "depthwise_nhwc_register_weight": ("kernels/depthwise/nhwc_register.hpp", "register_block_threads"),
                 "depthwise_nhwc_register_transposed": ("kernels/depthwise/nhwc_register.hpp", "register_block_threads"),
                 "depthwise_nhwc_register_column": ("kernels/depthwise/nhwc_register_column.hpp", "column_block_threads"),
                 "depthwise_small_map": ("kernels/depthwise/nhwc_register.hpp", "register_block_threads"),
                 "depthwise_nchw_register_transposed": ("kernels/depthwise/nchw_register.hpp", "nchw_register_block_threads"),
                 "depthwise_nchw_register": ("kernels/depthwise/nchw_register.hpp", "nchw_register_block_threads"),
                 "depthwise_nhwc_matrix": ("kernels/depthwise/nhwc_matrix.hpp", "matrix_block_threads"),
                 "depthwise_nchw_matrix": ("kernels/depthwise/nchw_matrix.hpp", "nchw_matrix_block_threads"),
                 "depthwise_nchw_matrix_plane": ("kernels/depthwise/nchw_matrix.hpp", "nchw_matrix_block_threads"),
                 "pointwise_nhwc_stream": ("kernels/pointwise/nhwc_stream.hpp", "stream_block_threads"),
                 "pointwise_nhwc_stream_held": ("kernels/pointwise/nhwc_stream.hpp", "stream_block_threads"),
                 "inverted_residual_fused_nhwc": ("kernels/block/fused_tile.hpp", "fused_block_threads")}


def block_threads_of(kernel):
    tile = re.search(r"mma_tile<\d+, \d+, (\d+), (\d+),", kernel)  # (the matrix-unit GEMM: warps of its tile)
    if tile:
        return int(tile.group(1)) * int(tile.group(2)) * 32
    return sass_budget.header_constant(*BLOCK_THREADS[kernel.split("<")[0]])


def resident_threads(registers, block):
    """Threads of `block`-thread blocks that a Hopper multiprocessor's 64K registers hold (whole
    blocks; registers allocated per warp in runs of 256, so per thread in runs of 8), at most
    2048. (Shared memory does not bind for these kernels: a few KiB a block, or at most 48 KiB a
    block of 128 threads, 4 of which fit with 512 threads.)"""
    warps = 65536 // (max(64, -(-registers // 8) * 8) * 32)
    return min(2048, warps // (block // 32) * block)


def sm90_resident_threads(rows):
    """name (c++filt's, as the SASS budgets give it) -> the threads of its blocks that its sm_90
    registers let a multiprocessor hold (resident_threads; 64 registers where the table has
    no sm_90 row)."""
    registers = {r["kernel"]: int(r["registers"]) for r in rows if r["target"] == "sm_90"}
    return lambda name: resident_threads(registers.get(name.replace("dsconv::", ""), 64), block_threads_of(name))


def grid_threads(launch):
    """The threads of a plan_launches row's grid."""
    return int(launch["grid_blocks"]) * int(launch["block_threads"])


def start_sass_budgets(pool):
    """The searches of scripts/sass_budget.py on the sm_90 cubins, a process each (pool), so that
    they run beside each other and beside the occupancy tables (one after the other, after them,
    they had taken most of the step's last two minutes): futures of sass_budget.budgets."""
    cubins = sorted(glob.glob(os.path.join(KEPT.name, "kernels_sm_90_*.cubin")))
    if cubins and not sass_budget.find_nvdisasm():
        print("no nvdisasm (pip install nvidia-cuda-nvdisasm): SASS budgets skipped", file=sys.stderr)
        return []
    return [pool.submit(sass_budget.budgets, cubin) for cubin in cubins]


def sass_budget_lines(rows, searches, launched=None):
    """The two budgets of the memory-bound kernels modelled by scripts/sass_budget.py, from the
    sm_90 cubins' searches (start_sass_budgets; reported, not a failure: 16-bit 5x5 depthwise
    filters need 6.25 fp32 multiply-adds per DRAM byte alone), with each kernel's launches on the
    networks' layers as the planner makes them for sm_90 (`launched`, occupancy_tables: 16-byte
    aligned tensors; a kernel no layer launches there runs for other tensors, maps or targets)."""
    if not searches:
        return ""
    resident = sm90_resident_threads(rows)
    lines = ["", "## Instruction and in-flight budgets (sm_90 SASS)", "",
             "scripts/sass_budget.py: the cheapest path once around each kernel's main loop that does what an "
             "iteration of the modelled case does, its instructions over the DRAM bytes the iteration moves (an H200 "
             "issues %.1f a byte at full bandwidth; the aim is at most %.0f), and the most global-load bytes a thread "
             "has issued and not yet used; per multiprocessor, times the threads its registers let reside "
             "(NVIDIA's CUB aims at 48 KiB on an H200)." % (sass_budget.ISSUE_LIMIT, sass_budget.TARGET), "",
             "| kernel | iteration | instructions | instr / DRAM byte | bytes in flight / thread | resident threads / SM | "
             "bytes in flight / SM | sm_90 layer launches |", "|---|---|---|---|---|---|---|---|"]
    launches = (lambda name: str(launched[launch_key(name)])) if launched is not None else (lambda name: "-")
    over = []  # (kernel, iteration, per byte) above the aim among those the layers launch
    layered = []
    budgets = {(name, what): b for search in searches for name, what, b in search.result()}
    for (name, what), b in sorted(budgets.items(), key=lambda item: item[0]):
        threads = resident(name)
        if isinstance(b, dict):
            layered.append((name, what, b, threads))
            continue
        if b is None:
            lines.append(f"| {name} | {what} | no path | | | | | {launches(name)} |")
            continue
        lines.append(f"| {name} | {what} | {b[0]} | {b[1]:.2f} | {b[2]} | {threads} | {b[2] * threads // 1024} KiB | "
                     f"{launches(name)} |")
        if launched is not None and launched[launch_key(name)] and b[1] > sass_budget.TARGET:
            over.append(f"{name} ({what}: {b[1]:.2f})")
    if launched is not None:
        lines += ["", f"{len(over)} of the iterations above the aim are of kernels the sm_90 plan launches on the "
                  "networks' layers" + (": " + "; ".join(over) if over else "") + "."]
    if layered:
        lines += ["", "pointwise_nhwc_stream and its held form per layer (c_in -> c_out, where the plan gives the layer "
                  "that kernel): a warp's 32-pixel tile's instructions, instructions per DRAM byte of the layer (every "
                  "grid row, a slice of outputs or the held form's block of slices, runs every tile), bytes in flight "
                  "per thread.", "",
                  "| kernel | " + " | ".join("%d->%d" % l for l in sass_budget.STREAM_LAYERS) + " |",
                  "|---|" + "---|" * len(sass_budget.STREAM_LAYERS)]
        for name, what, per_layer, threads in layered:
            cells = []
            for layer in sass_budget.STREAM_LAYERS:
                b = per_layer.get(layer, "-")
                cells.append(b if b == "-" else "no path" if b is None else
                             "%d, %.2f, %d" % (b[0], sass_budget.stream_layer_budget(b[0], *layer), b[2]))
            lines.append("| %s | %s |" % (name, " | ".join(cells)))
    forward = [(name, b) for (name, what), b in sorted(budgets.items(), key=lambda item: item[0])
               if b and not isinstance(b, dict) and MMA_FORWARD.search(name)]
    if forward:
        lines += ["", "pointwise_gemm_mma per layer (NHWC forward, c_in -> c_out): its K stage's instructions x the stages "
                  "of every column of tiles over a pixel row's, per DRAM byte of the layer (the activations re-read from "
                  "L2 once per column of tiles; main loop only).", "",
                  "| kernel | " + " | ".join("%d->%d" % l for l in sass_budget.STREAM_LAYERS) + " |",
                  "|---|" + "---|" * len(sass_budget.STREAM_LAYERS)]
        for name, b in forward:
            m = MMA_FORWARD.search(name)
            t, tile = m.group(1).replace("dsconv::", ""), [int(m.group(i)) for i in range(2, 6)]
            lines.append("| %s | %s |" % (name, " | ".join(
                "%.2f" % sass_budget.mma_layer_budget(b[0], t, *tile, *layer) for layer in sass_budget.STREAM_LAYERS)))
    return "\n".join(lines) + "\n"


def in_flight_as_launched(rows, searches, listing, out_dir=None):
    """Bytes in flight per multiprocessor of each depthwise forward and data-gradient launch on
    sm_90's profile as the planner makes it: a thread's (scripts/sass_budget.py: the fewest of
    its kernel's modelled iterations, of the launch's layout where they name one) times the
    threads a multiprocessor runs at once, those its registers let reside or, where the grid
    is smaller, the grid's share (grid threads over the multiprocessors), against 48 KiB, or,
    where the layer's tensors are smaller, all the bytes the pass reads (plan_launches
    read_bytes, over the multiprocessors: what can be in flight at once at most; where a pass
    launches several kernels, a launch's share of them by its grid's threads). The resident
    count alone had credited a launch of 29 threads a multiprocessor with 1024 threads' loads.
    Returns (markdown lines, launches short of their need)."""
    if not searches or listing is None:
        return "", 0
    resident_of = sm90_resident_threads(rows)
    forms = collections.defaultdict(list)  # launch key -> [(iteration, bytes in flight a thread, resident threads)]
    for search in searches:
        for name, what, b in search.result():
            if b is None or isinstance(b, dict):
                continue
            forms[launch_key(name)].append((what, b[2], resident_of(name)))
    summary = collections.OrderedDict()
    short = 0
    csv_lines = ["layer,pass,type,layout,batch,kernel,bytes_in_flight_per_thread,threads_at_once,"
                 "bytes_in_flight_per_multiprocessor,need_bytes,meets"]
    # (a pass's launches, each modelled one with its kernel's forms; where a pass launches
    # several, as nhwc_matrix's 8 x 8 tiles and the tail of channels on 16 x 16 ones, each is
    # held to its share of the pass's bytes, by its grid's threads)
    passes = collections.OrderedDict()
    for launch in csv.DictReader(io.StringIO(listing)):
        if launch["device"] != "sm90" or launch["kind"] != "dw" or launch["pass"] not in ("forward", "data"):
            continue
        name = launch["kernel"].replace("kernels::", "")
        modelled = forms.get(launch_key(name))
        if modelled:
            key = tuple(launch[k] for k in ("layer", "pass", "type", "layout", "batch"))
            passes.setdefault(key, []).append((launch, name, modelled))
    launches = [(launch, name, modelled, grid_threads(launch) / sum(grid_threads(l) for l, _, _ in group))
                for group in passes.values() for launch, name, modelled in group]
    for launch, name, modelled, share in launches:
        layout = launch["layout"].upper() + ":"
        modelled = [f for f in modelled if f[0].startswith(layout)] or modelled
        per_thread, resident = min(f[1] for f in modelled), min(f[2] for f in modelled)
        sms = int(launch["multiprocessors"])
        at_once = min(resident, grid_threads(launch) / sms)
        need = min(sass_budget.CUB_BYTES_IN_FLIGHT, share * int(launch["read_bytes"]) / sms)
        got = per_thread * at_once
        meets = got >= need
        short += not meets
        csv_lines.append(f"{launch['layer']},{launch['pass']},{launch['type']},{launch['layout']},{launch['batch']},"
                         f"\"{name}\",{per_thread},{at_once:.0f},{got:.0f},{need:.0f},{int(meets)}")
        s = summary.setdefault(name.split("<")[0], {"launches": 0, "short": 0, "worst": None})
        s["launches"] += 1
        s["short"] += not meets
        ratio = got / need if need else 1.0
        if s["worst"] is None or ratio < s["worst"][0]:
            s["worst"] = (ratio, launch, per_thread, at_once, got, need)
    if out_dir is not None:
        with open(os.path.join(out_dir, "in_flight.csv"), "w") as f:
            f.write("\n".join(csv_lines) + "\n")
    lines = ["", "## Bytes in flight as launched (sm_90, depthwise forward and data gradient)", "",
             "Per launch of every layer (both networks, batch 1, 8, 32, 128, every type and layout): a thread's bytes in "
             "flight (the table above) times the threads a multiprocessor runs at once (resident, or the grid's share "
             "where the grid is smaller), against 48 KiB or, where the layer is smaller, all the bytes the pass reads "
             "over the multiprocessors (a launch's share by its grid's threads, where the pass has several). "
             "Every launch: in_flight.csv.", "",
             "| kernel | launches | short | worst: launch | bytes / thread | threads at once | in flight / SM | need |",
             "|---|---|---|---|---|---|---|---|"]
    for kernel, s in sorted(summary.items()):
        ratio, launch, per_thread, at_once, got, need = s["worst"]
        where = (f"{launch['layer']} {launch['pass']} {launch['type']} {launch['layout']} batch {launch['batch']}"
                 if ratio < 1 else "-")
        lines.append(f"| {kernel} | {s['launches']} | {s['short']} | {where} | {per_thread} | {at_once:.0f} | "
                     f"{got / 1024:.1f} KiB | {need / 1024:.1f} KiB |")
    lines += ["", f"{short} of {sum(s['launches'] for s in summary.values())} launches short of the bytes in flight "
              "they need (reported, not yet a failure)."]
    return "\n".join(lines) + "\n", short


# The matrix-unit GEMM's NHWC forward kernels (A k-contiguous, B k-contiguous, the fused epilogue).
MMA_FORWARD = re.compile(r"pointwise_gemm_mma<(float|dsconv::half|dsconv::bfloat16), mma_tile<(\d+), (\d+), (\d+), (\d+), "
                         r"\d+, mma_sync_unit, true, void>, false, true, fused_output")


def find_plan_tool():
    for build in ("build-ci", "build"):
        path = os.path.join(ROOT, build, "bench", "dsconv_plan_launches")
        if os.access(path, os.X_OK):
            return path
    return None


def main():
    started = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "results"))
    parser.add_argument("--plan-tool", default=None, help="the host build's bench/dsconv_plan_launches")
    parser.add_argument("--cuda-ptx", default=None,
                        help="a CUDA build's kept compute_80 PTX of the kernel sources (DSCONV_CUDA_KEEP_PTX_DIR), "
                             "compiled by ptxas for sm_80 (and for sm_90 but bfloat16's: OWN_SM90_TYPES) instead of "
                             "compiling the source again")
    args = parser.parse_args()
    plan_tool = args.plan_tool or find_plan_tool()
    listing = plan_listing(plan_tool) if plan_tool else None
    planned = planned_kernels(listing) if listing is not None else None
    # The builds: (what they compile, a function returning their rows), one compiler process
    # each, run side by side on the cores, the largest first. A kernel two operations launch
    # (the fused block's helpers) is one row per target.
    builds = []
    if os.path.exists(NVCC):
        sm75 = [(f"{operation} kernels for sm_75", lambda op=operation: cuda_rows(("sm_75",), op, planned))
                for operation, _ in OPERATIONS]
        if args.cuda_ptx:  # (sm_80 and sm_90 from the CUDA build's PTX: no second front end)
            builds += sm75 + [(f"{name} kernels for {'+'.join(sm80_sm90(type_name))} (kept PTX)",
                               lambda path=path, name=name, archs=sm80_sm90(type_name): ptx_rows(path, archs, name, planned))
                              for name, path in kept_ptx(args.cuda_ptx).items() for type_name in [name.rsplit("_", 1)[1]]]
        else:
            builds += [(f"{operation}_{type_name} kernels for {'+'.join(sm80_sm90(type_name))}",
                        lambda op=operation, t=type_name: cuda_rows(sm80_sm90(t), op, planned, t))
                       for operation, _ in OPERATIONS for type_name, _ in TYPES] + sm75
        builds += [(f"{operation}_{type_name} kernels for sm_90", lambda op=operation, t=type_name: cuda_rows(("sm_90",), op, planned, t))
                   for operation, _ in OPERATIONS for type_name in OWN_SM90_TYPES]
    else:
        print(f"no nvcc at {NVCC}: CUDA skipped", file=sys.stderr)
    if shutil.which("hipcc"):
        builds += [(f"{operation} kernels for {arch}", lambda op=operation, arch=arch: hip_rows(arch, op))
                   for operation, _ in OPERATIONS for arch in ("gfx906", "gfx90a")]
    else:
        print("no hipcc: HIP skipped", file=sys.stderr)
    rows, seen = [], set()

    def timed(build):  # (each build's time in the log: what the step's minutes go to)
        label, function = build
        start = time.monotonic()
        built = function()
        print(f"{label}: {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
        return built

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for built in pool.map(timed, builds):
            for r in built:
                if (r["mangled"], r["target"]) not in seen:
                    seen.add((r["mangled"], r["target"]))
                    rows.append(r)
    print(f"every build: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    if not rows:
        print("no GPU compiler found", file=sys.stderr)
        return 2
    for r, name in zip(rows, demangle([r["mangled"] for r in rows])):
        r["kernel"] = short_name(name)
    # The runtime's probe kernel (platform/gpu/runtime.hpp) is empty and never launched.
    rows = [r for r in rows if not r["kernel"].startswith("platform::")]
    rows.sort(key=lambda r: (r["kernel"], r["target"]))
    header = ("| kernel | target | registers | static shared memory (bytes) | spill bytes | mma.sync (PTX) | "
              "HMMA (SASS) | MFMA | integer divisions (in loops) | 128-bit global loads | 128-bit global stores |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['target']} | {r['registers']} | {r['smem']} | {r['spill']} | "
                     f"{r.get('mma', '-')} | {r.get('hmma', '-')} | {r.get('mfma', '-')} | "
                     f"{r['division'][0]} ({r['division'][1]}) | {r['load128']} | {r['store128']} |")
    spilling = [r for r in rows if r["spill"]]
    # A matrix-unit kernel must use its matrix unit: tensor cores on every CUDA target (on sm_75
    # only for half: Turing has no bf16 or tf32 mma.sync, and those kernels only trap there),
    # matrix cores on gfx90a (gfx906 has none; there the kernel only traps).
    # (the matrix-unit GEMM, the tensor-core depthwise kernels, and the fused block whose project
    # step runs on a unit)
    matrix_kernel = lambda r: (r["kernel"].startswith("pointwise_gemm_mma") or r["kernel"].startswith("pointwise_nhwc_stream") or
                               r["kernel"].startswith("depthwise_nhwc_matrix") or r["kernel"].startswith("depthwise_nchw_matrix") or
                               re.match(r"inverted_residual_fused_nhwc<.*(mma_sync_unit|mfma_unit)>", r["kernel"]))
    traps_on_turing = lambda r: r["target"] == "sm_75" and not re.match(r"\w+<half,", r["kernel"])
    no_hmma = [r for r in rows if matrix_kernel(r) and r.get("hmma") == 0 and not traps_on_turing(r)]
    no_mfma = [r for r in rows if matrix_kernel(r) and r["target"] == "gfx90a" and r.get("mfma") == 0]
    stray_mfma = [r for r in rows if not matrix_kernel(r) and r.get("mfma")]
    # Each m16n8k16 / m16n8k8 mma.sync is one HMMA (sm_75 runs a half m16n8k16 as two m16n8k8):
    # a mismatch means the SASS reader is wrong.
    mismatched = [r for r in rows if r.get("hmma") != r.get("mma")]
    # Divisions are long instruction sequences on GPUs: once per thread at most, never per
    # element of a loop.
    dividing = [r for r in rows if r["division"][1]]
    # Kernels whose vector form moves 16-byte runs must load them as 128-bit accesses: the
    # depthwise tiled kernels, the 128x128 matrix-unit tiles, and the 128x128 SIMT tile for
    # float (in the 64x64 tiles and the 16-bit SIMT ones a thread's runs are 8 bytes).
    # (The NCHW weight gradient stages element by element on AMD, to fit 4 waves per SIMD,
    # and for 16-bit elements of 5x5 and 7x7 filters, to fit 4 blocks without spilling:
    # kernels/depthwise/weight_reduce.hpp, weight_stages_elements.)
    # (The register-blocked depthwise kernel's 16-bit 5x5 and stride-2 forms and its float
    # stride-2 forms, and its stride-2 data gradient's 16-bit 5x5 form, move 8-byte vectors:
    # kernels/depthwise/nhwc_register.hpp, register_vector.)
    # (The NCHW one's 5x5 filters move at most 8 bytes at a time on AMD:
    # kernels/depthwise/nchw_register.hpp, nchw_register_widest_chunk.)
    # (The NHWC weight gradient's vectors are 4 channels for 3x3 filters, 2 for 5x5: 16 bytes for
    # float 3x3 only; kernels/depthwise/nhwc_register_weight.hpp, register_weight_vector.)
    eight_byte_vectors = lambda r: (re.match(r"depthwise_nhwc_register<(dsconv::)?(half|bfloat16), (5, \d|3, 2),", r["kernel"]) or
                                    re.match(r"depthwise_nhwc_register<float, \d, 2,", r["kernel"]) or
                                    re.match(r"depthwise_nhwc_register_transposed<(dsconv::)?(half|bfloat16), 5,", r["kernel"]) or
                                    re.match(r"depthwise_nhwc_register_weight<((dsconv::)?(half|bfloat16)|float, 5),", r["kernel"]) or
                                    (re.match(r"depthwise_nchw_register<[^,]*, 5,", r["kernel"]) and r["target"].startswith("gfx")))
    # (nchw_matrix's plane form moves a plane's 4-byte words or 2-byte elements: planes of at
    # most 16 x 16 start where their image and channel put them; nchw_matrix_plane.hpp.)
    # (The NCHW stride-2 data gradient loads grad_output element by element: its blocks' dz
    # windows start at any column; nchw_register_transposed.hpp. The float NHWC data gradient
    # through a gate takes one channel a thread, or two, 4- or 8-byte accesses:
    # nhwc_register_column.hpp.)
    plane_items = lambda r: r["kernel"].startswith(("depthwise_nchw_matrix_plane<", "depthwise_nchw_register_transposed<",
                                                    "depthwise_nhwc_register_column<"))
    # (The small-map kernel's forms of 2 channels a thread, stride 2 onto 2 x 2 maps, move 4- or
    # 8-byte vectors in NHWC and elements in NCHW; its others 16-byte ones in either layout or in
    # NCHW's runs: kernels/depthwise/small_map.hpp.)
    small_map_16 = lambda r: (re.match(r"depthwise_small_map<", r["kernel"]) and
                              not re.match(r"depthwise_small_map<[^,]*, \d, 2, 2,", r["kernel"]))
    expects_128 = lambda r: ((r["kernel"].startswith("depthwise_n") and not eight_byte_vectors(r) and not plane_items(r)) or
                             small_map_16(r) or
                             r["kernel"].startswith("pointwise_nhwc_stream") or
                             re.search(r"mma_tile<128, 128, .*, true>", r["kernel"]) or
                             re.search(r"gemm_tiled<float, gemm_tile<128, 128, .*, true>", r["kernel"]))
    staged_by_element = lambda r: (re.match(r"depthwise_nchw_backward_weight<", r["kernel"]) and
                                   (r["target"].startswith("gfx") or re.match(r"[^<]*<(half|bfloat16), [57],", r["kernel"])))
    # (The NCHW matrix forward stages its tiles in shared memory where a row's 16-byte runs lie
    # 8 bytes past a 16-byte slot, where its fragments' windows start: on NVIDIA each run is
    # two 8-byte cp.async copies, two 8-byte loads on Turing; nchw_matrix.hpp. It must have them.)
    copied_in_halves = lambda r: (re.match(r"depthwise_nchw_matrix<[^>]*gate_kind\)0>", r["kernel"]) and
                                  not r["target"].startswith("gfx") and r.get("load64"))
    # (A matrix-unit kernel that only traps on its target, bfloat16 on sm_75, loads nothing.)
    narrow = [r for r in rows if expects_128(r) and not staged_by_element(r) and not r["load128"] and
              not copied_in_halves(r) and not (matrix_kernel(r) and traps_on_turing(r))]
    # The matrix-unit GEMM's epilogue stores 16-byte runs of C (fused, or split-K's partial sums)
    # where C allows (kernels/pointwise/staged_epilogue.hpp): nvcc had split them into 4-byte
    # stores. (The SIMT GEMM stores from its registers, runs of 4 elements.)
    narrow_stores = [r for r in rows if re.match(r"pointwise_gemm_mma<.*(fused|partial)_output", r["kernel"])
                     and not r["store128"]]
    per_target = collections.Counter(r["target"] for r in rows)
    partial = "" if planned is None else "; " + ", ".join(
        f"{t}: the {per_target[t]} its plans launch" for t in PLANNED_ONLY if t in per_target)
    summary = (f"{len(rows)} kernel builds ({len({r['kernel'] for r in rows})} kernels on "
               f"{len(per_target)} targets{partial}); {len(spilling)} spill; "
               f"{len(no_hmma)} tensor-core builds without HMMA; {len(no_mfma)} gfx90a matrix-core builds without MFMA; "
               f"{len(mismatched)} builds whose HMMA count differs from their mma.sync count; "
               f"{len(dividing)} builds dividing inside a loop; "
               f"{len(narrow)} builds without the 128-bit loads of their 16-byte runs; "
               f"{len(narrow_stores)} matrix-unit GEMM builds without the 128-bit stores of their epilogue")
    text = "# dsconv kernel resources\n\nDynamic shared memory is sized at launch and not shown.\n\n" + "\n".join(lines) + \
        f"\n\n{summary}\n"
    print("\n".join(lines))
    print(summary)
    os.makedirs(args.out, exist_ok=True)
    budget_pool = concurrent.futures.ProcessPoolExecutor(max_workers=os.cpu_count() or 1)
    searches = start_sass_budgets(budget_pool)
    missing, below_target, launched = False, 0, None
    if listing is not None:
        occupancy_started = time.monotonic()
        occupancy, note, missing, below_target, launched = occupancy_tables(rows, listing, args.out)
        print(f"occupancy tables: {time.monotonic() - occupancy_started:.0f} s", file=sys.stderr, flush=True)
        text += ("\n## Occupancy as launched\n\nPer kernel and target, over its launches for every layer of both "
                 "networks (batch 1, 8, 32, 128; every type and layout; forward and both backward passes) and "
                 "every block's forward (unfused and fused) as the "
                 "planners make them: the fewest "
                 "blocks a multiprocessor keeps resident (by threads, registers, static + dynamic shared memory "
                 "and the block limit), the lowest theoretical occupancy, what limits it, and for the depthwise "
                 "tiled kernels and the fused block kernel the launches below 50 % and 4 resident blocks where the grid has 4 blocks per "
                 "multiprocessor. Every launch: occupancy.csv.\n\n" + "\n".join(occupancy) + f"\n\n{note}\n")
        print("\n".join(occupancy))
        print(note)
    else:
        print("no dsconv_plan_launches (build the host project first, or pass --plan-tool): occupancy skipped",
              file=sys.stderr)
    budgets_waited = time.monotonic()
    budget_lines = sass_budget_lines(rows, searches, launched)
    budget_lines += in_flight_as_launched(rows, searches, listing, args.out)[0]
    budget_pool.shutdown()
    print(f"SASS budgets: {time.monotonic() - budgets_waited:.0f} s after the occupancy tables", file=sys.stderr, flush=True)
    text += budget_lines
    print(budget_lines)
    with open(os.path.join(args.out, "kernel_resources.md"), "w") as f:
        f.write(text)
    for r in dividing:
        print(f"divides inside a loop: {r['kernel']} on {r['target']} ({r['division'][1]} divisions)", file=sys.stderr)
    for r in narrow:
        print(f"no 128-bit global load: {r['kernel']} on {r['target']}", file=sys.stderr)
    for r in narrow_stores:
        print(f"no 128-bit global store: {r['kernel']} on {r['target']}", file=sys.stderr)
    if below_target:
        print(f"{below_target} depthwise tiled launches below the occupancy target (occupancy.csv)", file=sys.stderr)
    print(f"done: {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 1 if (spilling or no_hmma or no_mfma or stray_mfma or mismatched or dividing or narrow or narrow_stores or missing or
                 below_target) else 0


if __name__ == "__main__":
    sys.exit(main())
