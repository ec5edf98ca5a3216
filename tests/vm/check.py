#!/usr/bin/env python3
"""Assertions on the results of the emulated NUMA guest (see run.sh).

Usage: check.py [OUT_DIR]        (default: target/vm/out)

OUT_DIR holds guest-facts.txt plus, per command of commands.txt,
<name>.json (stdout), <name>.stderr and <name>.rc.

Two kinds of checks:
  * guest-fact checks (functions decorated with @fact_check) verify that the
    guest really sees the machine that run.sh asked QEMU for;
  * command checks: every command must exit 0; a function decorated with
    @command_check("<name>") adds assertions on that command's output.

Units (verified empirically with QEMU 7.2 + Linux 6.1):
  * HMAT latency: QEMU `latency=` takes nanoseconds; ACPI HMAT stores
    picoseconds (entry * base unit); Linux shows nanoseconds in
    /sys/devices/system/node/nodeN/accessK/initiators/{read,write}_latency.
  * HMAT bandwidth: QEMU `bandwidth=` takes bytes/s where the suffix M means
    MiB/s (2^20); QEMU divides by 2^20 for the ACPI table, which is in "MB/s",
    and Linux shows that number unchanged in {read,write}_bandwidth. So
    `bandwidth=40000M` shows as 40000 (and `bandwidth=1G` would show as 1024).
  * Linux sysfs only lists the best initiator(s) for each target (access0: any
    initiator, access1: CPU initiators); the full matrix is checked from the
    raw ACPI HMAT table.

Prints one line per check and ends with "N passed, N failed".
"""
import json
import os
import struct
import sys
import traceback

# ---------------------------------------------------------------------------
# What run.sh asks QEMU for. Keep in sync with the QEMU command line there.
# ---------------------------------------------------------------------------
GiB = 1 << 30
NODES = {
    # node: (cpus, memory bytes)
    0: ([0, 1], GiB),
    1: ([2, 3], GiB),
    2: ([], GiB),  # CPU-less, initiator = node 0 (CXL-expander-like)
}
SOCKET_OF_CPU = {0: 0, 1: 0, 2: 1, 3: 1}
DISTANCE = [
    [10, 21, 30],
    [21, 10, 40],
    [30, 40, 10],
]
INITIATORS = [0, 1]
# (initiator, target) -> ns
HMAT_LATENCY_NS = {
    (0, 0): 80, (0, 1): 140, (0, 2): 250,
    (1, 0): 140, (1, 1): 80, (1, 2): 350,
}
# (initiator, target) -> MB/s as Linux/ACPI report it (QEMU: bandwidth=<value>M)
HMAT_BANDWIDTH_MBPS = {
    (0, 0): 40000, (0, 1): 20000, (0, 2): 10000,
    (1, 0): 20000, (1, 1): 40000, (1, 2): 5000,
}
# The memory devices run.sh gives QEMU as raw SMBIOS type 17 structures
# (-smbios file=...), from the fixture generator: one list for both sides.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "smbios"))
from generate import QEMU_VM, QEMU_VM_WIDTH  # noqa: E402
DMI_SYSTEM = {"manufacturer": "Acme", "product": "memfabric-vm"}
DMI_CPU = {"socket_prefix": "CPU", "manufacturer": "Acme", "version": "Acme-Sim-CPU"}


# ---------------------------------------------------------------------------
# Framework
# ---------------------------------------------------------------------------
FACT_CHECKS = []
COMMAND_CHECKS = {}


class CheckFailed(AssertionError):
    pass


def fact_check(fn):
    FACT_CHECKS.append(fn)
    return fn


def command_check(name):
    def deco(fn):
        COMMAND_CHECKS[name] = fn
        return fn

    return deco


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def expect_eq(actual, expected, what):
    if actual != expected:
        raise CheckFailed(f"{what}: expected {expected!r}, got {actual!r}")


def parse_cpulist(s):
    """'0-1,4' -> [0, 1, 4]; '' -> []"""
    out = []
    for part in s.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


class Facts:
    """guest-facts.txt: sections '##FILE path', '##LS path', '##HEX path', '##UNAME'."""

    def __init__(self, path):
        self.files, self.dirs, self.blobs = {}, {}, {}
        kind, key, buf = None, None, []

        def flush():
            if kind is None:
                return
            text = "\n".join(buf)
            if kind == "FILE":
                self.files[key] = text
            elif kind == "LS":
                self.dirs[key] = [l for l in buf if l]
            elif kind == "HEX":
                self.blobs[key] = bytes.fromhex("".join(buf))
            elif kind == "UNAME":
                self.files["uname -r"] = text

        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f.read().replace("\r\n", "\n").split("\n"):
                if line.startswith("##"):
                    flush()
                    head = line[2:].split(" ", 1)
                    kind, key, buf = head[0], (head[1] if len(head) > 1 else ""), []
                else:
                    buf.append(line)
        flush()

    def file(self, path):
        expect(path in self.files, f"guest fact missing: {path}")
        return self.files[path].strip()

    def ls(self, path):
        expect(path in self.dirs, f"guest directory listing missing: {path}")
        return self.dirs[path]

    def blob(self, path):
        expect(path in self.blobs, f"guest binary fact missing: {path}")
        return self.blobs[path]


NODE_SYS = "/sys/devices/system/node"


# ---------------------------------------------------------------------------
# Guest-fact checks
# ---------------------------------------------------------------------------
@fact_check
def nodes_online(f):
    expect_eq(parse_cpulist(f.file(f"{NODE_SYS}/online")), sorted(NODES), "online nodes")
    nodes = sorted(int(e[4:]) for e in f.ls(NODE_SYS) if e.startswith("node") and e[4:].isdigit())
    expect_eq(nodes, sorted(NODES), "node directories")
    expect_eq(parse_cpulist(f.file(f"{NODE_SYS}/has_cpu")), [n for n, (c, _) in NODES.items() if c], "has_cpu")
    expect_eq(parse_cpulist(f.file(f"{NODE_SYS}/has_memory")), sorted(NODES), "has_memory")


@fact_check
def node_cpulists(f):
    for n, (cpus, _) in NODES.items():
        expect_eq(parse_cpulist(f.file(f"{NODE_SYS}/node{n}/cpulist")), cpus, f"node{n} cpulist")
    expect_eq(parse_cpulist(f.file("/sys/devices/system/cpu/online")), [0, 1, 2, 3], "online cpus")


@fact_check
def node_memory(f):
    for n, (_, size) in NODES.items():
        line = f.file(f"{NODE_SYS}/node{n}/meminfo:MemTotal")  # "Node 2 MemTotal:  997792 kB"
        kb = int(line.split()[-2])
        # the kernel reserves some of each node; accept 85%..100% of the configured size
        expect(0.85 * size <= kb * 1024 <= size, f"node{n} MemTotal {kb} kB not close to {size >> 20} MiB")


@fact_check
def cpu_sockets(f):
    for cpu, sock in SOCKET_OF_CPU.items():
        got = int(f.file(f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"))
        expect_eq(got, sock, f"cpu{cpu} physical_package_id")


@fact_check
def slit_distances(f):
    for n in NODES:
        row = [int(x) for x in f.file(f"{NODE_SYS}/node{n}/distance").split()]
        expect_eq(row, DISTANCE[n], f"node{n} distance")


def best_initiators(target):
    """Initiators Linux should report for target: best latency and bandwidth."""
    best_lat = min(HMAT_LATENCY_NS[(i, target)] for i in INITIATORS)
    best_bw = max(HMAT_BANDWIDTH_MBPS[(i, target)] for i in INITIATORS)
    inits = [i for i in INITIATORS
             if HMAT_LATENCY_NS[(i, target)] == best_lat and HMAT_BANDWIDTH_MBPS[(i, target)] == best_bw]
    expect(inits, f"test spec: no single best initiator for target {target}")
    return inits, best_lat, best_bw


@fact_check
def hmat_sysfs(f):
    for access in ("access0", "access1"):  # all initiators are CPU nodes here, so both agree
        for t in NODES:
            inits, lat, bw = best_initiators(t)
            base = f"{NODE_SYS}/node{t}/{access}/initiators"
            links = sorted(int(e[4:]) for e in f.ls(base) if e.startswith("node"))
            expect_eq(links, inits, f"{base} initiator nodes")
            for rw in ("read", "write"):
                expect_eq(int(f.file(f"{base}/{rw}_latency")), lat, f"{base}/{rw}_latency (ns)")
                expect_eq(int(f.file(f"{base}/{rw}_bandwidth")), bw, f"{base}/{rw}_bandwidth (MB/s)")
        for i in INITIATORS:
            want = sorted(t for t in NODES if i in best_initiators(t)[0])
            got = sorted(int(e[4:]) for e in f.ls(f"{NODE_SYS}/node{i}/{access}/targets") if e.startswith("node"))
            expect_eq(got, want, f"node{i}/{access}/targets")


def acpi_body(blob, sig):
    expect(blob[:4] == sig.encode(), f"ACPI {sig}: bad signature {blob[:4]!r}")
    (length,) = struct.unpack_from("<I", blob, 4)
    expect_eq(length, len(blob), f"ACPI {sig} length")
    return blob


@fact_check
def hmat_acpi_table(f):
    """Full initiator x target matrix from the raw ACPI HMAT table."""
    t = acpi_body(f.blob("/sys/firmware/acpi/tables/HMAT"), "HMAT")
    expect_eq(t[8], 2, "HMAT revision")  # rev 2: latency base unit is picoseconds
    lat, bw = {}, {}
    off = 40  # 36-byte header + 4 reserved
    while off < len(t):
        stype, _, slen = struct.unpack_from("<HHI", t, off)
        expect(slen >= 8, "HMAT: bad structure length")
        if stype == 1:  # System Locality Latency and Bandwidth Information
            flags, dtype = t[off + 8], t[off + 9]
            ni, nt = struct.unpack_from("<II", t, off + 12)
            (unit,) = struct.unpack_from("<Q", t, off + 24)
            p = off + 32
            inits = struct.unpack_from(f"<{ni}I", t, p)
            p += 4 * ni
            tgts = struct.unpack_from(f"<{nt}I", t, p)
            p += 4 * nt
            vals = struct.unpack_from(f"<{ni * nt}H", t, p)
            expect_eq(flags & 0xF, 0, "HMAT hierarchy (memory)")
            for a, i in enumerate(inits):
                for b, tg in enumerate(tgts):
                    v = vals[a * nt + b] * unit
                    if dtype in (0, 1, 2):  # access/read/write latency, ps
                        lat[(i, tg)] = v / 1000
                    else:  # access/read/write bandwidth, MB/s
                        bw[(i, tg)] = v
        off += slen
    expect_eq({k: int(v) for k, v in lat.items()}, HMAT_LATENCY_NS, "ACPI HMAT latency matrix (ns)")
    expect_eq(bw, HMAT_BANDWIDTH_MBPS, "ACPI HMAT bandwidth matrix (MB/s)")


@fact_check
def srat_memory(f):
    t = acpi_body(f.blob("/sys/firmware/acpi/tables/SRAT"), "SRAT")
    mem = {}
    off = 48  # 36-byte header + 12 reserved
    while off < len(t):
        stype, slen = t[off], t[off + 1]
        expect(slen > 0, "SRAT: bad structure length")
        if stype == 1:  # memory affinity
            (pxm,) = struct.unpack_from("<I", t, off + 2)
            base, length = struct.unpack_from("<QQ", t, off + 8)
            (flags,) = struct.unpack_from("<I", t, off + 28)
            if flags & 1 and not flags & 2:  # enabled, not hot-pluggable
                mem[pxm] = mem.get(pxm, 0) + length
        off += slen
    for n, (_, size) in NODES.items():
        got = mem.get(n, 0)
        # node 0 loses the legacy hole (640 KiB..1 MiB)
        expect(size - (1 << 20) <= got <= size, f"SRAT node {n}: {got} bytes, expected ~{size}")


def dmi_parse(raw):
    """-> (type, formatted bytes, [strings])"""
    dtype, length = raw[0], raw[1]
    strings = raw[length:].split(b"\0")
    out = []
    for s in strings:
        if not s:
            break
        out.append(s.decode("latin-1"))
    return dtype, raw[:length], out


def dmi_str(formatted, strings, offset):
    idx = formatted[offset] if offset < len(formatted) else 0
    return strings[idx - 1] if 0 < idx <= len(strings) else ""


@fact_check
def dmi_memory_devices(f):
    """The guest's type 17 entries are, byte for byte where it matters, the DIMMs
    QEMU was given (decoded here independently of memfabric)."""
    entries = f.ls("/sys/firmware/dmi/entries")
    t17 = sorted((e for e in entries if e.startswith("17-")), key=lambda e: int(e[3:]))
    expect_eq(len(t17), len(QEMU_VM), f"DMI type 17 entries in {entries}")
    for e, want in zip(t17, QEMU_VM):
        dtype, fm, strs = dmi_parse(f.blob(f"/sys/firmware/dmi/entries/{e}/raw"))
        expect_eq(dtype, 17, f"DMI {e} type")
        expect_eq(len(fm), 0x5C, f"DMI {e} length (SMBIOS 3.3)")
        handle, size = struct.unpack_from("<H", fm, 0x02)[0], struct.unpack_from("<H", fm, 0x0C)[0]
        expect_eq((handle, size), (want["handle"], want["size_mb"]), f"DMI {e} handle, size (MB)")
        speeds = struct.unpack_from("<H", fm, 0x15)[0], struct.unpack_from("<H", fm, 0x20)[0]
        expect_eq(speeds, (want["speed"] or 0, want["configured"] or 0), f"DMI {e} rated, configured MT/s")
        expect_eq(fm[0x1B] & 0x0F, want["ranks"], f"DMI {e} rank")
        for off, key in ((0x10, "locator"), (0x11, "bank"), (0x17, "manufacturer"), (0x1A, "part")):
            expect_eq(dmi_str(fm, strs, off), want[key] or "", f"DMI {e} {key}")


@fact_check
def dmi_system_and_sockets(f):
    _, fm, strs = dmi_parse(f.blob("/sys/firmware/dmi/entries/1-0/raw"))
    expect_eq(dmi_str(fm, strs, 0x04), DMI_SYSTEM["manufacturer"], "DMI system manufacturer")
    expect_eq(dmi_str(fm, strs, 0x05), DMI_SYSTEM["product"], "DMI system product")
    t4 = sorted(e for e in f.ls("/sys/firmware/dmi/entries") if e.startswith("4-"))
    expect_eq(len(t4), len(set(SOCKET_OF_CPU.values())), "DMI type 4 (processor socket) count")
    for k, e in enumerate(t4):
        _, fm, strs = dmi_parse(f.blob(f"/sys/firmware/dmi/entries/{e}/raw"))
        expect_eq(dmi_str(fm, strs, 0x04), f"{DMI_CPU['socket_prefix']} {k}", f"DMI {e} socket designation")
        expect_eq(dmi_str(fm, strs, 0x07), DMI_CPU["manufacturer"], f"DMI {e} manufacturer")
        expect_eq(dmi_str(fm, strs, 0x10), DMI_CPU["version"], f"DMI {e} version")


# ---------------------------------------------------------------------------
# Command checks. Each gets a Result; every command must also exit 0.
#
# To add one: put "name: memfabric ..." in commands.txt and here e.g.
#
#   @command_check("topology")
#   def _(r):
#       doc = r.json()
#       expect_eq(len(doc["nodes"]), 3, "topology node count")
#
# r.facts gives the guest facts, to compare memfabric's view with the kernel's.
# ---------------------------------------------------------------------------
class Result:
    def __init__(self, out, name, facts):
        self.out, self.name, self.facts = out, name, facts
        with open(os.path.join(out, f"{name}.json"), "rb") as fh:
            self.stdout_bytes = fh.read()
        self.stdout = self.stdout_bytes.decode("utf-8", errors="replace")
        p = os.path.join(out, f"{name}.stderr")
        self.stderr = open(p, encoding="utf-8", errors="replace").read() if os.path.exists(p) else ""
        with open(os.path.join(out, f"{name}.rc")) as fh:
            self.rc = int(fh.read().strip())

    def json(self):
        try:
            return json.loads(self.stdout)
        except ValueError as e:
            raise CheckFailed(f"{self.name}: stdout is not JSON ({e}): {self.stdout[:200]!r}")

    def other(self, name):
        """Another command's result, e.g. the topology to compare against."""
        expect(os.path.exists(os.path.join(self.out, f"{name}.rc")),
               f"{self.name} is checked against command {name!r}, which did not run")
        return Result(self.out, name, self.facts)


@command_check("version")
def _(r):
    out = r.stdout.strip()
    if not out:
        print("      note: `memfabric --version` printed nothing (no CLI yet?)")
    else:
        expect("memfabric" in out, f"--version output does not name memfabric: {out!r}")



# ---------------------------------------------------------------------------
# memfabric's own view of the guest, from its JSON
# ---------------------------------------------------------------------------
SCHEMA_VERSION = 2
CPU_NODES = [n for n, (cpus, _) in sorted(NODES.items()) if cpus]
MEM_NODES = sorted(NODES)
ALL_CPUS = sorted(c for cpus, _ in NODES.values() for c in cpus)
NODE_OF_CPU = {c: n for n, (cpus, _) in NODES.items() for c in cpus}
MiB = 1 << 20

# The bandwidth mixes in the order `--mix all` runs them, restated here rather than
# read from memfabric: (arrays read, arrays written, distinct arrays, non-temporal).
# Bytes per element are STREAM's count: 8 per array read plus 8 per array written.
MIXES = {
    "read": (1, 0, 1, False),
    "write": (0, 1, 1, False),
    "write-nt": (0, 1, 1, True),
    "3:1": (3, 1, 4, False),
    "2:1": (2, 1, 3, False),
    "1:1": (1, 1, 2, False),
    "rmw": (1, 1, 1, False),  # a[i] += s: one array, read and written
    "copy": (1, 1, 2, False),
    "copy-nt": (1, 1, 2, True),
    "triad": (2, 1, 3, False),
    "triad-nt": (2, 1, 3, True),
}
ALL_MIXES = list(MIXES)


def mix_bytes_per_element(mix):
    reads, writes, _, _ = MIXES[mix]
    return 8 * (reads + writes)


def envelope(r, command):
    doc = r.json()
    expect_eq(doc["schema_version"], SCHEMA_VERSION, "schema_version")
    expect_eq(doc["command"], command, "command")
    return doc["result"]


def expected_kernel(facts):
    """The widest vector kernel the guest CPU's flags allow (TCG: AVX2, no AVX-512)."""
    flags = facts.file("/proc/cpuinfo:processor0") if facts else ""
    flags = next((l.split(":", 1)[1].split() for l in flags.splitlines() if l.startswith("flags")), [])
    if "avx512f" in flags:
        return "avx512"
    return "avx2" if "avx2" in flags else "sse2"


def expect_placed(p, node, cpus_of_cpu_node, where):
    expect_eq(p["requested_node"], node, f"{where} requested node")
    expect(p["verified"], f"{where} placement not verified: {p}")
    expect_eq(p["pages_on_node"], p["pages_sampled"], f"{where} pages on node")
    expect(p["pages_sampled"] > 0, f"{where} no pages sampled")
    expect(len(p["thread_affinity"]) == 1 and p["thread_affinity"][0] in cpus_of_cpu_node,
           f"{where} thread affinity {p['thread_affinity']} not one CPU of {cpus_of_cpu_node}")


def expect_thread_placements(placements, cpus, mem_nodes, min_bytes_each, where):
    """One verified placement per thread, in the order of cpus: the thread pinned to
    exactly its CPU (a CPU of its node), its memory all on its memory node."""
    expect_eq(len(placements), len(cpus), f"{where}: placements (one per thread)")
    for cpu, node, p in zip(cpus, mem_nodes, placements):
        w = f"{where} thread on cpu {cpu}"
        expect_placed(p, node, NODES[NODE_OF_CPU[cpu]][0], w)
        expect_eq(p["thread_affinity"], [cpu], f"{w} affinity")
        expect_eq(p["pages_elsewhere"], [], f"{w} pages elsewhere")
        expect(p["pages_total"] * p["page_size_bytes"] >= min_bytes_each,
               f"{w}: {p['pages_total']} pages of {p['page_size_bytes']} B cannot hold {min_bytes_each} B of arrays")


def expect_summary(s, samples, where):
    expect_eq(s["count"], len(samples), f"{where} summary count")
    expect(min(samples) > 0, f"{where}: a sample is not positive: {samples}")
    expect(abs(s["min"] - min(samples)) <= 1e-9 * s["min"] and abs(s["max"] - max(samples)) <= 1e-9 * s["max"],
           f"{where}: summary min/max {s['min']}/{s['max']} do not match samples {samples}")
    expect(s["min"] <= s["median"] <= s["max"], f"{where}: median {s['median']} outside [min, max]")


def check_mix_infos(infos, names):
    expect_eq([m["mix"] for m in infos], names, "mixes, in order")
    for m in infos:
        reads, writes, arrays, nt = MIXES[m["mix"]]
        w = f"mix {m['mix']}"
        expect_eq(m["arrays"], arrays, f"{w} arrays")
        expect_eq(m["bytes_per_element"], mix_bytes_per_element(m["mix"]), f"{w} bytes_per_element")
        expect_eq(m["non_temporal"], nt, f"{w} non_temporal")
        expect(m["description"] and m["byte_counting"].startswith(f"{m['bytes_per_element']} bytes per element"),
               f"{w} description/byte_counting: {m['description']!r} / {m['byte_counting']!r}")


def check_bandwidth_outcome(o, mix, cpus, mem_nodes, array_bytes, samples, where):
    """A bandwidth measurement of `mix` by one thread per CPU of cpus, thread i's
    arrays (array_bytes each) on mem_nodes[i]."""
    expect_eq(o["status"], "ok", f"{where} status ({o.get('reason')})")
    elements = len(cpus) * array_bytes // 8
    expect_eq(o["bytes_per_sample"], elements * mix_bytes_per_element(mix), f"{where} bytes_per_sample")
    # every written array is checked after timing; a mix that writes nothing checks nothing
    expect_eq(o["validated_elements"], 0 if mix == "read" else elements, f"{where} validated_elements")
    expect_eq(len(o["samples_gb_s"]), samples, f"{where} samples")
    expect_summary(o["bandwidth_gb_s"], o["samples_gb_s"], where)
    expect_thread_placements(o["placement"], cpus, mem_nodes, MIXES[mix][2] * array_bytes, where)


def check_bandwidth_report(r, res, mixes, thread_counts, matrix, array_bytes, samples):
    """BandwidthReport: every cell there, ok, with the right threads and placement.
    Returns the cells keyed by (mix, threads, cpu node, mem node)."""
    expect_eq(res["kernel"], expected_kernel(r.facts), "kernel (from the guest's CPU flags)")
    expect_eq(res["huge_pages"], "off", "huge_pages")
    expect_eq(res["array_bytes_per_thread"], array_bytes, "array_bytes_per_thread")
    check_mix_infos(res["mixes"], mixes)
    expect_eq(res["thread_counts"], thread_counts, "thread_counts")
    expect_eq(res["cpu_nodes"], CPU_NODES, "rows (CPU nodes)")
    expect_eq(res["mem_nodes"], MEM_NODES if matrix else CPU_NODES, "columns (memory nodes)")
    pairs = [(c, m) for c in CPU_NODES for m in (MEM_NODES if matrix else [c])]
    counts = thread_counts or [None]  # None: every CPU of the node
    want = [(mix, t, c, m) for mix in mixes for (c, m) in pairs for t in counts]
    cells = {}
    for cell in res["cells"]:
        key = (cell["mix"], len(cell["cpus"]) if thread_counts else None, cell["cpu_node"], cell["mem_node"])
        expect(key not in cells, f"cell {key} twice")
        cells[key] = cell
    expect_eq(sorted(cells, key=str), sorted(want, key=str), "cells (mix, threads, cpu node, mem node)")
    # results.rs: cells "ordered by mix, then (CPU node, memory node), then thread count".
    got = [(c["mix"], len(c["cpus"]) if thread_counts else None, c["cpu_node"], c["mem_node"]) for c in res["cells"]]
    expect_eq(got, want, "cell order (mix, then node pair, then thread count)")
    for (mix, t, c, m), cell in cells.items():
        cpus = NODES[c][0][:t] if t else NODES[c][0]
        where = f"{r.name} cell {mix} {len(cpus)} threads node {c} -> node {m}"
        expect_eq(cell["cpus"], cpus, f"{where} cpus")
        check_bandwidth_outcome(cell["outcome"], mix, cpus, [m] * len(cpus), array_bytes, samples, where)
    return cells


@command_check("topology")
def _(r):
    t = envelope(r, "topology")
    nodes = {n["id"]: n for n in t["nodes"]}
    expect_eq(sorted(nodes), MEM_NODES, "node ids")
    for nid, (cpus, mem) in NODES.items():
        n = nodes[nid]
        expect_eq(n["cpus"], cpus, f"node {nid} cpus")
        expect_eq(n["cpu_less"], not cpus, f"node {nid} cpu_less")
        # Exactly what the guest kernel reports (it keeps part of each node for itself).
        kb = int(r.facts.file(f"{NODE_SYS}/node{nid}/meminfo:MemTotal").split()[-2])
        expect_eq(n["mem_total_bytes"], kb * 1024, f"node {nid} memory (MemTotal)")
        expect(n["mem_total_bytes"] <= mem, f"node {nid} memory above the {mem >> 20} MiB QEMU gave it")
        expect_eq(n["distances"], DISTANCE[nid], f"node {nid} SLIT row")
    expect_eq(len(t["packages"]), 2, "packages")
    for c in t["cpus"]:
        expect_eq(c["package"], SOCKET_OF_CPU[c["id"]], f"cpu {c['id']} package")
    hmat = {(e["target_node"], e["access_class"]): e for e in t["hmat"]}
    for target in MEM_NODES:
        inits, lat, bw = best_initiators(target)
        for access in (0, 1):  # all initiators are CPU nodes here, so both classes agree
            e = hmat.get((target, access))
            expect(e is not None, f"no HMAT access{access} entry for node {target}")
            expect_eq(e["initiators"], inits, f"node {target} access{access} initiators")
            for field in ("read_latency_ns", "write_latency_ns"):
                expect_eq(e[field], lat, f"node {target} access{access} {field}")
            for field in ("read_bandwidth_mb_s", "write_bandwidth_mb_s"):
                expect_eq(e[field], bw, f"node {target} access{access} {field}")
    # L3 domains (what `bandwidth --per-domain` walks): they split the CPUs, none spans
    # a node, and the one of CPU 0 is the L3 the guest kernel shows for CPU 0.
    doms = t["l3_domains"]
    expect_eq([d["index"] for d in doms], list(range(len(doms))), "l3_domains indexes")
    expect_eq(sorted(c for d in doms for c in d["cpus"]), ALL_CPUS, "l3_domains cover every CPU once")
    for d in doms:
        expect_eq(d["level"], 3, f"l3 domain {d['index']} level")
        expect_eq({NODE_OF_CPU[c] for c in d["cpus"]}, {d["node"]}, f"l3 domain {d['index']} node")
    l3 = next(i for i in range(8) if r.facts.files.get(f"/sys/devices/system/cpu/cpu0/cache/index{i}/level", "").strip() == "3")
    shared = parse_cpulist(r.facts.file(f"/sys/devices/system/cpu/cpu0/cache/index{l3}/shared_cpu_list"))
    expect_eq(next(d["cpus"] for d in doms if 0 in d["cpus"]), shared, "L3 domain of cpu 0 (guest shared_cpu_list)")


def matrix_cells(r, command):
    res = envelope(r, command)
    expect_eq(res["cpu_nodes"], CPU_NODES, "matrix rows (CPU nodes)")
    expect_eq(res["mem_nodes"], MEM_NODES, "matrix columns (memory nodes)")
    cells = {(c["cpu_node"], c["mem_node"]): c for c in res["cells"]}
    expect_eq(sorted(cells), [(c, m) for c in CPU_NODES for m in MEM_NODES], "matrix cells")
    for key, cell in sorted(cells.items()):
        o = cell["outcome"]
        expect_eq(o["status"], "ok", f"cell {key} status ({o.get('reason')})")
    return cells


@command_check("latency-matrix")
def _(r):
    for (c, m), cell in matrix_cells(r, "latency").items():
        o = cell["outcome"]
        expect_eq(cell["cpu"], NODES[c][0][0], f"cell {(c, m)} measuring CPU")
        expect_placed(o["placement"], m, NODES[c][0], f"latency cell {(c, m)}")
        expect(o["latency_ns"]["median"] > 0, f"cell {(c, m)} latency")
        expect_eq(o["cycle_verified_elements"], r.json()["result"]["size_bytes"] // 64, f"cell {(c, m)} cycle")


@command_check("bandwidth-matrix")
def _(r):
    # --matrix --size 8M --samples 3, default mix (read), every CPU of each node
    res = envelope(r, "bandwidth")
    check_bandwidth_report(r, res, ["read"], [], True, 8 * MiB, 3)
    # no memory-controller counters in the guest: nothing attached, and why
    counting = res["dram_counting"]
    expect(counting["source"] is None, f"no DRAM counter source in the guest: {counting!r}")
    expect(counting["reason"].startswith("no memory-traffic counters: "), f"reason: {counting['reason']!r}")
    expect(all(c["outcome"].get("dram") is None for c in res["cells"]), "no cell carries DRAM traffic")


@command_check("bandwidth-mix-all")
def _(r):
    # --mix all --matrix --size 2M --samples 2: 11 mixes x 2 CPU nodes x 3 memory nodes,
    # the CPU-less node 2 included as a memory target
    res = envelope(r, "bandwidth")
    cells = check_bandwidth_report(r, res, ALL_MIXES, [], True, 2 * MiB, 2)
    expect_eq(len(cells), len(ALL_MIXES) * len(CPU_NODES) * len(MEM_NODES), "cell count")


@command_check("bandwidth-threads")
def _(r):
    # --mix read,copy --threads 1,2 --size 2M --samples 2: each node's own memory,
    # 1 thread (the node's first CPU) and 2 threads (both its CPUs)
    res = envelope(r, "bandwidth")
    cells = check_bandwidth_report(r, res, ["read", "copy"], [1, 2], False, 2 * MiB, 2)
    for (mix, t, c, m), cell in cells.items():
        expect_eq(len(cell["cpus"]), t, f"cell {mix} node {c} threads")


@command_check("bandwidth-per-domain")
def _(r):
    # --per-domain --fclk 1000 --size 2M --samples 2 (mix read, each thread on its own node)
    fclk, samples, array_bytes = 1000.0, 2, 2 * MiB
    res = envelope(r, "bandwidth")
    check_mix_infos([res["mix"]], ["read"])
    expect_eq(res["kernel"], expected_kernel(r.facts), "kernel (from the guest's CPU flags)")
    expect_eq(res["array_bytes_per_thread"], array_bytes, "array_bytes_per_thread")
    expect_eq(res["fclk_mhz"], fclk, "fclk_mhz")
    doms = envelope(r.other("topology"), "topology")["l3_domains"]
    expect(len(doms) >= len(CPU_NODES), f"fewer L3 domains than CPU nodes: {doms}")

    def step(e, indexes, where):
        cpus = [c for i in indexes for c in doms[i]["cpus"]]
        expect_eq(e["domains"], indexes, f"{where} domains")
        expect_eq(e["cpus"], cpus, f"{where} cpus")
        expect_eq(e["mem_nodes"], [NODE_OF_CPU[c] for c in cpus], f"{where} mem_nodes (each CPU's node)")
        o = e["outcome"]
        check_bandwidth_outcome(o, "read", cpus, e["mem_nodes"], array_bytes, samples, where)
        want = o["bandwidth_gb_s"]["median"] * 1e3 / fclk  # GB/s over MHz: bytes per cycle
        expect(e["bytes_per_fclk"] is not None and abs(e["bytes_per_fclk"] - want) <= 1e-9 * want,
               f"{where} bytes_per_fclk {e['bytes_per_fclk']} != median GB/s * 1e3 / {fclk} = {want}")

    expect_eq(len(res["alone"]), len(doms), "alone: one entry per L3 domain")
    for d, e in zip(doms, res["alone"]):
        step(e, [d["index"]], f"domain {d['index']} alone")
    expect_eq(len(res["cumulative"]), len(doms), "cumulative: one step per L3 domain")
    for k, e in enumerate(res["cumulative"]):
        step(e, [d["index"] for d in doms[: k + 1]], f"domains 0..{k} together")


def stream_expected(ntimes):
    """STREAM 5.10's checkSTREAMresults on scalars: a, b, c after ntimes passes."""
    a, b, c, s = 1.0, 2.0, 0.0, 3.0
    a = 2.0 * a
    for _ in range(ntimes):
        c = a
        b = s * c
        c = a + b
        a = b + s * c
    return [a, b, c]


def check_stream(r, size, ntimes, mem_nodes):
    res = envelope(r, "stream")
    cpus = ALL_CPUS
    elements = size // 8
    expect_eq(res["kernel"], expected_kernel(r.facts), "kernel (from the guest's CPU flags)")
    expect_eq(res["array_elements"], elements, "array_elements")
    expect_eq(res["bytes_per_element"], 8, "bytes_per_element")
    expect_eq(res["ntimes"], ntimes, "ntimes")
    expect_eq(res["cpus"], cpus, "cpus (every guest CPU)")
    expect_eq(res["mem_nodes"], mem_nodes, "mem_nodes")
    o = res["outcome"]
    expect_eq(o["status"], "ok", f"status ({o.get('reason')})")
    v = o["validation"]
    expect(v["passed"], f"validation failed: {v}")
    expect_eq(v["errors"], [0, 0, 0], "validation errors (a, b, c)")
    expect_eq(v["epsilon"], 1e-13, "validation epsilon")
    expect_eq(v["expected"], stream_expected(ntimes), "validation expected a, b, c")
    fns = o["functions"]
    expect_eq([(f["name"], f["bytes_per_element"]) for f in fns],
              [("Copy", 16), ("Scale", 16), ("Add", 24), ("Triad", 24)], "functions")
    for f in fns:
        w = f"function {f['name']}"
        expect_eq(len(f["samples_gb_s"]), ntimes - 1, f"{w} samples (first pass not counted)")
        expect_summary(f["bandwidth_gb_s"], f["samples_gb_s"], w)
        expect(f["best_gb_s"] >= f["bandwidth_gb_s"]["median"] * (1 - 1e-12),
               f"{w} best {f['best_gb_s']} < median {f['bandwidth_gb_s']['median']}")
        expect(0 < f["min_time_s"] <= f["avg_time_s"] <= f["max_time_s"], f"{w} times min/avg/max")
        best = f["bytes_per_element"] * elements / f["min_time_s"] / 1e9  # STREAM's Best Rate
        expect(abs(f["best_gb_s"] - best) <= 1e-6 * best, f"{w} best {f['best_gb_s']} != bytes / min time = {best}")
        # Share of the memory peak of the nodes holding the parts: the sum of their
        # sockets' peaks from the guest's DIMMs; none when a CPU-less node holds them.
        e = f.get("efficiency")
        if all(n in SOCKET_OF_NODE for n in mem_nodes):
            peak = sum(vm_socket_peaks()[SOCKET_OF_NODE[n]][2] for n in sorted(set(mem_nodes)))
            expect(e is not None, f"{w}: efficiency")
            if e is not None:
                expect_close(e["peak_gb_s"], peak, f"{w} peak")
                expect_close(e["fraction"], f["best_gb_s"] / peak, f"{w} fraction")
        else:
            expect(e is None, f"{w}: no peak for a CPU-less node, got {e}")
    part_bytes = -(-elements // len(cpus)) * 8
    expect_thread_placements(o["placement"], cpus, mem_nodes, 3 * part_bytes, "stream")


@command_check("stream")
def _(r):
    # --size 8M --ntimes 3: every CPU, each thread's part of a, b, c on its own node
    check_stream(r, 8 * MiB, 3, [NODE_OF_CPU[c] for c in ALL_CPUS])


@command_check("stream-mem-node2")
def _(r):
    # --mem-nodes 2 --size 4M --ntimes 2: every part on the CPU-less node
    check_stream(r, 4 * MiB, 2, [2] * len(ALL_CPUS))


def check_loaded(r, latency_cpu, load_cpus, mem_node, mix, steps_want):
    """A loaded-latency result: the latency CPU and its chase on mem_node, the load
    threads' CPUs, one ok step per expected step, and the idle figure."""
    res = envelope(r, "loaded-latency")
    expect_eq(res["latency_cpu"], latency_cpu, "latency CPU")
    expect_eq(res["load_cpus"], load_cpus, "load CPUs")
    expect_eq(res["mem_node"], mem_node, "memory node")
    expect_eq(res["mix"]["mix"], mix, "mix")
    expect_eq(res["chase_size_bytes"], 4 * MiB, "chase size")
    expect_eq(res["array_bytes_per_thread"], MiB, "array bytes per thread")
    expect(res["spin_ns"] > 0, f"spin_ns {res['spin_ns']}")
    idle = res["idle"]
    expect_eq(idle["status"], "ok", f"idle latency ({idle.get('reason')})")
    if idle["status"] == "ok":
        expect_placed(idle["placement"], mem_node, [latency_cpu], "latency chase")
        expect(idle["latency_ns"]["median"] > 0, "idle latency")
    steps = res["steps"]
    expect_eq(len(steps), len(steps_want), "steps")
    for k, (s, (delay, domains, cpus)) in enumerate(zip(steps, steps_want)):
        where = f"step {k}"
        expect_eq(s["delay_spins"], delay, f"{where} delay")
        expect_eq(s["domains"], domains, f"{where} domains")
        expect_eq(s["load_cpus"], cpus, f"{where} load CPUs")
        expect(s["load_bandwidth_gb_s"] >= 0, f"{where} load bandwidth")
        expect_eq(s["latency"]["status"], "ok", f"{where} latency ({s['latency'].get('reason')})")
    return res


@command_check("loaded-latency")
def _(r):
    # default: CPU 0 measures on its own node, every other CPU loads with read
    others = [c for c in ALL_CPUS if c != 0]
    want = [(0 if k == 0 else 1 << (k - 1), [], others) for k in range(12)]
    res = check_loaded(r, 0, others, NODE_OF_CPU[0], "read", want)
    steps = res["steps"]
    expect(steps[0]["load_bandwidth_gb_s"] > 0, "full load moved no bytes")


@command_check("loaded-latency-domains")
def _(r):
    # --latency-domain 0 --load-domain 1 --mem-node 2 (CPU-less) --mix copy-nt --points 3
    doms = envelope(r.other("topology"), "topology")["l3_domains"]
    lat = doms[0]["cpus"][0]
    load = [c for c in doms[1]["cpus"] if c != lat]
    want = [(d, [], load) for d in (0, 1, 2)]
    check_loaded(r, lat, load, 2, "copy-nt", want)


@command_check("loaded-latency-spread")
def _(r):
    # --spread: one step per L3 domain with a CPU besides CPU 0, at full speed
    doms = envelope(r.other("topology"), "topology")["l3_domains"]
    want, cpus, names = [], [], []
    for d in doms:
        mine = [c for c in d["cpus"] if c != 0]
        if mine:
            cpus = cpus + mine
            names = names + [d["index"]]
            want.append((0, names, cpus))
    res = check_loaded(r, 0, cpus, NODE_OF_CPU[0], "read", want)
    expect_eq(res["spread"], True, "spread")


def c2c_class(a, b, doms):
    """The topology class of a CPU pair, from the sockets run.sh asks for and the L3
    domains memfabric's topology reports."""
    if SOCKET_OF_CPU[a] != SOCKET_OF_CPU[b]:
        return "other-socket"
    da = next((d["index"] for d in doms if a in d["cpus"]), None)
    db = next((d["index"] for d in doms if b in d["cpus"]), None)
    if da is None or db is None:
        return "same-socket-l3-unknown"
    return "same-l3" if da == db else "other-l3-same-socket"


@command_check("c2c")
def _(r):
    # --mode all --offsets 0,2048 --samples 3 --iterations 100: every ordered pair of the
    # 4 CPUs, the line in a page on the first CPU's node
    samples, offsets, modes = 3, [0, 2048], ["cas", "pingpong"]
    res = envelope(r, "c2c")
    doms = envelope(r.other("topology"), "topology")["l3_domains"]
    expect_eq(res["cpus"], ALL_CPUS, "cpus (every guest CPU)")
    expect_eq(res["modes"], modes, "modes")
    expect_eq(res["offsets_bytes"], offsets, "offsets_bytes")
    expect_eq((res["samples"], res["warmup_samples"], res["round_trips_per_sample"]), (samples, 1, 100),
              "samples, warm-up samples, round trips per sample")
    pages = {p["node"]: p for p in res["line_pages"]}
    expect_eq(sorted(pages), CPU_NODES, "line pages: one per CPU node")
    for node, p in pages.items():
        expect_eq(p["cpu"], NODES[node][0][0], f"line page of node {node}: touching CPU")
        expect_eq(p["outcome"]["status"], "ok", f"line page of node {node} ({p['outcome'].get('reason')})")
        expect_placed(p["outcome"], node, [p["cpu"]], f"line page of node {node}")
    want_order = [(m, o) for m in modes for o in offsets]
    expect_eq([(m["mode"], m["offset_bytes"]) for m in res["matrices"]], want_order, "matrices (mode, then offset)")
    n = len(ALL_CPUS)
    for m in res["matrices"]:
        w = f"{m['mode']} @{m['offset_bytes']}"
        pairs = m["pairs"]
        expect_eq([(p["first_cpu"], p["second_cpu"]) for p in pairs],
                  [(a, b) for a in ALL_CPUS for b in ALL_CPUS if a != b], f"{w}: pairs (row-major, no diagonal)")
        dense = m["median_one_way_ns"]
        expect_eq((len(dense), [len(row) for row in dense]), (n, [n] * n), f"{w}: {n}x{n} matrix")
        expect(all(dense[i][i] is None for i in range(n)), f"{w}: diagonal not empty: {dense}")
        every_sample = []
        medians = {}
        for p in pairs:
            a, b, o = p["first_cpu"], p["second_cpu"], p["outcome"]
            pw = f"{w} pair {a}->{b}"
            expect_eq(o["status"], "ok", f"{pw} status ({o.get('reason')})")
            expect_eq(p["class"], c2c_class(a, b, doms), f"{pw} class")
            expect_eq(p["line_node"], NODE_OF_CPU[a], f"{pw} line node (the first CPU's)")
            expect_eq((o["first_affinity"], o["second_affinity"]), ([a], [b]), f"{pw} thread affinities")
            expect_eq(len(o["samples_one_way_ns"]), samples, f"{pw} samples")
            expect_summary(o["one_way_ns"], o["samples_one_way_ns"], pw)
            expect_eq(dense[ALL_CPUS.index(a)][ALL_CPUS.index(b)], o["one_way_ns"]["median"], f"{pw} matrix cell")
            every_sample += o["samples_one_way_ns"]
            medians.setdefault(p["class"], []).append(o["one_way_ns"]["median"])
        expect("other-socket" in medians, f"{w}: no pair across sockets")
        got = {c["class"]: c["pair_medians_ns"] for c in m["classes"]}
        expect_eq(sorted(got), sorted(medians), f"{w}: classes present")
        for cls, s in got.items():
            expect_summary(s, medians[cls], f"{w} class {cls}")
        mean = sum(every_sample) / len(every_sample)
        expect(abs(m["mean_one_way_ns"] - mean) <= 1e-9 * mean, f"{w}: mean {m['mean_one_way_ns']} != {mean}")


@command_check("c2c-one-cpu")
def _(r):
    expect_eq(r.stdout.strip(), "rc=2", "c2c on one CPU should exit 2 with nothing on stdout")
    expect("--cpus 3 names 1 CPU" in r.stderr, f"stderr: {r.stderr!r}")


@command_check("run-quick")
def _(r):
    res = envelope(r, "run")
    expect_eq(sorted(n["id"] for n in res["topology"]["nodes"]), MEM_NODES, "run: topology nodes")
    for part in ("latency", "bandwidth"):
        expect_eq(res[part]["mem_nodes"], MEM_NODES, f"run: {part} columns")
        for cell in res[part]["cells"]:
            expect_eq(cell["outcome"]["status"], "ok", f"run: {part} cell {cell['cpu_node']}->{cell['mem_node']}")
    bw = res["bandwidth"]
    check_bandwidth_report(r, bw, ["read"], [], True, bw["array_bytes_per_thread"],
                           bw["cells"][0]["outcome"]["bandwidth_gb_s"]["count"])
    # The rest of the suite: every mix on each node's own memory, loaded latency,
    # core-to-core over every CPU, and the sweep; the run saved and its report written.
    expect_eq(res["suite"], "quick", "run: suite")
    expect_eq(len(res["steps"]), 10, "run: steps")
    # Several memory nodes: the interleaved STREAM and all-remote cells are in the suite.
    inter = res["interleaved"]
    expect_eq(inter["interleave"]["nodes"], MEM_NODES, "run: interleaved over every memory node")
    expect_eq(inter["outcome"]["status"], "ok", "run: interleaved STREAM")
    remote = res["all_remote"]
    expect_eq([(s["cpu_node"], s["mem_node"]) for s in remote["streams"]], [(0, 1), (1, 2)], "run: all-remote streams")
    expect_eq(remote["outcome"]["status"], "ok", "run: all-remote")
    check_platform(envelope_env(r))
    for part in ("gpu_bandwidth", "gpu_copy"):
        expect_eq(res[part]["outcome"]["status"], "skipped", f"run: {part} without a GPU")
    mixes = res["mixes"]
    expect_eq([m["mix"] for m in mixes["mixes"]],
              ["read", "write", "write-nt", "3:1", "2:1", "1:1", "rmw", "copy", "copy-nt", "triad", "triad-nt"],
              "run: mixes")
    for cell in mixes["cells"]:
        expect_eq(cell["cpu_node"], cell["mem_node"], "run: mixes on local memory")
        expect_eq(cell["outcome"]["status"], "ok", f"run: mix {cell['mix']} node {cell['cpu_node']}")
    loaded = res["loaded_latency"]
    expect_eq(loaded["idle"]["status"], "ok", "run: idle latency under the loaded-latency step")
    expect_eq(len(loaded["steps"]), 12, "run: loaded-latency points")
    c2c = res["c2c"]
    expect_eq(c2c["cpus"], ALL_CPUS, "run: c2c CPUs")
    for m in c2c["matrices"]:
        for p in m["pairs"]:
            expect_eq(p["outcome"]["status"], "ok", f"run: c2c {p['first_cpu']}->{p['second_cpu']}")
    expect(len(res["sweep"]["points"]) > 0, "run: sweep points")
    expect("saved as run 1 in /tmp/runs.sqlite" in r.stderr, f"run: not saved: {r.stderr!r}")
    expect("wrote the report memfabric-run-1.html" in r.stderr, f"run: no report: {r.stderr!r}")


@command_check("runs-list")
def _(r):
    runs = envelope(r, "runs")
    expect_eq(len(runs), 1, "runs list: the quick run, saved once")
    if runs:
        expect_eq(runs[0]["command"], "run", "runs list: command")
        expect(runs[0]["figures"] > 0, "runs list: figures saved")


@command_check("report-html")
def _(r):
    # the stored run as HTML: heatmaps (latency, bandwidth, c2c) and curves (loaded latency, sweep)
    svgs = int(r.stdout.strip() or 0)
    expect(svgs >= 5, f"report-html: {svgs} SVG figures in the report, expected 5 or more")
    expect("wrote /tmp/report.html" in r.stderr, f"report-html: {r.stderr!r}")


@command_check("latency-bad-node")
def _(r):
    # run via `sh -c 'memfabric ... ; echo rc=$?'` so the command itself exits 0
    expect("rc=2" in r.stdout, f"unknown node should exit 2: {r.stdout!r}")
    expect("node 7 does not exist (nodes: 0-2)" in r.stderr, f"stderr: {r.stderr!r}")


@command_check("latency-cpu-less-row")
def _(r):
    expect("rc=2" in r.stdout, f"a CPU-less CPU node should exit 2: {r.stdout!r}")
    expect("node 2 has no CPUs" in r.stderr, f"stderr: {r.stderr!r}")


@command_check("bandwidth-bad-mix")
def _(r):
    expect_eq(r.stdout.strip(), "rc=2", "an unknown mix should exit 2 with nothing on stdout")
    want = f"unknown mix '4:1' (valid: {', '.join(ALL_MIXES)}, or all)"
    expect(want in r.stderr, f"stderr should say {want!r}: {r.stderr!r}")

# ---------------------------------------------------------------------------
# theory, audit, and the peaks and firmware figures beside measured matrices.
# Expectations come from QEMU_VM (the DIMMs QEMU was given), computed here.
# ---------------------------------------------------------------------------
SOCKET_OF_NODE = {n: SOCKET_OF_CPU[cpus[0]] for n, (cpus, _) in NODES.items() if cpus}


def vm_socket_peaks():
    """socket -> (populated channels, listed channels, GB/s): per populated channel,
    the slowest configured MT/s of its DIMMs x data bytes."""
    socks = {}
    for d in QEMU_VM:
        socks.setdefault(d["socket"], {}).setdefault(d["channel"], []).append(d)
    out = {}
    for sock, chans in socks.items():
        full = [[x for x in ds if x["size_mb"]] for ds in chans.values()]
        full = [ds for ds in full if ds]
        gb_s = sum(min(x["configured"] for x in ds) * QEMU_VM_WIDTH[1] // 8 for ds in full) / 1000
        out[sock] = (len(full), len(chans), gb_s)
    return out


def vm_expected_loss(sock):
    """The audit's loss model (crates/analysis/src/audit/class.rs) for the VM's DIMMs:
    each tier of channel capacity streams through the channels that hold it, and the
    slowest running speed is set against the fastest rated one."""
    dimms = [d for d in QEMU_VM if d["socket"] == sock]
    chans = {}
    for d in dimms:
        chans[d["channel"]] = chans.get(d["channel"], 0) + d["size_mb"]
    caps = sorted(c for c in chans.values() if c)
    time, below = 0.0, 0
    for cap in sorted(set(caps)):
        time += cap - below  # the tier's bytes over its channels, per channel
        below = cap
    share = (sum(caps) / len(chans)) / time
    rated = max(d["speed"] for d in dimms if d["speed"])
    running = min(d["configured"] for d in dimms if d["configured"])
    return 1 - share * running / rated


def expect_close(actual, expected, what):
    expect(abs(actual - expected) <= 1e-9 * max(1.0, abs(expected)), f"{what}: expected {expected}, got {actual}")


@command_check("theory")
def _(r):
    # no flags: the guest's own DIMMs, read from /sys/firmware/dmi/entries as root
    res = envelope(r, "theory")
    expect(r.json()["environment"] is not None, "theory of this machine records its environment")
    expect_eq(res["source"], "smbios", "source")
    devs = res["memory_devices"]
    expect_eq((devs["source"], devs["problems"], devs["unavailable"]), ("smbios", [], None), "memory_devices")
    expect_eq(len(devs["dimms"]), len(QEMU_VM), "DIMMs decoded")
    for k, (d, want) in enumerate(zip(devs["dimms"], QEMU_VM)):
        w = f"DIMM {want['locator']}"
        on = want["size_mb"] > 0
        got = {key: d[key] for key in ("entry", "handle", "locator", "bank_locator", "installed", "size_bytes",
                                       "memory_type", "form_factor", "speed_mt_s", "configured_speed_mt_s", "ranks",
                                       "data_width_bits", "total_width_bits", "manufacturer", "part_number",
                                       "type_detail", "socket", "channel", "slot")}
        expect_eq(got, {
            "entry": f"17-{k}", "handle": want["handle"], "locator": want["locator"], "bank_locator": want["bank"],
            "installed": on, "size_bytes": want["size_mb"] << 20 if on else None, "memory_type": "DDR5",
            "form_factor": "DIMM", "speed_mt_s": want["speed"], "configured_speed_mt_s": want["configured"],
            "ranks": want["ranks"] or None, "data_width_bits": QEMU_VM_WIDTH[1] if on else None,
            "total_width_bits": QEMU_VM_WIDTH[0] if on else None, "manufacturer": want["manufacturer"],
            "part_number": want["part"], "type_detail": ["Synchronous", "Registered (Buffered)"] if on else [],
            "socket": want["socket"], "channel": want["channel"], "slot": 1,
        }, w)
    mem = res["memory"]
    expect_eq(mem["status"], "ok", f"memory peak ({mem.get('reason')})")
    peaks = vm_socket_peaks()
    expect_eq([s["socket"] for s in mem["sockets"]], sorted(peaks), "sockets")
    for s in mem["sockets"]:
        full, listed, gb_s = peaks[s["socket"]]
        w = f"socket {s['socket']}"
        expect_eq((s["populated_channels"], s["listed_channels"], s["mt_s"], s["bus_bits"]), (full, listed, 4800, 64), w)
        expect_close(s["peak_gb_s"], gb_s, f"{w} peak")
        expect_eq(s["formula"], f"{full} channels x 4800 MT/s x 8 B = {gb_s:g} GB/s", f"{w} formula")
    system = sum(p[2] for p in peaks.values())
    expect_close(mem["system_gb_s"], system, "system peak")
    expect_eq(mem["formula"], f"2 sockets x {peaks[0][2]:g} GB/s = {system:g} GB/s", "system formula")


@command_check("theory-calc")
def _(r):
    # --channels 12 --mts 4800 --sockets 2 --links 4 --lanes 16 --gbps 32
    res = envelope(r, "theory")
    expect_eq(res["source"], "calculator", "source")
    mem = res["memory"]
    expect_eq([s["peak_gb_s"] for s in mem["sockets"]], [460.8, 460.8], "per socket: 12 x 4800 x 8 B")
    expect_eq(mem["system_gb_s"], 921.6, "system")
    expect_eq((res["links"]["per_direction_gb_s"], res["links"]["both_directions_gb_s"]), (256.0, 512.0), "links")


@command_check("monitor-skipped")
def _(r):
    # the guest exposes no memory-controller PMU and no resctrl: skipped, exit 0
    res = envelope(r, "monitor")
    expect(res["source"] is None, f"no counter source in the guest: {res['source']!r}")
    expect_eq(res["outcome"]["status"], "skipped", "outcome")
    reason = res["outcome"]["reason"]
    for want in ("no memory-controller PMU under /sys/bus/event_source/devices", "perf_event_paranoid",
                 "mount -t resctrl resctrl /sys/fs/resctrl"):
        expect(want in reason, f"reason should say {want!r}: {reason!r}")
    expect(len(res["missing"]) >= 2, f"missing: {res['missing']!r}")
    expect_eq([c["name"] for c in res["candidates"]],
              ["intel-imc", "intel-imc-free-running", "amd-umc", "amd-df", "nvidia-scf", "resctrl-mbm"], "candidates")
    expect(not any(c["available"] for c in res["candidates"]), "no candidate available in the guest")
    expect(res["command"] is None, "no command given")


@command_check("gpu-info-skipped")
def _(r):
    # no NVIDIA driver in the guest: skipped with the reason, exit 0
    res = envelope(r, "gpu-info")
    expect_eq(res["outcome"], {"status": "skipped", "reason": "no NVIDIA driver found (libcuda.so could not be loaded)"},
              "outcome")


@command_check("audit")
def _(r):
    res = envelope(r, "audit")
    sev = {"critical": 2, "warning": 1, "info": 0}
    order = [sev[f["severity"]] for f in res["findings"]]
    expect_eq(order, sorted(order, reverse=True), "findings, most severe first")
    got = {f["title"]: f["severity"] for f in res["findings"]}
    want = {
        "Socket 0: 1 of 3 memory channels empty (C)": "warning",
        "Socket 1: 1 of 3 memory channels empty (C)": "warning",
        "Socket 0: channels hold unequal memory (A: 1G; B: 512M)": "warning",
        "Socket 1: channels hold unequal memory (A: 1G; B: 512M)": "warning",
        "Mixed DIMM sizes: 2 x 512M, 2 x 1G": "warning",
        "DIMMs run below their rated speed: 2 x rated 5600 MT/s running at 4800 MT/s": "warning",
        "Mixed rated speeds: 2 x 4800 MT/s, 2 x 5600 MT/s": "info",
        "Mixed rank counts: 2 x 1R, 2 x 2R": "info",
    }
    for title, severity in want.items():
        expect_eq(got.get(title), severity, f"finding {title!r} (found: {sorted(got)})")
    expect("Sockets are populated differently" not in got, "both sockets are populated alike")
    expect(any(t.startswith("SMT ") for t in got), "an SMT finding")
    expect(any(t.startswith("CPU ") for t in got), "a CPU governor finding")
    for s in res["sockets"]:
        expect_eq(s["class"], "not-recommended", f"socket {s['socket']} class (unequal channels)")
        expect_close(s["expected_loss"], vm_expected_loss(s["socket"]), f"socket {s['socket']} expected loss")
    expect_eq(len(res["memory_devices"]["dimms"]), len(QEMU_VM), "DIMMs")


@command_check("plan-beside")
def _(r):
    """A platform file naming the guest's CPU: `stream --interleave all` and
    `bandwidth --concurrent all-local --mix read` print the planner's figure."""
    lines = [l for l in r.stdout.splitlines() if l.startswith("Model (vm board, NPS1, 1 UPI x16 at 16 Gbit/s")]
    expect(len(lines) == 2, f"plan-beside: two model lines, got {lines!r} (stdout: {r.stdout[-2000:]!r}, stderr: {r.stderr!r})")
    expect("socket links limit" in lines[0], f"interleaved Triad over one x16/16 link is link-bound: {lines[0]!r}")
    expect("memory channels limit" in lines[1], f"all-local reads are memory-bound: {lines[1]!r}")
    expect(all("% of it" in l for l in lines), f"{lines!r}")


@command_check("plan-check")
def _(r):
    """`plan check` on the live guest: its DIMMs (QEMU_VM: channels A and B, C
    empty, 1G and 512M) against a 3-channel platform file written in the guest."""
    expect("rc=1" in r.stderr, f"plan check exits 1 on deviations (stderr: {r.stderr!r})")
    res = envelope(r, "plan-check")
    expect_eq(res["numa_mode"], "NPS1", "NUMA mode: 2 nodes with CPUs over 2 sockets")
    expect_eq([s["per_channel"] for s in res["sockets"]], [[1, 1, 0], [1, 1, 0]], "DIMMs per channel")
    expect_eq({s["class"] for s in res["sockets"]}, {"near-balanced"}, "class")
    got = {d["what"]: d["seen"] for d in res["deviations"]}
    for k in (0, 1):
        expect_eq(got.get(f"socket {k}: DIMM sizes"), "1 x 0.5 GiB, 1 x 1 GiB", f"socket {k} sizes")
        expect(f"socket {k}: population" in got, f"socket {k} population deviation ({sorted(got)})")
    expect(not any(w.endswith("speed") for w in got), f"no speed deviation at 4800 MT/s ({sorted(got)})")
    expect_eq(res["not_checked"], [], "everything was checked")


def firmware_cells(res, what):
    f = res["firmware"]
    expect(f is not None, "firmware figures beside the matrix")
    expect_eq(f["measured_what"], what, "firmware: what is measured")
    expect(all(isinstance(d, str) and d for d in f["disagreements"]), f"disagreements: {f['disagreements']}")
    cells = {(c["cpu_node"], c["mem_node"]): c for c in f["cells"]}
    expect_eq(sorted(cells), [(c, m) for c in CPU_NODES for m in MEM_NODES], "firmware cells")
    for (c, m), cell in cells.items():
        expect_eq(cell["slit_distance"], DISTANCE[c][m], f"firmware cell {(c, m)} SLIT")
    return cells


@command_check("latency-firmware")
def _(r):
    # latency --matrix: SLIT and HMAT latency beside each cell (HMAT only for each
    # target's best initiators, as Linux shows them)
    res = envelope(r, "latency")
    cells = firmware_cells(res, "median ns per load")
    medians = {(c["cpu_node"], c["mem_node"]): c["outcome"]["latency_ns"]["median"] for c in res["cells"]}
    for (c, m), cell in cells.items():
        best = best_initiators(m)[0]
        want = HMAT_LATENCY_NS[(c, m)] if c in best else None
        expect_eq(cell["hmat_read_latency_ns"], want, f"firmware cell {(c, m)} HMAT latency")
        expect_eq(cell["measured"], medians[(c, m)], f"firmware cell {(c, m)} measured")


@command_check("bandwidth-efficiency")
def _(r):
    # bandwidth --matrix: each cell's share of its path's peak from the guest's DIMMs;
    # none for the CPU-less node (SMBIOS does not say which DIMMs back it)
    res = envelope(r, "bandwidth")
    peaks = vm_socket_peaks()
    for cell in res["cells"]:
        c, m, e = cell["cpu_node"], cell["mem_node"], cell["efficiency"]
        w = f"cell {c} -> {m}"
        if m not in SOCKET_OF_NODE:
            expect(e is None, f"{w}: no peak for a CPU-less node, got {e}")
            continue
        expect(e is not None, f"{w}: efficiency")
        peak = peaks[SOCKET_OF_NODE[m]][2]
        expect_close(e["peak_gb_s"], peak, f"{w} peak")
        expect_close(e["fraction"], cell["outcome"]["bandwidth_gb_s"]["median"] / peak, f"{w} fraction")
        remote = SOCKET_OF_NODE[c] != SOCKET_OF_NODE[m]
        expect_eq("links not described" in e["basis"], remote, f"{w} basis {e['basis']!r}")
    cells = firmware_cells(res, "read, median GB/s")
    for (c, m), cell in cells.items():
        best = best_initiators(m)[0]
        want = HMAT_BANDWIDTH_MBPS[(c, m)] / 1000 if c in best else None
        expect_eq(cell["hmat_read_bandwidth_gb_s"], want, f"firmware cell {(c, m)} HMAT bandwidth")


@command_check("bandwidth-links")
def _(r):
    # --links 2 --lanes 16 --gbps 1: 2 x 16 x 1 / 8 = 4 GB/s per direction, below the
    # memory's peak, so every cross-socket cell's peak is the links'; local cells keep
    # their node's memory peak.
    res = envelope(r, "bandwidth")
    peaks = vm_socket_peaks()
    for cell in res["cells"]:
        c, m, e = cell["cpu_node"], cell["mem_node"], cell["efficiency"]
        w = f"links cell {c} -> {m}"
        expect(e is not None, f"{w}: efficiency")
        if e is None:
            continue
        remote = SOCKET_OF_NODE[c] != SOCKET_OF_NODE[m]
        want = 4.0 if remote else peaks[SOCKET_OF_NODE[m]][2]
        expect_close(e["peak_gb_s"], want, f"{w} peak")
        expect_eq("the links' 4 GB/s per direction" in e["basis"], remote, f"{w} basis {e['basis']!r}")


# ---------------------------------------------------------------------------
# sweep: latency and bandwidth against size, every point placed and checked.
def check_sweep(r, cpu, mem_node, bw_cpus, max_bytes, ppo, samples):
    """SweepReport from 4K to max_bytes: sizes increasing on the grid, every point ok,
    the chase on mem_node from cpu, each bandwidth thread's arrays on mem_node."""
    res = envelope(r, "sweep")
    expect_eq((res["cpu"], res["cpu_node"], res["mem_node"]), (cpu, NODE_OF_CPU[cpu], mem_node), "cpu, its node, memory node")
    expect_eq((res["min_bytes"], res["max_bytes"], res["max_from"]), (4096, max_bytes, "--max"), "range")
    expect_eq((res["points_per_octave"], res["samples"]), (ppo, samples), "grid and samples")
    sizes = [p["size_bytes"] for p in res["points"]]
    octaves = (max_bytes // 4096).bit_length() - 1
    expect_eq(len(sizes), octaves * ppo + 1, f"points from 4K to {max_bytes}: {sizes}")
    expect(all(a < b for a, b in zip(sizes, sizes[1:])), f"sizes do not increase: {sizes}")
    expect_eq((sizes[0], sizes[-1]), (4096, max_bytes), "first and last size")
    expect(all(s % 64 == 0 for s in sizes), f"sizes not whole lines: {sizes}")
    expect_eq(res["bandwidth"]["cpus"], bw_cpus, "bandwidth threads (the measuring CPU first)")
    for p in res["points"]:
        where = f"{r.name} {p['size_bytes']} B"
        l, o = p["latency"], p["latency"]["outcome"]
        expect_eq(o["status"], "ok", f"{where} latency ({o.get('reason')})")
        expect_eq(l["chase_bytes"], p["size_bytes"], f"{where} chase covers the size")
        expect_eq(o["cycle_verified_elements"], l["chase_bytes"] // 64, f"{where} cycle")
        expect_placed(o["placement"], mem_node, [cpu], f"{where} chase")
        expect_eq(len(o["samples_ns"]), samples, f"{where} latency samples")
        expect_summary(o["latency_ns"], o["samples_ns"], f"{where} latency")
        b, o = p["bandwidth"], p["bandwidth"]["outcome"]
        expect_eq(o["status"], "ok", f"{where} bandwidth ({o.get('reason')})")
        expect(b["passes_per_sample"] >= 1, f"{where} passes per sample")
        expect_eq(b["working_set_bytes_per_thread"], b["array_bytes_per_thread"], f"{where} read walks one array")
        per_pass = len(bw_cpus) * b["array_bytes_per_thread"]
        expect_eq(o["bytes_per_sample"], per_pass * b["passes_per_sample"], f"{where} bytes per sample")
        expect_eq(len(o["samples_gb_s"]), samples, f"{where} bandwidth samples")
        expect_thread_placements(o["placement"], bw_cpus, [mem_node] * len(bw_cpus),
                                 b["array_bytes_per_thread"], f"{where} bandwidth")
    caches = [f"L{c['level']} {c['kind']}" for c in envelope(r.other("topology"), "topology")["caches"]
              if c["kind"] != "Instruction" and c["size_bytes"] > 0]
    for curve, threads in (("latency_levels", 1), ("bandwidth_levels", len(bw_cpus))):
        lv = res[curve]
        expect_eq(lv["threads"], threads, f"{curve} threads")
        expect_eq(len(lv["plateaus"]), len(lv["boundaries"]) + 1, f"{curve}: one more plateau than boundaries")
        expect_eq([c["level"] for c in lv["comparison"]], caches, f"{curve} compares every data/unified cache")
        for c in lv["comparison"]:
            expect_eq(c["expected_bytes"], c["instance_bytes"] // c["sharing_threads"], f"{curve} {c['level']} share")


@command_check("sweep")
def _(r):
    check_sweep(r, 0, NODE_OF_CPU[0], [0], 1 << 20, 2, 2)


@command_check("sweep-far")
def _(r):
    # CPU 3 chases memory on the CPU-less node 2; every CPU of its node reads there too
    check_sweep(r, 3, 2, [3] + [c for c in NODES[NODE_OF_CPU[3]][0] if c != 3], 256 << 10, 1, 2)


@command_check("sweep-bad")
def _(r):
    expect_eq(r.stdout.strip(), "rc=2", "--min above --max should exit 2 with nothing on stdout")
    expect("--min 8M is larger than --max 1M" in r.stderr, f"stderr: {r.stderr!r}")


# ---------------------------------------------------------------------------
# Memory interleaved over nodes, streams at once, load from chosen nodes (issue:
# the whole machine under load), and the platform facts every document records.
# ---------------------------------------------------------------------------
def envelope_env(r):
    return r.json()["environment"]


def check_platform(env):
    """DMI, the NUMA layout, DIMM speeds, kernel options and links as the guest has them."""
    p = env["platform"]
    expect_eq(p["system_product"], {"known": DMI_SYSTEM["product"]}, "platform: system product")
    expect_eq(p["system_vendor"], {"known": DMI_SYSTEM["manufacturer"]}, "platform: system vendor")
    expect("known" in p["bios_vendor"] and p["bios_vendor"]["known"], f"platform: BIOS vendor {p['bios_vendor']}")
    numa = p["numa"]
    expect_eq(numa["sockets"], 2, "platform: sockets")
    expect_eq([n["id"] for n in numa["nodes"]], MEM_NODES, "platform: nodes")
    expect_eq(numa["distances"], DISTANCE, "platform: distances")
    expect_eq(numa["cpu_nodes_per_socket"], 1, "platform: CPU nodes per socket")
    expect("1 CPU-less node" in numa["described"], f"platform: {numa['described']!r}")
    dimms = p["dimms"].get("known")
    expect(dimms, f"platform: DIMMs not read: {p['dimms']}")
    installed = [d for d in QEMU_VM if d.get("size_mb")]
    expect_eq(len(dimms or []), len(installed), "platform: installed DIMMs")
    expect(all(d["configured_mt_s"] == 4800 for d in dimms or []), f"platform: DIMM speeds {dimms}")
    expect_eq(p["kernel_memory_options"], {"known": []}, "platform: kernel memory options")
    expect("unknown" in p["socket_links"], f"platform: socket links {p['socket_links']}")


def expect_shares(p, nodes, weights, where):
    """An interleaved placement: verified, every page on the set, and each node's
    share recomputed from its page count within the stated tolerance of its weight."""
    s = p["interleave"]
    expect(p["verified"], f"{where}: interleave not verified: {s}")
    expect_eq(s["nodes"], nodes, f"{where} nodes")
    expect_eq(s["weights"], weights, f"{where} weights")
    expect_eq(p["pages_elsewhere"], [], f"{where} pages outside the set")
    expect_eq(sum(s["pages_per_node"]), p["pages_sampled"], f"{where} pages counted")
    total = sum(weights)
    for node, w, pages in zip(nodes, weights, s["pages_per_node"]):
        share = 100.0 * pages / p["pages_sampled"]
        want = 100.0 * w / total
        expect(abs(share - want) <= s["tolerance_pct"] <= 5.0,
               f"{where}: node {node} holds {share:.1f}% of the pages, {want:.1f}% wanted (±{s['tolerance_pct']:.1f})")


@command_check("stream-interleave-all")
def _(r):
    res = envelope(r, "stream")
    expect_eq(res["interleave"], {"nodes": MEM_NODES, "weights": [1, 1, 1]}, "stream: interleave set")
    expect_eq(res["cpus"], ALL_CPUS, "stream: threads on every node")
    o = res["outcome"]
    expect_eq(o["status"], "ok", f"stream --interleave all ({o.get('reason')})")
    for cpu, p in zip(ALL_CPUS, o["placement"]):
        expect_eq(p["thread_affinity"], [cpu], f"stream: thread on cpu {cpu}")
        expect_shares(p, MEM_NODES, [1, 1, 1], f"stream: cpu {cpu}'s part")
        expect("MPOL_INTERLEAVE" in p["method"], f"stream: method {p['method']!r}")


@command_check("latency-interleave-weighted")
def _(r):
    res = envelope(r, "latency")
    expect_eq(res["interleave"], {"nodes": [0, 2], "weights": [3, 1]}, "latency: interleave")
    expect_eq(len(res["cells"]), 1, "latency: one cell (CPU node 0)")
    o = res["cells"][0]["outcome"]
    expect_eq(o["status"], "ok", f"latency interleaved ({o.get('reason')})")
    expect_shares(o["placement"], [0, 2], [3, 1], "latency chase")
    expect("MPOL_BIND" in o["placement"]["method"], f"weighted method {o['placement']['method']!r}")
    expect(res["firmware"] is None, "no SLIT/HMAT comparison for an interleave")


@command_check("bandwidth-interleave")
def _(r):
    res = envelope(r, "bandwidth")
    expect_eq(res["interleave"]["nodes"], [1, 2], "bandwidth: interleave")
    expect_eq(res["cpu_nodes"], [0, 1], "bandwidth: every CPU node")
    for c in res["cells"]:
        o = c["outcome"]
        expect_eq(o["status"], "ok", f"bandwidth interleaved from node {c['cpu_node']}")
        for cpu, p in zip(c["cpus"], o["placement"]):
            expect_eq(p["thread_affinity"], [cpu], f"bandwidth: thread on cpu {cpu}")
            expect_shares(p, [1, 2], [1, 1], f"bandwidth: cpu {cpu}")
    expect(res.get("peak_unknown") and "interleaved" in res["peak_unknown"], f"peak: {res.get('peak_unknown')}")


def expect_refused(r, want):
    expect_eq(r.stdout.strip(), "rc=2", f"{r.name}: should exit 2 with nothing on stdout")
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    expect_eq(len(lines), 1, f"{r.name}: one line on stderr, got {lines}")
    expect(want in r.stderr, f"{r.name}: stderr should say {want!r}: {r.stderr!r}")


@command_check("interleave-bad-node")
def _(r):
    expect_refused(r, "node 7 does not exist (nodes: 0-2)")


@command_check("interleave-empty")
def _(r):
    expect_refused(r, "--interleave needs at least one node")


@command_check("interleave-bad-weights")
def _(r):
    expect_refused(r, "--interleave-weights gives 3 weights for 2 nodes (0,1)")


@command_check("concurrent-bad")
def _(r):
    expect_refused(r, "--concurrent pairs needs two CPU nodes that have memory; --cpu-nodes names 1 (0)")


def check_concurrent(r, pattern, pairs, mix, links):
    """Streams run at once: every stream's window of every sample overlaps every
    other's; each rate is its bytes over its window; the total is all bytes over the
    whole span, at most the sum of the streams; and the link flows each way."""
    res = envelope(r, "bandwidth")
    expect_eq(res["pattern"], pattern, "concurrent: pattern")
    expect_eq(res["mix"]["mix"], mix, "concurrent: mix")
    expect_eq([(s["cpu_node"], s["mem_node"]) for s in res["streams"]], pairs, "concurrent: streams")
    o = res["outcome"]
    expect_eq(o["status"], "ok", f"concurrent {pattern} ({o.get('reason')})")
    per_elem = mix_bytes_per_element(mix)
    samples = len(o["total_samples_gb_s"])
    expect_eq(samples, 3, "concurrent: samples")
    for spec, s in zip(res["streams"], o["streams"]):
        w = f"stream {s['cpu_node']}->{s['mem_node']}"
        expect_eq(spec["cpus"], NODES[s["cpu_node"]][0], f"{w} CPUs")
        expect_eq(s["bytes_per_sample"], len(spec["cpus"]) * res["array_bytes_per_thread"] // 8 * per_elem, f"{w} bytes")
        for (a, b), gb in zip(s["windows_ns"], s["samples_gb_s"]):
            expect(b > a, f"{w}: empty window")
            expect(abs(gb - s["bytes_per_sample"] / (b - a)) <= 1e-6 * gb, f"{w}: rate {gb} is not bytes/window")
        expect_thread_placements(s["placement"], spec["cpus"], [s["mem_node"]] * len(spec["cpus"]),
                                 res["array_bytes_per_thread"], w)
    all_bytes = sum(s["bytes_per_sample"] for s in o["streams"])
    for k in range(samples):
        windows = [s["windows_ns"][k] for s in o["streams"]]
        expect(max(a for a, _ in windows) < min(b for _, b in windows), f"sample {k}: windows {windows} do not overlap")
        span = max(b for _, b in windows) - min(a for a, _ in windows)
        total = o["total_samples_gb_s"][k]
        expect(abs(total - all_bytes / span) <= 0.02 * total, f"sample {k}: total {total} is not all bytes / span")
        streams_sum = sum(s["samples_gb_s"][k] for s in o["streams"])
        expect(total <= streams_sum * (1 + 1e-9), f"sample {k}: total {total} above the streams' sum {streams_sum}")
    # Every sample's windows overlapped (checked above); how much depends on how the
    # host schedules the emulated CPUs, so only a positive share is required here.
    expect(0.0 < o["min_overlap_pct"] <= 100.0, f"overlap {o['min_overlap_pct']}")
    got = [(l["from_socket"], l["to_socket"]) for l in o["links"]]
    expect_eq(got, links, "concurrent: socket-link directions")
    if o["links"]:
        expect(abs(sum(l["share_pct"] for l in o["links"]) - 100.0) < 1e-6, "link shares add to 100 %")


@command_check("concurrent-pairs")
def _(r):
    # copy: half the bytes read (memory socket -> CPU socket), half written back
    check_concurrent(r, "pairs", [(0, 1), (1, 0)], "copy", [(0, 1), (1, 0)])


@command_check("concurrent-all-remote")
def _(r):
    # node 2 has no CPUs (no socket): only 0 -> 1 crosses a known socket link
    check_concurrent(r, "all-remote", [(0, 1), (1, 2)], "read", [(1, 0)])


@command_check("concurrent-all-local")
def _(r):
    check_concurrent(r, "all-local", [(0, 0), (1, 1)], "read", [])


@command_check("loaded-latency-load-nodes")
def _(r):
    res = envelope(r, "loaded-latency")
    expect_eq(res["load_cpus"], NODES[1][0], "load-nodes 1: load CPUs")
    expect_eq(res["load_mem_nodes"], [2, 2], "load-mem-nodes 2: the load's memory")
    expect_eq(res["mem_node"], 0, "the chase stays on the latency CPU's node")
    expect_eq(len(res["steps"]), 3, "steps")
    for s in res["steps"]:
        expect_eq(s["latency"]["status"], "ok", f"step latency ({s['latency'].get('reason')})")
    expect(res["steps"][0]["load_bandwidth_gb_s"] > 0, "the load moved no bytes")
# ---------------------------------------------------------------------------
def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "vm", "out")
    passed, failed = 0, 0

    def run(label, fn, *args):
        nonlocal passed, failed
        try:
            fn(*args)
        except CheckFailed as e:
            failed += 1
            print(f"FAIL  {label}: {e}")
        except Exception:
            failed += 1
            print(f"FAIL  {label}: crashed\n" + traceback.format_exc())
        else:
            passed += 1
            print(f"ok    {label}")

    facts_path = os.path.join(out, "guest-facts.txt")
    facts = None
    if not os.path.exists(facts_path):
        failed += 1
        print(f"FAIL  guest-facts: {facts_path} missing")
    else:
        facts = Facts(facts_path)
        for fn in FACT_CHECKS:
            run(f"guest: {fn.__name__}", fn, facts)

    names = sorted(n[:-3] for n in os.listdir(out) if n.endswith(".rc")) if os.path.isdir(out) else []
    order_file = os.path.join(out, "commands.order")
    if os.path.exists(order_file):  # keep commands.txt order
        order = [l.strip() for l in open(order_file) if l.strip()]
        names = [n for n in order if n in names] + [n for n in names if n not in order]
    for name in names:
        r = Result(out, name, facts)

        def rc_zero(r=r):
            if r.rc != 0:
                hint = " (killed by the guest's per-command timeout)" if r.rc in (124, 143) else ""
                raise CheckFailed(f"exit status {r.rc}{hint}; stderr: {r.stderr.strip()[-500:]!r}")

        run(f"cmd {name}: exit status", rc_zero)
        if name in COMMAND_CHECKS:
            run(f"cmd {name}: output", COMMAND_CHECKS[name], r)
        else:
            print(f"      (no output check for command {name!r})")
    for name in sorted(set(COMMAND_CHECKS) - set(names)):
        print(f"      note: check for {name!r} defined but the command did not run")

    print(f"vm: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
