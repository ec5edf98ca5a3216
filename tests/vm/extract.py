#!/usr/bin/env python3
"""Split the guest's results serial log into per-command files.

Usage: extract.py RESULTS_LOG OUT_DIR [EXPECTED_NAMES_FILE]

The guest (init.sh) writes, on its second serial port in raw mode:

    ===INIT uptime=<s>===\\n
    ===BEGIN <name> bytes=<N>===\\n  <N bytes of stdout>  \\n
    ===STDERR <name> bytes=<M>===\\n <M bytes of stderr>  \\n
    ===END <name> rc=<rc> secs=<s>===\\n
    ...
    ===DONE uptime=<s>===\\n

Writes OUT_DIR/<name>.json (stdout), <name>.stderr, <name>.rc, <name>.secs,
commands.order (names in run order), and guest-facts.txt for the reserved
block "guest-facts". Byte counts make the framing exact even when a command
prints no trailing newline or prints something that looks like a marker. If the port ever delivered CRLF line ends
(tty not in raw mode) the framing is retried with CR stripped.
"""
import os
import re
import shutil
import sys

BEGIN = re.compile(rb"===BEGIN (\S+) bytes=(\d+)===\n")
# The newline before a marker separates, it carries nothing: under emulation the
# serial port has dropped exactly that byte (a block of "rc=2\n" followed straight
# by "===STDERR"), so it may be missing. The byte counts still hold the content to
# its length, and check.py still parses what the content says.
STDERR = re.compile(rb"\n?===STDERR (\S+) bytes=(\d+)===\n")
END = re.compile(rb"\n?===END (\S+) rc=(-?\d+) secs=([0-9.]+)===\n")
DONE = re.compile(rb"===DONE uptime=([0-9.]+)===")
INIT = re.compile(rb"===INIT uptime=([0-9.]+)===")


class FramingError(Exception):
    pass


def parse(data: bytes):
    blocks = []
    pos = 0
    while True:
        m = BEGIN.search(data, pos)
        if not m:
            break
        name = m.group(1).decode()
        out_start = m.end()
        out_end = out_start + int(m.group(2))
        m2 = STDERR.match(data, out_end)
        if not m2 or m2.group(1).decode() != name:
            raise FramingError(f"{name}: stdout block truncated or malformed at byte {out_end}")
        err_start = m2.end()
        err_end = err_start + int(m2.group(2))
        m3 = END.match(data, err_end)
        if not m3 or m3.group(1).decode() != name:
            raise FramingError(f"{name}: stderr block truncated or malformed at byte {err_end}")
        blocks.append(
            {
                "name": name,
                "stdout": data[out_start:out_end],
                "stderr": data[err_start:err_end],
                "rc": int(m3.group(2)),
                "secs": m3.group(3).decode(),
            }
        )
        pos = m3.end()
    done = DONE.search(data, pos)
    return blocks, done, INIT.search(data)


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    log, out = sys.argv[1], sys.argv[2]
    expected = []
    if len(sys.argv) == 4:
        with open(sys.argv[3]) as f:
            expected = [l.strip() for l in f if l.strip()]
    if not os.path.exists(log):
        print(f"extract: {log} does not exist (guest never wrote results)", file=sys.stderr)
        return 1
    with open(log, "rb") as f:
        raw = f.read()
    try:
        blocks, done, init = parse(raw)
    except FramingError as e:
        if b"\r\n" not in raw:
            print(f"extract: {e}", file=sys.stderr)
            return 1
        try:
            blocks, done, init = parse(raw.replace(b"\r\n", b"\n"))
        except FramingError as e2:
            print(f"extract: {e2}", file=sys.stderr)
            return 1

    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    names = []
    for b in blocks:
        name = b["name"]
        names.append(name)
        if name == "guest-facts":
            with open(os.path.join(out, "guest-facts.txt"), "wb") as f:
                f.write(b["stdout"])
            if b["stderr"]:
                with open(os.path.join(out, "guest-facts.stderr"), "wb") as f:
                    f.write(b["stderr"])
            continue
        for suffix, content in (("json", b["stdout"]), ("stderr", b["stderr"])):
            with open(os.path.join(out, f"{name}.{suffix}"), "wb") as f:
                f.write(content)
        with open(os.path.join(out, f"{name}.rc"), "w") as f:
            f.write(f"{b['rc']}\n")
        with open(os.path.join(out, f"{name}.secs"), "w") as f:
            f.write(f"{b['secs']}\n")
        print(f"extract: {name}: rc={b['rc']} {len(b['stdout'])} bytes stdout, {b['secs']}s in guest")

    with open(os.path.join(out, "commands.order"), "w") as f:
        f.write("".join(f"{n}\n" for n in names if n != "guest-facts"))

    if init:
        print(f"extract: kernel booted to /init in {init.group(1).decode()}s (guest uptime)")
    problems = []
    if "guest-facts" not in names:
        problems.append("no guest-facts block")
    missing = [n for n in expected if n not in names]
    if missing:
        problems.append("no output for command(s): " + ", ".join(missing))
    if not done:
        problems.append("no ===DONE=== marker (guest did not finish its command list)")
    else:
        print(f"extract: guest finished at uptime {done.group(1).decode()}s")
    if problems:
        for p in problems:
            print(f"extract: {p}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
