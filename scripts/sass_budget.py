#!/usr/bin/env python3
"""The two budgets of a memory-bound kernel, counted from its SASS (no GPU needed):
instructions issued per DRAM byte in its main loop, and the bytes of global loads a thread has
in flight at once.

For each kernel of a cubin (nvdisasm -c's listing, with jump-table targets resolved) and a
model of one iteration of its main loop (KERNELS below: which loop, what the iteration must
contain, the DRAM bytes it moves), it finds the cheapest path once around that loop that
contains the instructions an iteration of the modelled case executes (so many 16-byte global
loads, so many stores, shared loads; the vector path rather than the element path, a padding
row skipped or not), counts the instructions on it, predicated ones included (they issue),
and follows the path to find the most global-load bytes issued and not yet consumed at any
point (bytes in flight per thread). The H200 issues about 7.9 thread-instructions per DRAM
byte at full bandwidth (132 SMs x 4 schedulers x 32 lanes x 1.98 GHz / 4.25 TB/s): the aim is
at most 4. Bytes in flight per SM = that per thread x the threads its registers let reside;
NVIDIA's CUB aims at 48 KiB on an H200.

Usage: scripts/sass_budget.py CUBIN [--kernel REGEX] [--path] (nvdisasm from the CUDA toolkit or
NVIDIA's PyPI package nvidia-cuda-nvdisasm; NVDISASM names it). scripts/kernel_resources.py
calls budgets() for its report.
"""

import argparse
import collections
import heapq
import os
import re
import shutil
import subprocess
import sys

ISSUE_LIMIT = 132 * 4 * 32 * 1.98e9 / 4.25e12  # thread-instructions per DRAM byte on an H200
TARGET = 4.0
CUB_BYTES_IN_FLIGHT = 48 * 1024

INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?);")
LABEL = re.compile(r"^(\.L_x_\d+):")
FUNCTION = re.compile(r"^\.text\.(\S+):")
TARGETS = re.compile(r"BRANCH_TARGETS ([.\w,]+)")
REGISTER = re.compile(r"\bR(\d+)\b")


def find_nvdisasm():
    for candidate in (os.environ.get("NVDISASM"), shutil.which("nvdisasm"), "/usr/local/cuda/bin/nvdisasm"):
        if candidate and os.path.exists(candidate):
            return candidate
    # NVIDIA's PyPI package (pip install nvidia-cuda-nvdisasm) puts it in a namespace package,
    # nvidia/cu13/bin/ or nvidia/cuda_nvdisasm/bin/ by its release: no __file__, so its paths.
    import glob
    import importlib.util
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(glob.glob(os.path.join(root, "*", "bin", "nvdisasm"))):
            return path
    return None


class Instruction:
    # (the opcode's base and load width once, not at each of the searches' many reads)
    def __init__(self, addr, pred, op, operands):
        self.addr, self.pred, self.op, self.operands = addr, pred, op, operands
        self.targets = []
        self.base = op.split(".")[0]
        self.load_bytes = 0
        if self.base in ("LDG", "LDGSTS"):
            self.load_bytes = next((size for width, size in ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1),
                                                             (".S8", 1)) if width in op), 4)

    def global_load_bytes(self):
        return self.load_bytes

    def registers(self):
        """(written, read) register numbers, by operand position: the first operand is written
        (but by stores, branches and the like, which write nothing)."""
        parts = [p.strip() for p in self.operands.split(",")] if self.operands else []
        regs = [[int(r) for r in REGISTER.findall(p)] for p in parts]
        if not regs or self.base in ("STG", "STS", "ST", "STL", "RED", "BRA", "BRX", "EXIT", "BAR", "RET", "CALL",
                                     "LDGSTS", "DEPBAR", "MEMBAR"):
            return [], [r for group in regs for r in group]
        written = regs[0]
        if written:  # vector results: R20 of a .128 load is R20..R23
            n = {16: 4, 8: 2}.get(self.global_load_bytes(), 1)
            if self.base == "LDS" and ".128" in self.op:
                n = 4
            elif self.base == "LDS" and ".64" in self.op:
                n = 2
            written = list(range(written[0], written[0] + n))
        return written, [r for group in regs[1:] for r in group]


def parse_listing(text):
    """{mangled function name: [Instruction]} with branch targets as instruction indices."""
    functions, current, labels, pending = {}, None, {}, []
    for line in text.splitlines():
        m = FUNCTION.match(line)
        if m:
            current = functions.setdefault(m.group(1), [])
            labels = {}
            continue
        if current is None:
            continue
        m = LABEL.match(line.strip())
        if m:
            labels[m.group(1)] = len(current)
            continue
        m = INSTRUCTION.match(line)
        if not m:
            continue
        ins = Instruction(int(m.group(1), 16), (m.group(2) or "").strip() or None, m.group(3), m.group(4))
        t = TARGETS.search(line)
        names = t.group(1).split(",") if t else re.findall(r"`\((\.L_x_\d+)\)", line)
        pending.append((ins, names, labels))
        current.append(ins)
    for ins, names, labels in pending:
        ins.targets = [labels[n] for n in names if n in labels]
    return functions


def successors(code, i):
    """Instruction indices that can follow instruction i."""
    ins = code[i]
    nxt = [i + 1] if i + 1 < len(code) else []
    if ins.base == "BRA":
        return ins.targets + (nxt if ins.pred else [])
    if ins.base == "BRX":
        return ins.targets
    if ins.base in ("EXIT", "RET"):
        return nxt if ins.pred else []
    return nxt


def loops(code):
    """Back edges (from, to) with to <= from: one per loop, its header `to`."""
    return [(i, t) for i in range(len(code)) for t in successors(code, i) if t <= i]


def basic_blocks(code):
    """[(first, last)] instruction spans of the basic blocks, and the block of each leader."""
    leaders = {0}
    for i, ins in enumerate(code):
        targets = successors(code, i)
        if ins.base in ("BRA", "BRX", "EXIT", "RET"):
            leaders.update(targets)
            if i + 1 < len(code):
                leaders.add(i + 1)
    starts = sorted(leaders)
    spans = [(s, (starts[n + 1] if n + 1 < len(starts) else len(code)) - 1) for n, s in enumerate(starts)]
    return spans, {s: n for n, (s, _) in enumerate(spans)}


def cheapest_iteration(code, header, latch, need, inside=False, shorter_than=None):
    """The cheapest path header -> ... -> latch -> header (instruction indices) whose
    instructions include need[k] of each class k (a predicate on Instruction); it may leave the
    span [header, latch] (compilers place cold paths after a loop) but comes back through the
    latch's edge; None if none does. (A search over basic blocks, each taken whole: the header
    is a branch target and the latch a branch, so both bound blocks.) inside: the path stays in
    the span (a loop whose paths all do: the search does not wander through the kernel).
    shorter_than: a path's length to beat (None where no path that long or longer exists): the
    search stops once every path left is at least that long. An A* search: a state's key is its
    cost plus the fewest instructions from its block to the latch that take what it still lacks
    of each class, the largest over the classes (a bound that never exceeds what is left, so the
    first path found is a cheapest), which leaves
    unsearched the many states whose counts differ off the loop's short way round (with each
    block's successors, bounds and counts computed once: one cubin of the 16-bit NCHW plane
    kernels in 17 s against 64, the same paths, counts and bytes in flight on it and on the
    nhwc_register, transposed, column and small-map kernels' cubins)."""
    classes = [v for _, v in sorted(need.items())]
    spans, block_of = basic_blocks(code)
    goal = tuple(n for _, n in classes)
    # Per block, once: its length, its modelled instructions (None where it has none), the blocks
    # it may go on to (back to the header only through the latch's edge, which closes the loop)
    # and, of those that reach the latch, their bounds.
    length = [last - first + 1 for first, last in spans]
    adds = [tuple(sum(1 for i in range(a, b + 1) if test(code[i])) for test, _ in classes) for a, b in spans]
    adds = [d if any(d) else None for d in adds]
    closes = [last == latch and header in successors(code, last) for _, last in spans]
    edges = [[block_of[n] for n in successors(code, last)
              if n != header and n in block_of and (not inside or header <= n <= latch)] for _, last in spans]
    end = next(b for b, (a, z) in enumerate(spans) if a <= latch <= z)
    to_latch = instructions_to_latch(edges, length, end)
    # Per class, the fewest instructions from a block through the latch that take r more of the
    # class's instructions (collecting_to_latch): the largest of them bounds what a state has
    # left, where to_latch alone (whatever the needs) had left a search of two tiles' needs 16
    # million states and 3 minutes (depthwise_nchw_matrix_plane's stride-2 walk).
    left = [collecting_to_latch(edges, length, [a[k] if a else 0 for a in adds], end, closes[end], n)
            for k, n in enumerate(goal)]

    def bound_of(block, counts):  # (None: the block cannot take what the state lacks)
        h = to_latch[block]
        for k, (c, n) in enumerate(zip(counts, goal)):
            if c < n:
                h2 = left[k][n - c].get(block)
                if h2 is None:
                    return None
                h = max(h, h2)
        return h

    start = (block_of[header], tuple(0 for _ in classes))
    if start[0] not in to_latch or bound_of(*start) is None:
        return None
    best = {start: 0}
    parent = {}
    heap = [(bound_of(*start), 0, start)]
    while heap:
        bound, cost, state = heapq.heappop(heap)
        if shorter_than is not None and bound >= shorter_than:
            return None
        if best.get(state, 1 << 60) < cost:
            continue
        block, counts = state
        d = adds[block]
        counted = counts if d is None else tuple(min(c + e, n) for c, e, n in zip(counts, d, goal))
        if closes[block] and counted == goal:
            path, key = [], state
            while True:
                a, b = spans[key[0]]
                path[:0] = range(a, b + 1)
                if key not in parent:
                    return path
                key = parent[key]
        cost += length[block]
        for nb in edges[block]:
            if nb not in to_latch:
                continue
            nxt = (nb, counted)
            if cost < best.get(nxt, 1 << 60):
                h = bound_of(nb, counted)
                if h is None:
                    continue
                best[nxt] = cost
                parent[nxt] = state
                heapq.heappush(heap, (cost + h, cost, nxt))
    return None


def collecting_to_latch(edges, length, adds, end, end_closes, most):
    """[r: {block: the fewest instructions from its first through block `end`'s last, closing
    the loop there, along a path whose blocks hold at least r instructions of a class}] for r
    from 0 to `most` (adds: each block's of the class; a path may pass `end` and come back to it
    before it closes). A shortest path per r, over the layers r' <= r: a block that adds a
    takes its rest from layer r - a, one that adds none from its own layer (Dijkstra from the
    blocks whose values the lower layers settle)."""
    into = collections.defaultdict(list)
    for b, nexts in enumerate(edges):
        for n in nexts:
            into[n].append(b)
    layers = []
    for r in range(most + 1):
        dist = {}
        if end_closes and adds[end] >= r:
            dist[end] = length[end]
        for b, nexts in enumerate(edges):
            if adds[b] and r > 0:
                lower = layers[max(0, r - adds[b])]
                rest = min((lower[n] for n in nexts if n in lower), default=None)
                if rest is not None and length[b] + rest < dist.get(b, 1 << 60):
                    dist[b] = length[b] + rest
        heap = [(d, b) for b, d in dist.items()]
        heapq.heapify(heap)
        while heap:
            d, b = heapq.heappop(heap)
            if d > dist[b]:
                continue
            for a in into[b]:
                if (adds[a] == 0 or r == 0) and d + length[a] < dist.get(a, 1 << 60):
                    dist[a] = d + length[a]
                    heapq.heappush(heap, (dist[a], a))
        layers.append(dist)
    return layers


def instructions_to_latch(edges, length, end):
    """{block: the fewest instructions from its first through block `end`'s last} along edges
    (block -> the blocks it may go on to), for the blocks that reach `end`."""
    into = collections.defaultdict(list)  # block -> the blocks that can go on to it
    for b, nexts in enumerate(edges):
        for n in nexts:
            into[n].append(b)
    dist = {end: length[end]}
    heap = [(dist[end], end)]
    while heap:
        d, b = heapq.heappop(heap)
        if d > dist[b]:
            continue
        for a in into[b]:
            if d + length[a] < dist.get(a, 1 << 60):
                dist[a] = d + length[a]
                heapq.heappush(heap, (dist[a], a))
    return dist


def peak_in_flight(code, path):
    """Most global-load bytes issued and not yet read along `path` (bytes in flight per thread)."""
    outstanding = {}  # register -> (load id, bytes)
    loads = {}
    peak = 0
    for n, i in enumerate(path):
        ins = code[i]
        written, read = ins.registers()
        for r in read:
            if r in outstanding:
                loads.pop(outstanding[r][0], None)
        for r in list(outstanding):
            if outstanding[r][0] not in loads:
                del outstanding[r]
        size = ins.global_load_bytes()
        if size and ins.base == "LDG":
            loads[n] = size
            for r in written:
                outstanding[r] = (n, size)
        peak = max(peak, sum(loads.values()))  # (asynchronous copies: their stages below)
    # Asynchronous copies stay in flight across iterations: the wait (DEPBAR.LE SB0, n) leaves the
    # n newest stages' copies outstanding while the oldest lands, so n + 1 stages are in flight.
    # A stage is what the path copies between waits (an iteration of several stages waits once
    # a stage).
    copied = sum(code[i].global_load_bytes() for i in path if code[i].base == "LDGSTS")
    waits = [int(m.group(1), 0) for i in path if code[i].base == "DEPBAR"
             for m in [re.search(r"SB0,\s*(0x[0-9a-f]+|\d+)", code[i].operands)] if m]
    if copied and waits:
        peak = max(peak, copied // len(waits) * (min(waits) + 1))
    return peak


def is_op(name):
    return lambda ins: ins.op.startswith(name)


# Models of one main-loop iteration per kernel (a regular expression on the demangled name):
# what its instructions must include, the DRAM bytes it moves (the layer's minimum bytes per
# output x its outputs), and which loop: the outermost one that loads from global memory.
# The depthwise models' epilogue: relu6, MobileNetV2's activation (the path through its case of
# the epilogue's activation switch, which every output of the iteration then takes: a clamp,
# fp32 or packed 16-bit, on the path).
RELU6 = (lambda ins: ins.op.startswith("FMNMX") or ins.op.startswith("HMNMX2"), 1)

# The data gradient's gate (kernels/common/gradient_gate.hpp: gate_kind none 0, clamp 1, scale 2)
# from the kernel's template argument; a scale-gated iteration must take one product for each
# two elements it gates at least (16-bit pairs packed, HMUL2 or ptxas's HFMA2 with a zero
# addend; float FMUL one each): a path that
# skips the gate's loop, on its predicate, would leave the gate uncounted.
NO_GATE, CLAMP, SCALE = 0, 1, 2


def gate_of(argument):
    return int(argument) if argument else NO_GATE


def gate_needs(need, gate, elements):
    """Adds to `need` the scale gate's products for the `elements` the iteration gates."""
    if gate == SCALE:
        need["scale products"] = (lambda ins: ins.op.split(".")[0] in ("HMUL2", "HFMA2", "FMUL"), elements // 2)


def gate_label(gate):
    return {NO_GATE: "", CLAMP: ", gated", SCALE: ", scale"}[gate]


def register_model(t, k, s, gate=NO_GATE):
    """depthwise_nhwc_register (kernels/depthwise/nhwc_register.hpp): a strip of tw outputs x v
    channels; its k input rows of iw vectors each, tw vector stores, the k x k taps' weights as
    16-byte shared loads. Gated (the data gradient): each input vector and the saved vector at its
    place, no activation after."""
    gated = gate != NO_GATE
    sixteen = t in ("half", "bfloat16")
    v = 4 if sixteen and (k == 5 or s == 2) else (8 if sixteen else (2 if s == 2 else 4))
    tw = 8 if k == 5 and s == 1 and not gated else 3 if not sixteen and k == 5 and s == 2 else 4
    iw = (tw - 1) * s + k
    size = 2 if sixteen else 4
    width = "LDG.E.128" if v * size == 16 else "LDG.E.64"
    store = "STG.E.128" if v * size == 16 else "STG.E.64"
    tensors = 2 if gated else 1  # read per input: grad_output and the saved tensor
    need = {"vector loads": (is_op(width), k * iw * tensors), "vector stores": (is_op(store), tw),
            "weight reads": (is_op("LDS.128"), k * k * v // 4)}
    if not gated:
        need["relu6"] = RELU6
    gate_needs(need, gate, k * iw * v)
    # a strip's outputs: tw x v elements; each output reads s^2 inputs (of each tensor) and writes one (minimum bytes)
    return need, tw * v * size * (s * s * tensors + 1), "strip: %d outputs x %d channels%s" % (tw, v, gate_label(gate))


def small_map_streams(s, o):
    """kernels/depthwise/small_map.hpp small_map_streams: whether a thread holds its box in words and
    widens it a row at a time."""
    return s * o * s * o + o * o > 64


def small_map_vector(size, s, o):
    """kernels/depthwise/small_map.hpp small_map_vector: channels a thread takes."""
    v, b = 16 // size, s * o
    if small_map_streams(s, o):
        while v > 1 and b * b * v * size // 4 + o * o * v > 96:
            v //= 2
    else:
        while v > 1 and (b * b + o * o) * v > 64:
            v //= 2
    return v


def small_map_models(t, k, s, o, gate=NO_GATE):
    """depthwise_small_map (kernels/depthwise/small_map.hpp): one image's map of o x o outputs for
    a thread's v channels, from its whole input of b x b pixels (b = s o; at stride 2 onto 4 x 4
    maps held as loaded, in words, and widened a row at a time), each loaded (and gated: the data
    gradient's saved tensor too) once; the taps' weights as shared loads, of each
    tap any output uses (v floats a tap); relu6 through the forward's stores. NHWC: a vector
    access a pixel (v elements); NCHW (whose planes lie one after another): 16-byte accesses,
    the v planes' runs. DRAM: the inputs and the outputs, the minimum."""
    size = 2 if t in ("half", "bfloat16") else 4
    v, b = small_map_vector(size, s, o), s * o
    tensors = 2 if gate != NO_GATE else 1
    width = {16: "LDG.E.128", 8: "LDG.E.64", 4: None}[v * size]
    # (nvcc stores float pairs, 8 bytes a pixel, as two words: any store of the path's)
    store = {16: "STG.E.128", 8: "STG.E", 4: None}[v * size]
    word_load = lambda ins: ins.op in ("LDG.E", "LDG.E.CONSTANT")
    pad = k // 2
    taps = sum(1 for ky in range(k) for kx in range(k)
               if any(0 <= oy * s - pad + ky < b and 0 <= ox * s - pad + kx < b for oy in range(o) for ox in range(o)))
    reads = -(-taps * v // 4)  # (v floats a tap; ptxas joins two taps' pairs into one 16-byte load)
    dram = v * size * (o * o + b * b * tensors)
    label = "%s%d x %d map x %d channels%s" % ("stride 2 onto a " if s == 2 else "a ", o, o, v, gate_label(gate))
    nhwc = {"vector loads": (is_op(width) if width else word_load, b * b * tensors),
            "vector stores": (is_op(store) if store else (lambda ins: ins.op == "STG.E"), o * o),
            "weight reads": (is_op("LDS"), reads)}
    # NCHW: the 16-byte pieces of the v planes' inputs and outputs
    nchw = {"vector loads": (is_op("LDG.E.128"), v * b * b * size // 16 * tensors),
            "vector stores": (is_op("STG.E.128"), v * o * o * size // 16), "weight reads": (is_op("LDS"), reads)}
    models = [(nhwc, dram, "NHWC: " + label, "cheapest"), (nchw, dram, "NCHW: " + label, "cheapest")]
    for need, _, _, _ in models:
        if gate == NO_GATE:
            need["relu6"] = RELU6
        gate_needs(need, gate, b * b * v)
    return models


def nchw_register_model(t, k, s, gate=NO_GATE):
    """depthwise_nchw_register (kernels/depthwise/nchw_register.hpp) in its 16-byte form: one band
    of th output rows x vo outputs (16 bytes of a row) of one plane, the input rows it reads of s
    16-byte loads each (the halo loads are predicated in the same stretch): th s, the k - s above
    them kept from the band before where bands keep them (nchw_register_rolls: a thread's walk
    after its first band), else (th - 1) s + k; th 16-byte stores. Gated (the data gradient): the
    saved tensor's rows too, no activation after."""
    gated = gate != NO_GATE
    size = 2 if t in ("half", "bfloat16") else 4
    vo = 16 // size
    # nchw_register_rows (NVIDIA)
    th = 2 if (k, s) == (5, 2) else (2 if gated and k == 5 else 4) if size == 4 else \
        (4 if gated else 8) if (k, s) == (3, 1) else 2
    # the band's new input rows: the k - s above them are the band before's where bands keep them
    rolls = not (size == 2 and ((k, s) == (3, 1) and not gated or (k, s) == (5, 2)))
    rows = th * s if rolls else (th - 1) * s + k
    tensors = 2 if gated else 1
    need = {"vector loads": (is_op("LDG.E.128"), rows * s * tensors), "stores": (is_op("STG.E.128"), th)}
    if not gated:
        need["relu6"] = RELU6
    gate_needs(need, gate, rows * s * vo)
    return need, th * vo * size * (s * s * tensors + 1), "band: %d rows x %d outputs%s" % (th, vo, gate_label(gate))


def register_transposed_model(t, k, gate=NO_GATE):
    """depthwise_nhwc_register_transposed (kernels/depthwise/nhwc_register_transposed.hpp): one
    block of 2 x 4 grad_input elements x v channels inside the map, an iteration of a thread's walk
    down a column of blocks (its innermost loop): its (k + 1) / 2 dz rows of 2 + (k - 1) / 2
    vectors (and the saved tensor's where gated), but only the last of them where the walk keeps
    the (k - 1) / 2 rows a block shares with the next (transposed_keeps_rows: 16-bit 5x5
    filters), whose vectors are then copied into the thread's ring a block ahead and read back
    (transposed_ring_stages: 8-byte asynchronous copies, a 16-byte read a vector with the saved
    tensor's beside it where gated, else 8), the k x k taps' weights as 16-byte shared loads, 8
    vector stores. DRAM: the block's elements, and a quarter as many of dz (of each tensor), the
    minimum."""
    size = 2 if t in ("half", "bfloat16") else 4
    v = 4 if size == 2 and k == 5 else 16 // size
    keeps = size == 2 and k == 5
    rows, cols = 1 if keeps else (k + 1) // 2, 2 + (k - 1) // 2
    width = "LDG.E.128" if v * size == 16 else "LDG.E.64"
    store = "STG.E.128" if v * size == 16 else "STG.E.64"
    tensors = 2 if gate != NO_GATE else 1
    need = {"vector stores": (is_op(store), 8), "weight reads": (is_op("LDS.128"), k * k * v // 4)}
    if keeps:
        need["ring copies"] = (is_op("LDGSTS"), cols * tensors)
        if tensors == 2:
            need["weight reads"] = (is_op("LDS.128"), k * k * v // 4 + cols)  # (and the ring's reads)
        else:
            need["ring reads"] = (is_op("LDS.64"), cols)
    else:
        need["vector loads"] = (is_op(width), rows * cols * tensors)
    gate_needs(need, gate, rows * cols * v)
    return [(need, 8 * v * size * (1 + tensors / 4), "block: 2 x 4 elements x %d channels%s" % (v, gate_label(gate)), True)]


def nchw_register_transposed_model(t, k, gate=NO_GATE, load_bytes=None):
    """depthwise_nchw_register_transposed (kernels/depthwise/nchw_register_transposed.hpp) in its
    16-byte form: one band of rb grad_input rows x 16 bytes of a plane inside the map: its
    rb / 2 + (k - 1) / 2 dz rows (rb / 2 where bands keep the (k - 1) / 2 they share,
    nchw_transposed_rolls: a walk's steady state) of 16 / size / 2 + (k - 1) / 2 element loads, or
    where the windows load as words (load_bytes 4 of a 16-bit type: rb 8, nchw_transposed_rows)
    the 4 aligned words that hold a 5x5 window's 6 elements (its first element odd: padding 2),
    and the saved tensor's where gated; the taps in registers, rb 16-byte stores. DRAM: the band's
    elements, and a quarter as many of dz (of each tensor), the minimum."""
    size = 2 if t in ("half", "bfloat16") else 4
    words = load_bytes == 4 and size == 2
    tw, rb = 16 // size, 8 if words else 4
    rolls = size == 2 and k == 5 and gate != NO_GATE
    rows, cols = rb // 2 + (0 if rolls else (k - 1) // 2), tw // 2 + (k - 1) // 2
    if words:
        cols = (1 + cols + 1) // 2
    # (half's words: ptxas loads the first and the last as the one element of each the window
    # uses, which widen as halves; bfloat16's all whole)
    element = (lambda ins: ins.op.startswith("LDG.E.U16") or (words and ins.op in ("LDG.E", "LDG.E.CONSTANT"))) \
        if size == 2 else (lambda ins: ins.op in ("LDG.E", "LDG.E.CONSTANT"))
    tensors = 2 if gate != NO_GATE else 1
    need = {"word loads" if words else "element loads": (element, rows * cols * tensors), "stores": (is_op("STG.E.128"), rb)}
    gate_needs(need, gate, rows * (tw // 2 + (k - 1) // 2))
    return need, rb * tw * size * (1 + tensors / 4), "band: %d rows x %d elements%s%s" % (
        rb, tw, ", dz as words" if words else "", gate_label(gate))


def register_column_model(k, gate, v=1):
    """depthwise_nhwc_register_column (kernels/depthwise/nhwc_register_column.hpp): k output rows of
    a thread's walk (its loop, unrolled k rows at a time), tw outputs of v float channels each
    (column_vector: 2 for 3x3 filters where the plan allows; column_strip: 8 outputs for one
    channel, 4 for two): a new input row a row, tw + k - 1 pixels' vectors and the saved tensor's
    at their places (4- or 8-byte loads), each gated, and tw stores. The walk is compiled twice,
    its columns all inside the map or not (a compile-time form): the cheapest is the inside one,
    which the strips away from the map's left and right edges take (the edge form, all a 14x14
    map's strips, counted 1883 instructions for 5x5 through the scale gate, 3.92 a DRAM byte,
    against 1585, 3.30, on sm_90 SASS with the stores stepped from a held pointer; 2069 and 1637
    before), as the other kernels' models count their inside paths."""
    tw = 8 if v == 1 else 4  # column_strip (NVIDIA)
    iw = tw + k - 1
    load, store = ("LDG.E", "STG.E") if v == 1 else ("LDG.E.64", "STG.E.64")
    need = {"loads": (is_op(load), 2 * iw * k), "stores": (is_op(store), tw * k)}
    gate_needs(need, gate, iw * k * v)
    # k rows of tw outputs: each reads grad_output and the saved tensor and writes grad_input (4 bytes each)
    return [(need, k * tw * v * 4 * 3, "%d rows of %d outputs x %d channels%s" % (k, tw, v, gate_label(gate)), "cheapest")]


def register_weight_model(t, k, s, gated=False):
    """depthwise_nhwc_register_weight (kernels/depthwise/nhwc_register_weight.hpp): one strip of
    tw = 4 outputs x v channels (4 for 3x3 filters, 2 for 5x5) inside the map: tw dz vector
    loads (and tw of the saved tensor where gated: relu6, the clamp), k input rows of iw vectors,
    no stores (the sums stay in registers)."""
    size = 2 if t in ("half", "bfloat16") else 4
    v = 4 if k == 3 else 2
    tw, iw = 4, 3 * s + k
    width = {16: "LDG.E.128", 8: "LDG.E.64", 4: "LDG.E.CONSTANT"}[v * size]
    load = (lambda ins: ins.op == width or ins.op == width + ".CONSTANT") if v * size != 4 else \
        (lambda ins: ins.op in ("LDG.E", "LDG.E.CONSTANT"))
    tensors = 2 if gated else 1  # dy, and the saved tensor, per output
    need = {"vector loads": (load, k * iw + tw * tensors)}
    if gated:  # (the saved loads are predicated on its pointer: the clamp's products put the path through the gate)
        need["gate products"] = (is_op("FMUL"), tw * v)
    # a strip's outputs: tw x v elements, each reading tensors outputs' elements and s^2 inputs (minimum bytes)
    return need, tw * v * size * (tensors + s * s), "strip: %d outputs x %d channels%s" % (tw, v, ", relu6" if gated else "")


def stream_model(t, nt):
    """pointwise_nhwc_stream (kernels/pointwise/nhwc_stream.hpp), the streaming form: one 32-pixel
    tile of a warp's slice of 8 nt outputs, for a layer of `chunks` 32-channel chunks: 4 16-byte
    loads a chunk (the tile's pixels; the last chunk's go to the next tile), ceil(nt / 2) x 2
    weight fragment reads and 8 ceil(nt / 2) products a chunk, and a relu epilogue (relu applied
    as each word is packed: nt a pixel, then transposed; 4 pixels of nt words stored). A layer's
    budget: STREAM_LAYERS."""
    def need(c_in, c_out):  # (a chunk's weight reads and products come with its loads: not tracked)
        held, form_nt, chunks, _, _ = stream_form(c_in, c_out)
        if held or form_nt != nt:
            return None
        return {"16-byte loads": (is_op("LDG.E.128"), 4 * chunks), "relu": (is_op("F2FP.RELU"), 4 * nt),
                "stores": (is_op("STG"), 4 if nt != 3 else 12)}
    return need


def stream_held_model(t, nb, kc):
    """pointwise_nhwc_stream_held (kernels/pointwise/nhwc_stream.hpp), the held form: one 32-pixel
    tile of a warp, its chunks loaded once (4 16-byte loads each), then for each of the block's
    slices of 8 nb outputs the slice's products and a relu epilogue (nb packed words a pixel,
    transposed; 4 pixels of one store, or of three at nb = 3). kc: the kernel's most chunks (2: one
    or two; 4: three or four)."""
    def need(c_in, c_out):
        held, form_nb, chunks, slices, _ = stream_form(c_in, c_out)
        if not held or form_nb != nb or (2 if chunks <= 2 else 4) != kc:
            return None
        return {"16-byte loads": (is_op("LDG.E.128"), 4 * chunks), "relu": (is_op("F2FP.RELU"), 4 * nb * slices),
                "stores": (is_op("STG"), (4 if nb != 3 else 12) * slices)}
    return need


def header_constant(header, name):
    """An integer constant of a header under include/dsconv (`name = value;`)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include", "dsconv", header)
    with open(path) as f:
        return int(re.search(name + r" = (\d+);", f.read()).group(1))


FUSED_STRIP_OUTPUTS = header_constant("kernels/block/fused_tile.hpp", "fused_strip_outputs")


def fused_strip_models(t, project):
    """inverted_residual_fused_nhwc's step 3 (kernels/block/fused_depthwise.hpp): one strip of
    the depthwise filter over the expanded slice in shared memory, 7 outputs of a lane's channel,
    for each form the kernel compiles (3x3 and 5x5, strides 1 and 2): each filter row's window
    of (7 - 1) s + k values and its k taps read from shared memory, 7 k^2 products, relu6, 7
    stores (the depthwise outputs to shared memory where the kernel projects, to global memory
    where it does not). No DRAM traffic of its own: its bytes are those the unfused sequence
    moves for the same 7 outputs, the expanded tensor written and read (s^2 values an output)
    and the depthwise output written and read, which the fused kernel keeps on chip; so the
    instructions per byte say how its issue compares with the unfused sequence's DRAM time.
    (A shared-memory loop: its bytes in flight are none.)"""
    size = 2 if t in ("half", "bfloat16") else 4
    store = is_op("STS") if project else is_op("STG")
    models = []
    for k, s in ((3, 1), (3, 2), (5, 1), (5, 2)):
        window = (FUSED_STRIP_OUTPUTS - 1) * s + k
        need = {"window and tap reads": (is_op("LDS"), k * (window + k)),
                "products": (is_op("FFMA"), FUSED_STRIP_OUTPUTS * k * k),
                "stores": (store, FUSED_STRIP_OUTPUTS), "relu6": RELU6}
        dram = FUSED_STRIP_OUTPUTS * size * 2 * (s * s + 1)
        models.append((need, dram, "step 3: a strip of %d outputs, %dx%d s%d" % (FUSED_STRIP_OUTPUTS, k, k, s), True))
    return models


def fused_expand_model(t):
    """inverted_residual_fused_nhwc's step 2 on mma.sync (fused_nhwc.hpp: fused_mma_expand): one
    16-row tile of the expanded slice (its 16 channels: two 8-column products) with one K stage of
    the input (16 channels of a 16-bit type, 8 floats in TF32; each more adds the K loop's
    instructions), its sums stored with the
    mask and relu6 as four 8-byte stores, a lane's 8 values. Its bytes: those of the unfused
    sequence for the tile's 8 values a lane, the expanded tensor written and read again."""
    size = 2 if t in ("half", "bfloat16") else 4
    need = {"products": (is_op("HMMA"), 2), "stores": (is_op("STS.64"), 4), "relu6": RELU6}
    return need, 8 * 2 * size, "step 2 on mma.sync: a 16-row tile, one K stage", True


def mma_stage_bytes(bm, bn):
    """mma_tile::stage_bytes (kernels/pointwise/gemm_mma.hpp): 64 where three stages fit 48 KiB
    whatever the layouts (n_rows pad 8 rows), else 32."""
    return 64 if 3 * 64 * (bm + bn + 16) <= 48 * 1024 else 32


# mma_sync_unit::async_stages: the K stages the asynchronous path keeps (four fit 48 KiB for
# every tile, type and layout: at most (bm + bn + 16) rows of a stage's bytes each).
MMA_STAGES = 4


def mma_model(t, bm, bn, wm, wn):
    """pointwise_gemm_mma on mma.sync (kernels/pointwise/gemm_mma.hpp), its asynchronous path
    (aligned operands, sm_80+) over whole steps: a group of MMA_STAGES shared-memory stages of K,
    each 64 bytes of operand per row where three such stages fit a block's 48 KiB
    (mma_tile::stage_bytes), else 32: each thread's 16-byte copies of the A and B tiles, its
    warp's HMMA (m16n8k16 for 16-bit types; for float m16n8k8, three a product: 3xTF32). DRAM
    bytes: the activation operand's tile, bm x the stage bytes (the tiles are square: A or B; the
    weights come from L2), over the block's threads."""
    size = 2 if t in ("half", "bfloat16") else 4
    threads = wm * wn * 32
    stage = mma_stage_bytes(bm, bn)
    assert MMA_STAGES * stage * (bm + bn + 16) <= 48 * 1024
    copies = (bm + bn) * stage // 16 // threads
    hmma = (bm // wm // 16) * (bn // wn // 8) * (stage // 32) * (1 if size == 2 else 3)
    need = {"16-byte copies": (is_op("LDGSTS"), MMA_STAGES * copies), "products": (is_op("HMMA"), MMA_STAGES * hmma)}
    return need, MMA_STAGES * bm * stage / threads, "%d %d-byte K stages of the %dx%d tile" % (MMA_STAGES, stage, bm, bn)


def mma_layer_budget(group_instructions, t, bm, bn, wm, wn, c_in, c_out):
    """Instructions per DRAM byte of an NHWC forward layer on a pointwise_gemm_mma tile (its main
    loop only, a stage's instructions those of a group over MMA_STAGES): every column of tiles
    (c_out / bn of them) reads all of a pixel row's K (the activations again from L2),
    ceil(c_in / bk) stages, while the layer moves (c_in + c_out) elements a pixel from and to DRAM."""
    size = 2 if t in ("half", "bfloat16") else 4
    stage = mma_stage_bytes(bm, bn)
    bk = stage // size
    threads = wm * wn * 32
    columns, stages = -(-c_out // bn), -(-c_in // bk)
    return columns * stages * group_instructions / MMA_STAGES * threads / (bm * size * (c_in + c_out))


# (c_in, c_out) of 1x1 layers whose budget the stream kernel's report gives.
STREAM_LAYERS = [(32, 16), (16, 96), (96, 24), (24, 144), (144, 24), (144, 32), (192, 64), (384, 96), (576, 160),
                 (960, 160), (160, 960), (960, 320), (672, 112), (1152, 192), (32, 192), (40, 240), (64, 384),
                 (80, 480), (96, 576), (112, 672)]

# A block's staged weights (and the held form's biases) within 48 KiB (stream_shared_cap).
STREAM_SHARED_CAP = 48 * 1024


def stream_slice_tiles(c_in, c_out):
    chunks = (c_in + 31) // 32
    for nt in (4, 3, 2, 1):
        if (c_out // 8) % nt == 0 and nt * chunks * 512 <= STREAM_SHARED_CAP:
            return nt
    return 0


def stream_form(c_in, c_out):
    """(held, nb, chunks, slices a block walks, grid rows) as dispatch/pointwise_stream_plan.hpp
    plans the layer: the held form where K is at most four chunks, a block taking the most of the
    layer's slices whose weights and biases fit; else the streaming form, a slice a grid row."""
    chunks, nb = (c_in + 31) // 32, stream_slice_tiles(c_in, c_out)
    slices = c_out // (8 * nb) if nb else 0
    if chunks <= 4 and nb:
        per_slice = nb * chunks * 512 + (nb + 1) // 2 * 512  # its weights, and its biases a lane's quads
        block = max(d for d in range(1, slices + 1) if slices % d == 0 and (d == 1 or d * per_slice <= STREAM_SHARED_CAP))
        return True, nb, chunks, block, slices // block
    return False, nb, chunks, 1, slices


def stream_layer_budget(tile_instructions, c_in, c_out):
    """Instructions per DRAM byte of a layer: each of its grid rows (a slice of outputs, or the
    held form's block of slices) runs a warp's tile path on every 32-pixel tile, which moves
    32 x (c_in + c_out) x 2 bytes: 2 (c_in + c_out) a lane."""
    return stream_form(c_in, c_out)[4] * tile_instructions / (2.0 * (c_in + c_out))


KERNELS = [
    (re.compile(r"inverted_residual_fused_nhwc<(float|dsconv::half|dsconv::bfloat16|half|bfloat16), (true|false)(, mma_sync_unit)?"),
     lambda m: fused_strip_models(m.group(1).replace("dsconv::", ""), m.group(2) == "true") +
     ([fused_expand_model(m.group(1).replace("dsconv::", ""))] if m.group(3) else [])),
    (re.compile(r"pointwise_gemm_mma<(float|dsconv::half|dsconv::bfloat16|half|bfloat16), "
                r"(?:dsconv::)?(?:kernels::)?mma_tile<(\d+), (\d+), (\d+), (\d+), \d+, (?:dsconv::)?(?:kernels::)?mma_sync_unit, true, void>"),
     lambda m: mma_model(m.group(1).replace("dsconv::", ""), *(int(m.group(i)) for i in range(2, 6)))),
    (re.compile(r"pointwise_nhwc_stream<(dsconv::half|dsconv::bfloat16|half|bfloat16), (\d)>"),
     lambda m: stream_model(m.group(1), int(m.group(2)))),
    (re.compile(r"pointwise_nhwc_stream_held<(dsconv::half|dsconv::bfloat16|half|bfloat16), (\d), (\d)>"),
     lambda m: stream_held_model(m.group(1), int(m.group(2)), int(m.group(3)))),
    (re.compile(r"depthwise_nchw_register<(float|dsconv::half|dsconv::bfloat16|half|bfloat16), (\d), (\d)(?:, \(dsconv::detail::gate_kind\)(\d))?>"),
     lambda m: nchw_register_model(m.group(1).replace("dsconv::", ""), int(m.group(2)), int(m.group(3)),
                                   gate_of(m.group(4)))),
    (re.compile(r"depthwise_nhwc_register_weight<(float|dsconv::half|dsconv::bfloat16|half|bfloat16), (\d), (\d)>"),
     lambda m: register_weight_model(m.group(1).replace("dsconv::", ""), int(m.group(2)), int(m.group(3)))),
    (re.compile(r"depthwise_nhwc_register_weight<(float|dsconv::half|dsconv::bfloat16|half|bfloat16), (\d), (\d)>"),
     lambda m: register_weight_model(m.group(1).replace("dsconv::", ""), int(m.group(2)), int(m.group(3)), True)),
    (re.compile(r"depthwise_nhwc_matrix<(dsconv::half|dsconv::bfloat16|half|bfloat16), (\d), (\d)"
                r"(?:, \(dsconv::detail::gate_kind\)(\d))?(?:, (\d+))?>"),
     lambda m: matrix_model(m.group(1).replace("dsconv::", ""), int(m.group(2)), int(m.group(3)),
                            gate_of(m.group(4)), int(m.group(5) or 16))),
    (re.compile(r"depthwise_nchw_matrix<(dsconv::half|dsconv::bfloat16|half|bfloat16), (\d), (\d)"
                r"(?:, \(dsconv::detail::gate_kind\)(\d))?>"),
     lambda m: nchw_matrix_model(m.group(1).replace("dsconv::", ""), int(m.group(2)), int(m.group(3)),
                                 gate_of(m.group(4)))),
    (re.compile(r"depthwise_nchw_matrix_plane<(dsconv::half|dsconv::bfloat16|half|bfloat16), (\d), (\d)"
                r"(?:, \(dsconv::detail::gate_kind\)(\d))?>"),
     lambda m: nchw_matrix_plane_models(int(m.group(2)), int(m.group(3)), gate_of(m.group(4)))),
    (re.compile(r"depthwise_nchw_register_transposed<(float|dsconv::half|dsconv::bfloat16|half|bfloat16), (\d)"
                r"(?:, \(dsconv::detail::gate_kind\)(\d))?(?:, (\d))?>"),
     lambda m: nchw_register_transposed_model(m.group(1).replace("dsconv::", ""), int(m.group(2)), gate_of(m.group(3)),
                                              int(m.group(4) or 0))),
    (re.compile(r"depthwise_nhwc_register_transposed<(float|dsconv::half|dsconv::bfloat16|half|bfloat16), (\d)"
                r"(?:, \(dsconv::detail::gate_kind\)(\d))?>"),
     lambda m: register_transposed_model(m.group(1).replace("dsconv::", ""), int(m.group(2)), gate_of(m.group(3)))),
    (re.compile(r"depthwise_nhwc_register_column<(\d), \(dsconv::detail::gate_kind\)(\d), (\d)>"),
     lambda m: register_column_model(int(m.group(1)), gate_of(m.group(2)), int(m.group(3)))),
    (re.compile(r"depthwise_small_map<(float|dsconv::half|dsconv::bfloat16|half|bfloat16), (\d), (\d), (\d)"
                r"(?:, \(dsconv::detail::gate_kind\)(\d))?>"),
     lambda m: small_map_models(m.group(1).replace("dsconv::", ""), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                                gate_of(m.group(5)))),
    (re.compile(r"depthwise_nhwc_register<(float|dsconv::half|dsconv::bfloat16|half|bfloat16), (\d), (\d)(?:, \(dsconv::detail::gate_kind\)(\d))?>"),
     lambda m: register_model(m.group(1).replace("dsconv::", ""), int(m.group(2)), int(m.group(3)),
                              gate_of(m.group(4)))),
]


def without_parameters(demangled):
    """A demangled function's name without its parameter list: up to the '(' that opens the last
    parenthesised group (template arguments may hold parentheses too: (dsconv::detail::gate_kind)1)."""
    if not demangled.endswith(")"):
        return demangled
    depth = 0
    for i in range(len(demangled) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(demangled[i], 0)
        if depth == 0:
            return demangled[:i]
    return demangled


def matrix_model(t, k, s, gate=NO_GATE, ts=16):
    """depthwise_nhwc_matrix (kernels/depthwise/nhwc_matrix.hpp): one tile of ts x ts output
    pixels x 256 / ts^2 channel vectors (256 pixel vectors: 16 x 16 x 1 or 8 x 8 x 4), a block of
    4 warps: each thread's 16-byte asynchronous copies of the tile its ring's stages - 1 ahead
    ((ts - 1) s + k)^2 pixel vectors a channel vector, over the 128 threads; their bytes in
    flight are that many stages' copies), and for each of its warp's four products
    (16 output pixels each) a fragment load and a product per tap pair (HMMA: (k^2 + 1) / 2 a
    product) and a word store per lane and pixel (2 a product), each through relu6 (packed: the
    loop of the relu6 case, not another activation's clamp), on a tile inside the map. Gated (the
    data gradient): each input vector and the saved vector at its place, no activation after.
    DRAM: the tile's 256 x 16 bytes of output and s^2 as many of input (twice, gated: the saved
    tensor), the minimum, over the block's threads."""
    side, threads, rows = (ts - 1) * s + k, 128, 4
    vectors = 256 // (ts * ts)
    pairs = (k * k + 1) // 2
    tensors = 2 if gate != NO_GATE else 1
    each = -(-vectors * side * side // threads)
    need = {"vector copies": (is_op("LDGSTS.E.BYPASS.128"), tensors * each),
            "products": (is_op("HMMA"), rows * pairs), "fragment loads": (is_op("LDSM"), rows * pairs),
            "stores": (lambda ins: ins.op == "STG.E", 2 * rows)}
    gate_needs(need, gate, 8 * each)
    if gate == NO_GATE:
        need["relu6"] = (is_op("HMNMX2"), 2 * rows)
    # (the walk is compiled once per activation and pre-activation store: the cheapest)
    return [(need, 256 * 16 * (1 + s * s * tensors) // threads,
             "a %d x %d tile of %d channels" % (ts, ts, 8 * vectors) + gate_label(gate), "cheapest")]


def nchw_matrix_model(t, k, s, gate=NO_GATE):
    """depthwise_nchw_matrix (kernels/depthwise/nchw_matrix.hpp) in its 16-byte form: one warp
    tile of 16 x 16 outputs at the same place of im planes of a channel (two images at stride 1,
    one at stride 2), inside the map. The forward: each lane's asynchronous copies of a tile its
    ring's stages - 1 ahead ((15 s + k) rows x 16 s columns an image, two 8-byte copies a 16-byte
    item, and its halo words, 4-byte copies: a left one a row, and a right one where the filter
    reaches past the columns under the outputs; every lane all of its items' copies; their bytes
    in flight are that many stages' copies), and where the halo words have columns to clear, the
    lane's own landed halo words read back, masked and stored. The data gradient: the next tile's
    16-byte loads and halo words of both tensors, gated and stored to shared memory (two 8-byte
    stores a 16-byte load). Then a fragment load per window and filter row (2 at stride 1, 3 at
    stride 2) and a product per n-tile and band (2, 4), an image each, four word stores a lane an
    image, through relu6 in the forward. DRAM: the tile's 256 outputs and s^2 as many inputs (of
    each tensor) an image, the minimum, over the warp's 32 lanes."""
    im = 2 if s == 1 else 1
    rows = 15 * s + k
    right_halo = 15 * s + k - k // 2 > 16 * s
    halo_words = 1 + (1 if right_halo else 0)
    main = -(-rows * 2 * s // 32)  # 16-byte items a row: 16 s columns
    halo = -(-rows * halo_words // 32)
    need = {"products": (is_op("HMMA"), im * k * 2 * s), "fragment loads": (is_op("LDSM"), im * k * (2 if s == 1 else 3)),
            "stores": (lambda ins: ins.op == "STG.E", 4 * im)}
    if gate == NO_GATE:
        # (columns to clear: a 3x3 filter's left word holds column -2, and a right word at stride
        # 2 column 16 s + 1)
        masks = k == 3 or (right_halo and s == 2)
        need["vector copies"] = (lambda ins: ins.op == "LDGSTS.E.64", im * main * 2)
        need["halo copies"] = (lambda ins: ins.op == "LDGSTS.E", im * halo)
        if masks:
            need["halo words cleared"] = (is_op("STS"), im * halo)
        need["relu6"] = (RELU6[0], 4 * im)  # (on every output word: each image's stores, not the pre-activation's)
        tensors = 1
    else:
        tensors = 2
        need["vector loads"] = (is_op("LDG.E.128"), im * tensors * main)
        need["halo loads"] = (lambda ins: ins.op in ("LDG.E", "LDG.E.CONSTANT"), im * tensors * halo)
        need["staging stores"] = (is_op("STS"), im * (2 * main + halo))
        gate_needs(need, gate, im * (8 * main + 2 * halo))
    return [(need, im * 16 * (1 + s * s * tensors),
             "a 16 x 16 tile of %d plane%s" % (im, "s" if im > 1 else "") + gate_label(gate), "cheapest")]


def nchw_matrix_plane_models(k, s, gate=NO_GATE):
    """depthwise_nchw_matrix_plane (kernels/depthwise/nchw_matrix_plane.hpp): one warp tile of
    8 (stride 1) or 4 (stride 2) images' planes of a channel, two images an M tile, on the
    networks' planes: at stride 1 7x7 (element stores) and 8x8 (words); at stride 2 14x14 -> 7x7
    (element stores) and 16x16 -> 8x8 (words). At stride 1 each lane's asynchronous copy of a word
    of each image's plane (gated: the saved tensor's too) into the ring of raw planes, the tiles
    ring_stages - 1 ahead (nchw_plane_ring_stages: their bytes in flight are that many tiles'
    copies), and its word of the landed tile's images read back and stored to the staging, as a
    word on 8x8 planes, as two elements on 7x7; at stride 2 each lane's loads of the words of the
    tile two ahead (a plane's over 32 lanes, each image) and their stores to shared memory, an
    iteration two tiles (the walk's pairs, one a register buffer). Then a fragment
    load and a product per filter row, window (s) and M tile, and per image one word through relu6
    stored whole or as two elements. DRAM: the planes' inputs and outputs (of each tensor), the
    minimum, over the warp's 32 lanes."""
    images = 8 if s == 1 else 4
    tensors = 2 if gate != NO_GATE else 1
    models = []
    for side_in in (7 * s, 8 * s):
        side_out = (side_in - 1) // s + 1
        words_out = side_out % 2 == 0
        store = (lambda ins: ins.op == "STG.E") if words_out else is_op("STG.E.U16")
        need = {"products": (is_op("HMMA"), images // 2 * k * s), "fragment loads": (is_op("LDSM"), images // 2 * k * s),
                "stores": (store, images * (1 if words_out else 2))}
        if s == 1:
            even = side_in % 2 == 0
            need["word copies"] = (lambda ins: ins.op == "LDGSTS.E", images * tensors)
            need["raw words read"] = ((lambda ins: ins.op == "LDS") if even else is_op("LDS.U16"),
                                      images * tensors * (1 if even else 2))
            need["staging stores"] = ((lambda ins: ins.op == "STS") if even else is_op("STS.U16"), images * (1 if even else 2))
            gate_needs(need, gate, images * 2)
        else:
            each = -(-side_in * side_in // 2 // 32)
            need["loads"] = (lambda ins: ins.op in ("LDG.E", "LDG.E.CONSTANT"), images * each)
            need["staging stores"] = (is_op("STS"), images * each)
        if gate == NO_GATE:
            need["relu6"] = (RELU6[0], images)
        # (stride 2: the walk takes its tiles in pairs, one per register buffer: an iteration is two)
        tiles = 1 if s == 1 else 2
        need = {what: (test, count * tiles) for what, (test, count) in need.items()}
        dram = tiles * images * 2 * (side_in * side_in * tensors + side_out * side_out) / 32
        models.append((need, dram, "%s%d planes %dx%d -> %dx%d" % ("2 tiles of " if tiles == 2 else "", images, side_in,
                                                                   side_in, side_out, side_out) + gate_label(gate),
                       "cheapest"))
    return models


def demangled(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return dict(zip(names, out.splitlines()))


def budget(code, need, dram_bytes, shared_loop=False):
    """(instructions per iteration, per DRAM byte, bytes in flight per thread, op counts, the
    path's instruction indices) of the cheapest iteration of the outermost global-loading loop;
    None where no loop qualifies.
    shared_loop: of the narrowest loop, global-loading or not, that has such a path (a loop over
    shared memory inside a kernel's main loop, whose other loops have fewer of the modelled
    instructions); "cheapest": of the global-loading loop whose path is cheapest (a kernel whose
    main loop is compiled once per combination of compile-time flags)."""
    candidates = []
    for latch, header in loops(code):
        if shared_loop is True or any(code[i].global_load_bytes() for i in range(header, latch + 1)):
            candidates.append((header, latch))
    if shared_loop == "cheapest":  # the cheapest path of any global-loading loop (compile-time forms of one loop)
        # The shortest, the first in the loops' order of those as short. The narrowest loops are
        # searched first and each search stops at the shortest path so far (at one as short, for a
        # loop after its loop): the depthwise_half cubin's in 84 s against 128, the same paths.
        path, first = None, None
        for n in sorted(range(len(candidates)), key=lambda n: candidates[n][1] - candidates[n][0]):
            h, l = candidates[n]
            bound = None if path is None else len(path) + (1 if n < first else 0)
            found = cheapest_iteration(code, h, l, need, shorter_than=bound)
            if found is not None and (path is None or (len(found), n) < (len(path), first)):
                path, first = found, n
        if path is None:
            return None
        ops = collections.Counter(code[i].base for i in path)
        return len(path), len(path) / dram_bytes, peak_in_flight(code, path), ops, path
    # the widest loop first (the outermost), or the narrowest
    candidates.sort(key=lambda hl: (hl[1] - hl[0]) * (1 if shared_loop else -1))
    for header, latch in candidates:
        if shared_loop and any(sum(1 for i in range(header, latch + 1) if test(code[i])) < n for test, n in need.values()):
            continue  # (its span has too few of the modelled instructions)
        path = cheapest_iteration(code, header, latch, need, inside=shared_loop)
        if path is not None:
            break
    else:
        return None
    ops = collections.Counter(code[i].base for i in path)
    return len(path), len(path) / dram_bytes, peak_in_flight(code, path), ops, path


def listing_of(code, path):
    """The instructions of a path, a line each (address, predicate, opcode, operands)."""
    return ["%6x %-7s %s %s" % (code[i].addr, code[i].pred.strip() if code[i].pred else "", code[i].op, code[i].operands)
            for i in path]


def budgets(cubin, kernel_filter="", with_path=False):
    """[(kernel, what, (instructions, per byte, bytes in flight per thread, ops[, path]))] of
    the cubin's modelled kernels; with_path: the path's instructions too (listing_of), to read
    where an iteration's instructions go."""
    tool = find_nvdisasm()
    if not tool:
        raise SystemExit("nvdisasm not found (pip install nvidia-cuda-nvdisasm, or set NVDISASM)")
    listing = subprocess.run([tool, "-c", cubin], capture_output=True, text=True, check=True).stdout
    functions = parse_listing(listing)
    names = demangled(list(functions))
    rows = []

    def counted(code, b):
        return None if b is None else b[:4] + ((listing_of(code, b[4]),) if with_path else ())

    for mangled, code in functions.items():
        name = without_parameters(names[mangled]).replace("void ", "").replace("dsconv::kernels::", "")
        if kernel_filter and not re.search(kernel_filter, name):
            continue
        for pattern, model in KERNELS:
            m = pattern.search(name)
            if not m:
                continue
            spec = model(m)
            if isinstance(spec, list):  # several loops of one kernel (the fused block's step 3 forms)
                for need, dram, what, shared_loop in spec:
                    rows.append((name, what, counted(code, budget(code, need, dram, shared_loop))))
                break
            if callable(spec):  # a layer-dependent budget (the stream kernels): a tile's path per layer it takes
                per_layer = {}
                for ci, co in STREAM_LAYERS:
                    need = spec(ci, co)
                    if need is not None:
                        per_layer[(ci, co)] = counted(code, budget(code, need, 1.0))
                rows.append((name, "a warp's 32-pixel tile", per_layer))
                continue
            need, dram, what = spec
            rows.append((name, what, counted(code, budget(code, need, dram))))
    return sorted(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cubin")
    parser.add_argument("--kernel", default="", help="only kernels whose name matches")
    parser.add_argument("--path", action="store_true",
                        help="after each row (not the per-layer table's), the instructions of its cheapest iteration: "
                             "where the count goes")
    args = parser.parse_args()
    print("| kernel | iteration | instructions | instr / DRAM byte | issue ceiling | bytes in flight / thread | "
          "global loads | FFMA | conversions |")
    print("|---|---|---|---|---|---|---|---|---|")
    layered = []
    for name, what, b in budgets(args.cubin, args.kernel, args.path):
        if isinstance(b, dict):
            layered.append((name, what, b))
            continue
        if b is None:
            print("| %s | %s | no path | | | | | | |" % (name, what))
            continue
        n, per_byte, in_flight, ops = b[:4]
        print("| %s | %s | %d | %.2f | %.0f %% | %d | %d | %d | %d |" % (
            name, what, n, per_byte, min(100.0, 100 * ISSUE_LIMIT / per_byte), in_flight, ops["LDG"], ops["FFMA"],
            ops["HADD2"] + ops["F2FP"] + ops["PRMT"]))
        if args.path:
            print("\n".join(["", "```"] + b[4] + ["", "by opcode: " + ", ".join("%s %d" % c for c in ops.most_common()), "```", ""]))
    if layered:
        print()
        print("Per layer (c_in -> c_out): instructions of a warp's 32-pixel tile, instructions per DRAM byte, "
              "bytes in flight per thread.")
        print()
        print("| kernel | " + " | ".join("%d->%d" % l for l in STREAM_LAYERS) + " |")
        print("|---|" + "---|" * len(STREAM_LAYERS))
        for name, what, per_layer in layered:
            cells = []
            for layer in STREAM_LAYERS:
                b = per_layer.get(layer, "-")
                cells.append(b if b in ("-",) else "no path" if b is None else "%d, %.2f, %d" % (
                    b[0], stream_layer_budget(b[0], *layer), b[2]))
            print("| %s | %s |" % (name, " | ".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
