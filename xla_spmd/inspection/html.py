"""The inspection report as one self-contained HTML file (no network, no external files).

It holds the report's data as JSON and a small script that draws, with inline SVG:
a picture of the mesh (small multiples over the axes beyond two), the shard view of any
value (which devices hold which block; for ranks above two, small multiples over the
leading dims' shards), a per-device Gantt chart of the predicted step (and the measured
step time when there is one), the per-device memory timeline, and the op table with a text
filter, a kind filter and sortable columns.
"""

from __future__ import annotations

import html
import json

_STYLE = """
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top}
th{background:#eee;cursor:pointer;position:sticky;top:0}
.grid{display:inline-block;margin:4px 10px 10px 0;vertical-align:top}
.caption{font-size:11px;color:#555}
.cell{fill-opacity:.85;stroke:#333}.summary td:first-child{font-weight:600}
#ops{max-height:480px;overflow:auto;display:block}
"""

_SCRIPT = r"""
const R = JSON.parse(document.getElementById('data').textContent);
const NS = 'http://www.w3.org/2000/svg';
function el(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function color(key) {  // distinct hues for nearby keys: the golden angle over a hash
  let h = 0; for (const c of String(key)) h = (h * 31 + c.charCodeAt(0)) % 1000003;
  return `hsl(${(h * 137.508) % 360},60%,72%)`;
}
function combos(sizes) {  // every index tuple of a box of `sizes`, row-major
  let out = [[]];
  for (const n of sizes) { const next = []; for (const p of out) for (let i = 0; i < n; i++)
    next.push(p.concat([i])); out = next; }
  return out;
}
function grid(parent, rows, cols, label, fill, caption) {
  const box = document.createElement('div'); box.className = 'grid';
  const size = Math.max(18, Math.min(48, Math.floor(360 / Math.max(rows, cols))));
  const svg = el('svg', {width: cols * size + 2, height: rows * size + 2}, box);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) {
    const g = el('g', {}, svg);
    el('rect', {x: c * size + 1, y: r * size + 1, width: size, height: size, class: 'cell',
                fill: fill(r, c)}, g);
    el('text', {x: c * size + size / 2 + 1, y: r * size + size / 2 + 5, 'text-anchor': 'middle',
                'font-size': Math.min(12, size / 2.5)}, g, label(r, c));
    el('title', {}, g, label(r, c));
  }
  const cap = document.createElement('div'); cap.className = 'caption'; cap.textContent = caption;
  box.appendChild(cap); parent.appendChild(box);
}
function at(nested, index) { let v = nested; for (const i of index) v = v[i]; return v; }

function drawMesh() {
  const host = document.getElementById('mesh');
  const names = Object.keys(R.mesh.axes), sizes = names.map(n => R.mesh.axes[n]);
  const lead = sizes.slice(0, Math.max(0, sizes.length - 2));
  const rows = sizes.length >= 2 ? sizes[sizes.length - 2] : 1;
  const cols = sizes.length >= 1 ? sizes[sizes.length - 1] : 1;
  for (const prefix of combos(lead)) {
    const pick = (r, c) => at(R.mesh.devices, sizes.length >= 2 ? prefix.concat([r, c])
                                                                  : sizes.length ? [c] : []);
    const cap = prefix.map((v, i) => `${names[i]}=${v}`).join(', ') ||
      names.slice(-2).map(n => `${n}=${R.mesh.axes[n]}`).join(' x ');
    grid(host, rows, cols, (r, c) => 'd' + pick(r, c), (r, c) => color(String(pick(r, c))), cap);
  }
}

function drawShards() {
  const select = document.getElementById('value');
  R.values.forEach((v, i) => { const o = document.createElement('option'); o.value = i;
    o.textContent = `${v.name}  ${v.dtype}[${v.global_shape}]  ${v.sharding}`;
    select.appendChild(o); });
  const firstSharded = R.values.findIndex(v => v.sharding !== 'replicated' &&
                                                v.global_shape.length >= 3);
  select.value = String(firstSharded >= 0 ? firstSharded : 0);
  select.onchange = () => showShards(R.values[+select.value]);
  showShards(R.values[+select.value]);
}
function showShards(v) {
  const host = document.getElementById('shards'); host.innerHTML = '';
  if (!v) return;
  const rank = v.global_shape.length;
  const counts = Array(rank).fill(1);
  for (const [index] of v.blocks) index.forEach((x, d) => counts[d] = Math.max(counts[d], x + 1));
  const holders = new Map(v.blocks.map(([index, devs]) => [index.join(','), devs]));
  const info = document.createElement('div');
  info.textContent = `global ${v.dtype}[${v.global_shape}] -> local [${v.local_shape}]; ` +
    `shards per dim [${counts}]; dims ${v.spec.map((a, d) => `${d}:${a.join('+') || '-'}`)
    .join(' ')}; ${v.provenance}`;
  host.appendChild(info);
  const lead = counts.slice(0, Math.max(0, rank - 2));
  const rows = rank >= 2 ? counts[rank - 2] : 1, cols = rank >= 1 ? counts[rank - 1] : 1;
  let drawn = 0;
  for (const prefix of combos(lead)) {
    if (drawn++ >= 64) { host.append(' (more blocks not drawn)'); break; }
    const key = (r, c) => (rank >= 2 ? prefix.concat([r, c]) : rank ? [c] : []).join(',');
    const devs = (r, c) => holders.get(key(r, c)) || [];
    const cap = lead.length ? prefix.map((x, d) => `dim ${d} shard ${x}`).join(', ')
                            : `dims ${Math.max(0, rank - 2)}..${rank - 1}`;
    grid(host, rows, cols, (r, c) => devs(r, c).join(','),
         (r, c) => color(devs(r, c).join(',')), cap);
  }
}

function drawGantt() {
  const host = document.getElementById('gantt');
  const devices = [].concat(...[R.mesh.devices].flat(Infinity).map(x => [x]));
  const end = Math.max(R.summary.step_time, R.measured || 0);
  const width = 1000, row = 16, left = 50, top = 20;
  const shown = devices.slice(0, 32), extra = R.measured ? 1 : 0;
  const svg = el('svg', {width: width + left + 10,
                         height: top + (shown.length + extra) * row + 30, id: 'gantt-svg'}, host);
  const x = t => left + t / end * width;
  for (let i = 0; i <= 10; i++) {
    el('line', {x1: x(end * i / 10), x2: x(end * i / 10), y1: top - 5,
                y2: top + (shown.length + extra) * row, stroke: '#ddd'}, svg);
    el('text', {x: x(end * i / 10), y: top - 8, 'font-size': 10, 'text-anchor': 'middle'}, svg,
       (end * i / 10 * 1e3).toFixed(2) + ' ms');
  }
  shown.forEach((d, k) => {
    const y = top + k * row;
    el('text', {x: 2, y: y + 12, 'font-size': 11}, svg, 'd' + d);
    for (const op of R.ops) {
      if (op.kind === 'free' || op.time <= 0) continue;
      const bar = el('rect', {x: x(op.start), y: y + (op.stream === 'comm' ? 8 : 1),
        width: Math.max(0.5, x(op.start + op.time) - x(op.start)), height: 7,
        fill: op.kind === 'collective' ? '#e8833a' : '#4c78a8', class: 'bar'}, svg);
      el('title', {}, bar, `${op.name} (${op.opcode}) ${(op.time * 1e6).toFixed(0)} us` +
         (op.source ? ' ' + op.source : ''));
    }
  });
  if (R.measured) {
    const y = top + shown.length * row;
    el('text', {x: 2, y: y + 12, 'font-size': 11}, svg, 'measured');
    el('rect', {x: left, y: y + 2, width: x(R.measured) - left, height: 10, fill: '#59a14f'}, svg);
  }
  const legend = top + (shown.length + extra) * row + 18;
  el('rect', {x: left, y: legend - 9, width: 10, height: 10, fill: '#4c78a8'}, svg);
  el('text', {x: left + 14, y: legend, 'font-size': 11}, svg, 'compute');
  el('rect', {x: left + 80, y: legend - 9, width: 10, height: 10, fill: '#e8833a'}, svg);
  el('text', {x: left + 94, y: legend, 'font-size': 11}, svg, 'collective');
}

function drawMemory() {
  const host = document.getElementById('memory');
  const m = R.memory, peak = Math.max(1, ...m), width = 1000, height = 120, left = 60;
  const svg = el('svg', {width: width + left + 10, height: height + 30}, host);
  const pts = m.map((v, i) => `${left + i / Math.max(1, m.length - 1) * width},` +
                              `${10 + height - v / peak * height}`).join(' ');
  el('polyline', {points: pts, fill: 'none', stroke: '#4c78a8'}, svg);
  el('text', {x: 2, y: 14, 'font-size': 11}, svg, (peak / 1024).toFixed(1) + ' KiB');
  el('text', {x: left, y: height + 28, 'font-size': 11}, svg,
     'instructions in schedule order; peak ' + (peak / 1024).toFixed(1) + ' KiB per device');
}

function drawOps() {
  const body = document.querySelector('#ops tbody');
  const text = document.getElementById('filter'), kind = document.getElementById('kind');
  let key = 'start', ascending = true;
  const columns = ['name', 'opcode', 'kind', 'start', 'time', 'bytes', 'group_size',
                   'cause', 'source'];
  function render() {
    const words = text.value.toLowerCase();
    const rows = R.ops.filter(op => (kind.value === 'all' || op.kind === kind.value) &&
      columns.some(c => String(op[c]).toLowerCase().includes(words)));
    rows.sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0) * (ascending ? 1 : -1));
    body.innerHTML = '';
    for (const op of rows.slice(0, 2000)) {
      const tr = document.createElement('tr');
      for (const c of columns) {
        const td = document.createElement('td');
        const v = op[c];
        td.textContent = (c === 'start' || c === 'time') ? (v * 1e6).toFixed(1) : v;
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    document.getElementById('count').textContent = `${rows.length} of ${R.ops.length} ops`;
  }
  document.querySelectorAll('#ops th').forEach((th, i) => th.onclick = () => {
    ascending = key === columns[i] ? !ascending : true; key = columns[i]; render(); });
  text.oninput = render; kind.onchange = render; render();
}

drawMesh(); drawShards(); drawGantt(); drawMemory(); drawOps();
document.body.setAttribute('data-ready', '1');
"""


def report_data(report) -> dict:
    """The report as plain JSON-able data (what the page's script reads)."""
    cost = report.cost
    ops = [{"name": op.name, "opcode": op.opcode, "kind": op.kind, "start": op.start,
            "time": op.time, "bytes": op.bytes, "group_size": op.group_size,
            "cause": op.cause, "source": op.source, "stream": op.stream} for op in cost.ops]
    values = [{"name": v.name, "opcode": v.opcode, "dtype": v.dtype,
               "global_shape": list(v.global_shape), "local_shape": list(v.local_shape),
               "sharding": v.sharding, "spec": [list(a) for a in v.spec],
               "blocks": v.blocks, "provenance": v.provenance, "source": v.source}
              for v in report.values]
    return {"name": report.name, "mesh": {"axes": report.mesh_axes,
                                          "devices": report.mesh_devices},
            "summary": {"step_time": cost.step_time, "compute_time": cost.compute_time,
                        "collective_time": cost.collective_time,
                        "collective_bytes": cost.collective_bytes,
                        "peak_memory": cost.peak_memory, "profile": cost.profile.name},
            "values": values, "ops": ops, "memory": cost.memory_timeline,
            "measured": report.measured_step_time}


def _summary_rows(report) -> str:
    from xla_spmd.inspection.terminal import human_bytes, human_time

    cost = report.cost
    rows = [("mesh", " x ".join(f"{k}={v}" for k, v in report.mesh_axes.items())),
            ("profile", cost.profile.name),
            ("predicted step time", human_time(cost.step_time)),
            ("measured step time", human_time(report.measured_step_time)
             if report.measured_step_time is not None else "not run"),
            ("compute", human_time(cost.compute_time)),
            ("collectives", f"{human_time(cost.collective_time)}, {len(report.collectives)} "
                            f"ops, {human_bytes(cost.collective_bytes)} per device"),
            ("peak memory per device", human_bytes(cost.peak_memory))]
    top = "".join(f"<tr><td>{html.escape(op.name)}</td><td>{op.opcode} x{op.group_size}</td>"
                  f"<td>{human_time(op.time)}</td><td>{html.escape(op.cause)}</td>"
                  f"<td>{html.escape(op.source)}</td></tr>" for op in report.top_collectives())
    summary = "".join(f"<tr><td>{k}</td><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return (f"<table class='summary'>{summary}</table><h2>Top collectives by time</h2>"
            f"<table><tr><th>collective</th><th>kind</th><th>time</th><th>forced by</th>"
            f"<th>source</th></tr>{top}</table>")


def render_html(report) -> str:
    """One self-contained HTML page for `report`."""
    data = json.dumps(report_data(report)).replace("</", "<\\/")
    title = html.escape(f"xla-spmd inspect: {report.name}")
    headers = "".join(f"<th>{c}</th>" for c in ("name", "op", "kind", "start us", "time us",
                                                "bytes", "group", "forced by", "source"))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{_STYLE}</style></head><body>
<h1>{title}</h1>
{_summary_rows(report)}
<h2>Mesh</h2><div id="mesh"></div>
<h2>Shards</h2><select id="value"></select><div id="shards"></div>
<h2>Timeline (per device, predicted)</h2><div id="gantt"></div>
<h2>Memory (per device)</h2><div id="memory"></div>
<h2>Ops</h2>
<input id="filter" placeholder="filter: name, op, source ..." size="40">
<select id="kind"><option value="all">all kinds</option><option>compute</option>
<option>collective</option><option>free</option></select> <span id="count"></span>
<table id="ops"><thead><tr>{headers}</tr></thead><tbody></tbody></table>
<script type="application/json" id="data">{data}</script>
<script>{_SCRIPT}</script>
</body></html>
"""
