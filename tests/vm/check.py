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
DMI_MEMORY = {"locator_prefix": "DIMM", "speed": 4800, "manufacturer": "Acme", "part": "ACME-DDR5-16G"}
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
    entries = f.ls("/sys/firmware/dmi/entries")
    t17 = sorted(e for e in entries if e.startswith("17-"))
    expect(t17, f"no DMI type 17 entries in {entries}")
    total_mb = 0
    for e in t17:
        dtype, fm, strs = dmi_parse(f.blob(f"/sys/firmware/dmi/entries/{e}/raw"))
        expect_eq(dtype, 17, f"DMI {e} type")
        (size,) = struct.unpack_from("<H", fm, 0x0C)
        total_mb += size & 0x7FFF  # MB (bit 15 clear = MB granularity)
        (speed,) = struct.unpack_from("<H", fm, 0x15)
        expect_eq(speed, DMI_MEMORY["speed"], f"DMI {e} speed (MT/s)")
        expect_eq(dmi_str(fm, strs, 0x17), DMI_MEMORY["manufacturer"], f"DMI {e} manufacturer")
        expect_eq(dmi_str(fm, strs, 0x1A), DMI_MEMORY["part"], f"DMI {e} part number")
        loc = dmi_str(fm, strs, 0x10)
        expect(loc.startswith(DMI_MEMORY["locator_prefix"]), f"DMI {e} locator {loc!r}")
    total = sum(s for _, s in NODES.values()) >> 20
    expect_eq(total_mb, total, "DMI type 17 total size (MB)")


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
        self.name, self.facts = name, facts
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
CPU_NODES = [n for n, (cpus, _) in sorted(NODES.items()) if cpus]
MEM_NODES = sorted(NODES)


@command_check("topology")
def _(r):
    doc = r.json()
    expect_eq(doc["schema_version"], 1, "schema_version")
    t = doc["result"]
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


def matrix_cells(r, command):
    doc = r.json()
    expect_eq(doc["command"], command, "command")
    res = doc["result"]
    expect_eq(res["cpu_nodes"], CPU_NODES, "matrix rows (CPU nodes)")
    expect_eq(res["mem_nodes"], MEM_NODES, "matrix columns (memory nodes)")
    cells = {(c["cpu_node"], c["mem_node"]): c for c in res["cells"]}
    expect_eq(sorted(cells), [(c, m) for c in CPU_NODES for m in MEM_NODES], "matrix cells")
    for key, cell in sorted(cells.items()):
        o = cell["outcome"]
        expect_eq(o["status"], "ok", f"cell {key} status ({o.get('reason')})")
    return cells


def expect_placed(p, node, cpus_of_cpu_node, where):
    expect_eq(p["requested_node"], node, f"{where} requested node")
    expect(p["verified"], f"{where} placement not verified: {p}")
    expect_eq(p["pages_on_node"], p["pages_sampled"], f"{where} pages on node")
    expect(p["pages_sampled"] > 0, f"{where} no pages sampled")
    expect(len(p["thread_affinity"]) == 1 and p["thread_affinity"][0] in cpus_of_cpu_node,
           f"{where} thread affinity {p['thread_affinity']} not one CPU of {cpus_of_cpu_node}")


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
    for (c, m), cell in matrix_cells(r, "bandwidth").items():
        o = cell["outcome"]
        expect_eq(cell["cpus"], NODES[c][0], f"cell {(c, m)} threads")
        expect_eq(len(o["placement"]), len(NODES[c][0]), f"cell {(c, m)} placements")
        for p in o["placement"]:
            expect_placed(p, m, NODES[c][0], f"bandwidth cell {(c, m)}")
        expect(o["bandwidth_gb_s"]["median"] > 0, f"cell {(c, m)} bandwidth")


@command_check("run-quick")
def _(r):
    doc = r.json()
    res = doc["result"]
    expect_eq(sorted(n["id"] for n in res["topology"]["nodes"]), MEM_NODES, "run: topology nodes")
    for part in ("latency", "bandwidth"):
        expect_eq(res[part]["mem_nodes"], MEM_NODES, f"run: {part} columns")
        for cell in res[part]["cells"]:
            expect_eq(cell["outcome"]["status"], "ok", f"run: {part} cell {cell['cpu_node']}->{cell['mem_node']}")


@command_check("latency-bad-node")
def _(r):
    # run via `sh -c 'memfabric ... ; echo rc=$?'` so the command itself exits 0
    expect("rc=2" in r.stdout, f"unknown node should exit 2: {r.stdout!r}")
    expect("node 7 does not exist (nodes: 0-2)" in r.stderr, f"stderr: {r.stderr!r}")


@command_check("latency-cpu-less-row")
def _(r):
    expect("rc=2" in r.stdout, f"a CPU-less CPU node should exit 2: {r.stdout!r}")
    expect("node 2 has no CPUs" in r.stderr, f"stderr: {r.stderr!r}")

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
