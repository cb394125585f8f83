"""The memory viewer: one self-contained HTML page from a snapshot (no network, no files).

    python -m ember.memory.viz snapshot.json -o memory.html
    python -m ember.memory.viz before.json after.json -o diff.html    # adds a diff

The page has three parts, drawn by inline JavaScript into inline SVG and tables from the
data embedded in the page: memory over allocation events stacked by allocation site (replayed from the
snapshot's alloc/free trace: the live blocks at the end, walked back event by event), the
largest live blocks with their stacks (click a row), and, given two snapshots, what grew
and what is new between them, by site. It reads the JSON of ``_dump_snapshot`` and needs
nothing from ember (this file imports only the standard library).
"""
import argparse
import html
import json
import re
import sys

MAX_SITES = 12          # the rest of the sites are drawn as one "other" band
MAX_POINTS = 2000       # the timeline is thinned to at most this many points
MAX_BLOCKS = 200        # rows of the largest-blocks table


def timeline(snap):
    """{"sites": [...], "t": [time_us...], "series": {site: [bytes...]}}: bytes live per
    allocation site after each traced event (the first point is before the first event)."""
    state = {}
    for b in snap["blocks"]:
        state[b["site"]] = state.get(b["site"], 0) + b["size"]
    events = sorted(snap.get("trace", ()), key=lambda e: e["time_us"])
    points = [(snap.get("time_us", events[-1]["time_us"] if events else 0.0), dict(state))]
    for e in reversed(events):                       # undo each event, newest first
        d = -e["size"] if e["action"] == "alloc" else e["size"]
        state[e["site"]] = state.get(e["site"], 0) + d
        points.append((e["time_us"], dict(state)))
    points.reverse()
    totals = {}
    for _, st in points:
        for s, v in st.items():
            totals[s] = max(totals.get(s, 0), v)
    sites = [s for s, v in sorted(totals.items(), key=lambda kv: -kv[1]) if v > 0]
    keep, rest = sites[:MAX_SITES], sites[MAX_SITES:]
    if len(points) > MAX_POINTS:
        step = len(points) / MAX_POINTS
        points = [points[int(i * step)] for i in range(MAX_POINTS)] + [points[-1]]
    t0 = points[0][0] if points else 0.0
    series = {s: [max(st.get(s, 0), 0) for _, st in points] for s in keep}
    if rest:
        series["other sites"] = [sum(max(st.get(s, 0), 0) for s in rest) for _, st in points]
        keep = keep + ["other sites"]
    return {"sites": keep, "t": [(t - t0) / 1e3 for t, _ in points], "series": series}


def by_site(snap):
    out = {}
    for b in snap["blocks"]:
        n, k = out.get(b["site"], (0, 0))
        out[b["site"]] = (n + b["size"], k + 1)
    return out


def diff(before, after):
    """Per site: bytes before, after, and the change; and the blocks new in `after`
    (a block is the same when address, size and serial match)."""
    a, b = by_site(before), by_site(after)
    rows = []
    for site in set(a) | set(b):
        x, y = a.get(site, (0, 0))[0], b.get(site, (0, 0))[0]
        if x != y:
            rows.append({"site": site, "before": x, "after": y, "delta": y - x})
    rows.sort(key=lambda r: -abs(r["delta"]))
    old = {(k["address"], k["size"], k.get("serial")) for k in before["blocks"]}
    new = [_block_row(k) for k in after["blocks"]
           if (k["address"], k["size"], k.get("serial")) not in old]
    new.sort(key=lambda r: -r["size"])
    return {"sites": rows, "new_blocks": new[:MAX_BLOCKS],
            "before_total": sum(k["size"] for k in before["blocks"]),
            "after_total": sum(k["size"] for k in after["blocks"])}


def _holders(reasons, limit=4):
    """The block's holders for a table cell: the same reason for several items of one list
    (a graph saved once per kept loss) said once with a count; at most `limit` lines."""
    counts = {}
    for r in reasons:
        key = re.sub(r"\bitem \d+ of\b", "items of", r)
        counts[key] = counts.get(key, 0) + 1
    out = [k if n == 1 else f"{k} (x{n})" for k, n in counts.items()]
    return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])


def _block_row(b):
    return {"size": b["size"], "dtype": b["dtype"], "shape": b["shape"], "site": b["site"],
            "belongs_to": _holders(b.get("belongs_to", [])),
            "frames": [f"{f['filename']}:{f['line']} in {f['name']}"
                       for f in b.get("frames", [])]}


def page_data(snap, before=None, title="snapshot"):
    blocks = sorted(snap["blocks"], key=lambda b: -b["size"])
    data = {"title": title, "history": snap.get("history"), "stats": {
        k: snap.get("stats", {}).get(k, 0) for k in (
            "allocated_bytes.all.current", "allocated_bytes.all.peak", "allocation.all.current")},
        "n_blocks": len(blocks), "timeline": timeline(snap),
        "blocks": [_block_row(b) for b in blocks[:MAX_BLOCKS]],
        "sites": [{"site": s, "bytes": n, "blocks": k}
                  for s, (n, k) in sorted(by_site(snap).items(), key=lambda kv: -kv[1][0])]}
    if before is not None:
        data["diff"] = diff(before, snap)
    return data


def render(snap, before=None, title="snapshot"):
    """The HTML page (a str) for a snapshot dict, with a diff against `before` if given."""
    data = json.dumps(page_data(snap, before, title)).replace("</", "<\\/")
    return (_PAGE.replace("@TITLE@", html.escape(title)).replace("@DATA@", data)
            .replace("@SCRIPT@", _SCRIPT))


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ember memory: @TITLE@</title>
<style>
body{font:14px system-ui,sans-serif;margin:16px 24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%}td,th{padding:3px 8px;border-bottom:1px solid #eee;
text-align:left;vertical-align:top}th{background:#f6f6f6}td.n{text-align:right;
font-variant-numeric:tabular-nums;white-space:nowrap}tr.blk{cursor:pointer}
tr.blk:hover{background:#f3f7ff}pre{margin:4px 0;font-size:12px;color:#444}
.sw{display:inline-block;width:11px;height:11px;margin-right:6px;vertical-align:-1px}
#legend div{margin:2px 0}.stat{display:inline-block;margin-right:24px}.up{color:#b00}
.down{color:#070}svg text{font-size:11px;fill:#555}
</style></head><body>
<h1>ember memory: @TITLE@</h1>
<div id="stats"></div>
<h2>Memory over time, by allocation site</h2>
<div id="timeline"></div><div id="legend"></div>
<h2>Largest live blocks</h2><p>Click a row for the stack that allocated it.</p>
<table id="blocks"><thead><tr><th>Size</th><th>dtype</th><th>Shape</th><th>Site</th>
<th>Belongs to</th></tr></thead><tbody></tbody></table>
<div id="diff"></div>
<script type="application/json" id="data">@DATA@</script>
<script>@SCRIPT@</script>
</body></html>
"""

_SCRIPT = r"""
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const COLORS = ["#4e79a7","#f28e2b","#e15759","#76b7b2","#59a14f","#edc948","#b07aa1",
                "#ff9da7","#9c755f","#bab0ac","#86bcb6","#d37295","#888888"];
function fmt(n) {
  const u = ["B","KiB","MiB","GiB"]; let i = 0, s = n < 0 ? "-" : ""; n = Math.abs(n);
  while (n >= 1024 && i < 3) { n /= 1024; i++; }
  return s + (i ? n.toFixed(2) : n.toFixed(0)) + " " + u[i];
}
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}
function stats() {
  const s = D.stats, box = document.getElementById("stats");
  [["Allocated now", fmt(s["allocated_bytes.all.current"])],
   ["Peak", fmt(s["allocated_bytes.all.peak"])],
   ["Live blocks", String(D.n_blocks)],
   ["History", D.history === null ? "off" : D.history]].forEach(([k, v]) => {
    const d = el("span", {class: "stat"}); d.appendChild(el("b", {}, k + ": "));
    d.appendChild(document.createTextNode(v)); box.appendChild(d);
  });
}
function timeline() {
  const T = D.timeline, W = 1100, H = 320, L = 70, B = 30, n = T.t.length;
  const box = document.getElementById("timeline");
  if (!n || !T.sites.length) { box.textContent = "No memory recorded."; return; }
  const tot = T.t.map((_, i) => T.sites.reduce((a, s) => a + T.series[s][i], 0));
  const ymax = Math.max(1, ...tot), tmin = T.t[0], tmax = Math.max(T.t[n - 1], tmin + 1e-9);
  // x is the event index (as torch's viewer): a short-lived spike gets its own width
  const X = i => L + (W - L - 10) * (n > 1 ? i / (n - 1) : 0.5);
  const Y = v => H - B - (H - B - 10) * v / ymax;
  const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, role: "img",
                           style: "width:100%;height:auto"});
  for (let k = 0; k <= 4; k++) {
    const v = ymax * k / 4, y = Y(v);
    root.appendChild(svg("line", {x1: L, x2: W - 10, y1: y, y2: y, stroke: "#eee"}));
    const lab = svg("text", {x: L - 6, y: y + 4, "text-anchor": "end"});
    lab.textContent = fmt(v); root.appendChild(lab);
  }
  const xl = svg("text", {x: W - 10, y: H - 8, "text-anchor": "end"});
  xl.textContent = (n - 1) + " allocation events over " + (tmax - tmin).toFixed(1) + " ms";
  root.appendChild(xl);
  const base = new Array(n).fill(0);
  const legend = document.getElementById("legend");
  T.sites.forEach((site, k) => {
    const ser = T.series[site], top = base.map((b, i) => b + ser[i]);
    let d = "";
    for (let i = 0; i < n; i++) {                  // a step line: memory holds until the next event
      d += (i ? "L" : "M") + X(i) + "," + Y(top[i]);
      if (i + 1 < n) d += "L" + X(i + 1) + "," + Y(top[i]);
    }
    for (let i = n - 1; i >= 0; i--) {
      if (i + 1 < n) d += "L" + X(i + 1) + "," + Y(base[i]);
      d += "L" + X(i) + "," + Y(base[i]);
    }
    const p = svg("path", {d: d + "Z", fill: COLORS[k % COLORS.length], opacity: 0.85,
                           "data-site": site});
    const tip = svg("title", {}); tip.textContent = site + ": peak " + fmt(Math.max(...ser));
    p.appendChild(tip); root.appendChild(p);
    for (let i = 0; i < n; i++) base[i] = top[i];
    const row = el("div"); row.appendChild(el("span", {class: "sw",
      style: "background:" + COLORS[k % COLORS.length]}));
    row.appendChild(document.createTextNode(site + " (peak " + fmt(Math.max(...ser)) + ")"));
    legend.appendChild(row);
  });
  box.appendChild(root);
}
function blocks() {
  const body = document.querySelector("#blocks tbody");
  D.blocks.forEach(b => {
    const tr = el("tr", {class: "blk"});
    tr.appendChild(el("td", {class: "n"}, fmt(b.size)));
    tr.appendChild(el("td", {}, b.dtype));
    tr.appendChild(el("td", {}, "[" + b.shape.join(", ") + "]"));
    tr.appendChild(el("td", {}, b.site));
    tr.appendChild(el("td", {}, b.belongs_to.join("; ")));
    const st = el("tr", {hidden: ""}), td = el("td", {colspan: 5});
    td.appendChild(el("pre", {}, b.frames.length ? b.frames.join("\n") :
                                 "(no stack: history was off when this block was allocated)"));
    st.appendChild(td);
    tr.addEventListener("click", () => { st.hidden = !st.hidden; });
    body.appendChild(tr); body.appendChild(st);
  });
}
function diff() {
  if (!D.diff) return;
  const box = document.getElementById("diff"), df = D.diff;
  box.appendChild(el("h2", {}, "Diff against the earlier snapshot"));
  box.appendChild(el("p", {}, "Total " + fmt(df.before_total) + " -> " + fmt(df.after_total) +
                              " (" + fmt(df.after_total - df.before_total) + ")"));
  const t = el("table", {id: "diff-sites"}), h = el("tr");
  ["Site", "Before", "After", "Change"].forEach(x => h.appendChild(el("th", {}, x)));
  t.appendChild(h);
  df.sites.forEach(r => {
    const tr = el("tr"); tr.appendChild(el("td", {}, r.site));
    tr.appendChild(el("td", {class: "n"}, fmt(r.before)));
    tr.appendChild(el("td", {class: "n"}, fmt(r.after)));
    tr.appendChild(el("td", {class: "n " + (r.delta > 0 ? "up" : "down")},
                         (r.delta > 0 ? "+" : "") + fmt(r.delta)));
    t.appendChild(tr);
  });
  box.appendChild(t);
  box.appendChild(el("h2", {}, "Blocks new in this snapshot (" + df.new_blocks.length + ")"));
  const nt = el("table", {id: "diff-new"});
  df.new_blocks.forEach(b => {
    const tr = el("tr"); tr.appendChild(el("td", {class: "n"}, fmt(b.size)));
    tr.appendChild(el("td", {}, b.site)); tr.appendChild(el("td", {}, b.belongs_to.join("; ")));
    nt.appendChild(tr);
  });
  box.appendChild(nt);
}
stats(); timeline(); blocks(); diff();
document.body.setAttribute("data-ready", "1");
"""


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ember.memory.viz",
                                 description="Draw an ember memory snapshot as one HTML page.")
    ap.add_argument("snapshots", nargs="+", help="snapshot.json (two: before, after)")
    ap.add_argument("-o", "--output", default="memory.html", help="the HTML file to write")
    args = ap.parse_args(argv)
    if len(args.snapshots) > 2:
        ap.error("give one snapshot, or two to compare")
    snaps = []
    for path in args.snapshots:
        with open(path) as f:
            snap = json.load(f)
        if not isinstance(snap, dict) or "blocks" not in snap:
            ap.error(f"{path} is not an ember memory snapshot (no 'blocks')")
        snaps.append(snap)
    before = snaps[0] if len(snaps) == 2 else None
    page = render(snaps[-1], before, title=" vs ".join(reversed(args.snapshots)))
    with open(args.output, "w") as f:
        f.write(page)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
