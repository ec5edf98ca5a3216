#!/usr/bin/env bash
# The HTML report in a real browser: saves two quick runs, writes a run report and a
# comparison report, opens each in headless Chromium (installed from Debian's packages
# when missing), and fails on any console message or failed load. Screenshots and the
# browser logs land in target/report-test/.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=target/report-test
rm -rf "$OUT" && mkdir -p "$OUT"
say() { echo "[report] $*"; }
die() { echo "[report] FAIL: $*" >&2; exit 1; }

SUDO=()
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "not root and no sudo: cannot install chromium"
    SUDO=(sudo)
fi
BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ]; then
    say "installing chromium (Debian package)"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$OUT/apt.log" 2>&1 \
        || { cat "$OUT/apt.log" >&2; die "apt-get update failed"; }
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
        >>"$OUT/apt.log" 2>&1 || { tail -n 30 "$OUT/apt.log" >&2; die "apt-get install chromium failed"; }
    BROWSER=$(command -v chromium)
fi

say "building memfabric"
cargo build --release -q -p memfabric
MF=$PWD/target/release/memfabric
export MEMFABRIC_DB=$PWD/$OUT/runs.sqlite

say "two quick runs, saved"
(cd "$OUT" && "$MF" --quiet run --label first --quick >/dev/null)
(cd "$OUT" && "$MF" --quiet run --label second --quick >/dev/null)
"$MF" --quiet report 1 -o "$OUT/run.html"
"$MF" --quiet report 1 --compare 2 -o "$OUT/compare.html"

say "a synthetic fleet of 200 hosts, ingested and reported"
cargo build --release -q -p memfabric --example fleet_synth
target/release/examples/fleet_synth write --hosts 200 --out "$OUT/fleet" --truth "$OUT/fleet-truth.json"
"$MF" --quiet --store "$OUT/fleet.sqlite" fleet ingest --campaign rig "$OUT/fleet" >/dev/null
"$MF" --quiet --store "$OUT/fleet.sqlite" fleet report --campaign rig --html "$OUT/fleet.html" >/dev/null

check() {
    local name=$1 html=$PWD/$OUT/$1.html want=$2
    "$BROWSER" --headless=new --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
        --enable-logging=stderr --v=0 --window-size=1280,2400 \
        --screenshot="$PWD/$OUT/$name.png" "file://$html" >"$OUT/$name.stdout" 2>"$OUT/$name.log" \
        || { tail -n 20 "$OUT/$name.log" >&2; die "$name: chromium exited with an error"; }
    [ -s "$OUT/$name.png" ] || die "$name: no screenshot"
    # The page has no script: any console line, or a failed load, is a fault.
    if grep -E "CONSOLE|Uncaught|Failed to load resource|net::ERR_" "$OUT/$name.log"; then
        die "$name: console messages above (log: $OUT/$name.log)"
    fi
    "$BROWSER" --headless=new --no-sandbox --disable-gpu --dump-dom "file://$html" >"$OUT/$name.dom" 2>/dev/null \
        || die "$name: --dump-dom failed"
    local svgs
    svgs=$(grep -o "<svg" "$OUT/$name.dom" | wc -l)
    [ "$svgs" -ge "$want" ] || die "$name: the browser's DOM holds $svgs SVG figures, expected $want or more"
    say "$name: rendered, $svgs SVG figures, no console messages, screenshot $OUT/$name.png"
}
# Layout at a wide and a narrow window: no page wider than the window, and no legend
# or level label of a chart drawn over another label. The page has no script; a
# copy with a probe appended measures what the browser laid out (getBBox) and
# writes its verdict into the DOM that --dump-dom prints.
PROBE='<script>(function(){var bad=[];var d=document.documentElement;
if(d.scrollWidth>innerWidth+1)bad.push("page "+d.scrollWidth+" px wide in a "+innerWidth+" px window");
document.querySelectorAll("svg").forEach(function(svg,i){var all=[].slice.call(svg.querySelectorAll("text"));
all.filter(function(t){return t.classList.contains("legend")||t.classList.contains("mark")}).forEach(function(a){
all.forEach(function(b){if(a===b)return;var p=a.getBBox(),q=b.getBBox();
if(p.x<q.x+q.width&&q.x<p.x+p.width&&p.y<q.y+q.height&&q.y<p.y+p.height)
bad.push((svg.getAttribute("aria-label")||"figure "+i)+": \""+a.textContent+"\" over \""+b.textContent+"\"")})})});
document.body.setAttribute("data-probe",bad.length?bad.join(" | "):"ok")})()</script>'
layout() {
    local name=$1 width=$2 probe=$PWD/$OUT/$1-probe.html
    PROBE="$PROBE" python3 -c 'import os,sys; t=open(sys.argv[1]).read(); open(sys.argv[2],"w").write(t.replace("</body>", os.environ["PROBE"]+"</body>"))' "$OUT/$name.html" "$probe"
    "$BROWSER" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size="$width,1200" \
        --screenshot="$PWD/$OUT/$name-$width.png" "file://$probe" >/dev/null 2>&1 || die "$name at $width px: chromium failed"
    "$BROWSER" --headless=new --no-sandbox --disable-gpu --window-size="$width,1200" --dump-dom "file://$probe" \
        >"$OUT/$name-$width.dom" 2>/dev/null || die "$name at $width px: --dump-dom failed"
    local verdict
    verdict=$(grep -o 'data-probe="[^"]*"' "$OUT/$name-$width.dom" | head -n 1)
    [ "$verdict" = 'data-probe="ok"' ] || die "$name at $width px: ${verdict:-no verdict from the probe}"
    say "$name at $width px: nothing overlaps, nothing wider than the window"
}

# A run of the quick suite draws at least the latency and c2c heatmaps, the
# loaded-latency curve and two sweep curves; the comparison shows both runs.
check run 5
check compare 10
# The fleet page: the host heatmap and a strip plot per class (4 classes).
check fleet 5
for page in run compare fleet; do
    for width in 1400 800; do layout "$page" "$width"; done
done
say "OK"
