"""xs.inspect and `xla-spmd inspect`: values, provenance, collectives, the HTML report."""

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

import xla_spmd as xs
import xla_spmd.numpy as xnp
from xla_spmd.cli import main


def _matmul_report():
    xs.set_num_devices(4)
    mesh = xs.make_mesh({"x": 4}, axis_types=xs.AxisType.Auto)

    def f(a, b):
        return xnp.tanh(a @ b)  # the all-reduce finishes this dot's partial sums

    line = f.__code__.co_firstlineno + 1
    jitted = xs.jit(f, in_shardings=(xs.NamedSharding(mesh, xs.P(None, "x")),
                                     xs.NamedSharding(mesh, xs.P("x", None))))
    return xs.inspect(jitted, np.ones((4, 8), np.float32), np.ones((8, 4), np.float32)), line


def test_values_shapes_provenance_and_collectives():
    report, line = _matmul_report()
    by_name = {v.name: v for v in report.values}
    a, b = report.values[0], report.values[1]
    assert (a.global_shape, a.local_shape, a.spec) == ((4, 8), (4, 2), ((), ("x",)))
    assert (b.global_shape, b.local_shape) == ((8, 4), (2, 4))
    assert a.provenance == "user sharding (argument)"
    dot = next(v for v in report.values if v.opcode == "dot")
    # The contracting dim is sharded: the dot's result is replicated after an all-reduce
    # over the 4 devices of 4 x 4 floats; it is attributed to the dot and its line.
    (reduce,) = dot.collectives
    assert (reduce.opcode, reduce.group_size, reduce.bytes) == ("all-reduce", 4, 2 * 3 / 4 * 64)
    assert reduce.source.endswith(f"test_inspect.py:{line}")
    assert dot.source.endswith(f"test_inspect.py:{line}")
    tanh = next(v for v in by_name.values() if v.opcode == "tanh")
    assert tanh.local_shape == (4, 4)
    # Every device holds a quarter of a: blocks (0, k) on device k.
    assert a.blocks == [[[0, k], [k]] for k in range(4)]


def test_measured_step_time_rides_along():
    xs.set_num_devices(2)
    mesh = xs.make_mesh({"data": 2}, axis_types=xs.AxisType.Auto)
    jitted = xs.jit(lambda x: xnp.exp(-x), in_shardings=xs.NamedSharding(mesh, xs.P("data")))
    report = xs.inspect(jitted, np.ones((4, 3), np.float32), measure=2)
    assert report.measured_step_time > 0
    assert json.loads(re.search(r'id="data">(.*?)</script>', report.to_html(), re.S).group(1)
                      .replace("<\\/", "</"))["measured"] == report.measured_step_time


def test_provenance_names_the_user_argument():
    xs.set_num_devices(2)
    mesh = xs.make_mesh({"data": 2}, axis_types=xs.AxisType.Auto)
    jitted = xs.jit(lambda x: xnp.exp(-x), in_shardings=xs.NamedSharding(mesh, xs.P("data")))
    report = xs.inspect(jitted, np.ones((4, 3), np.float32))
    exp = next(v for v in report.values if v.opcode == "exponential")
    assert exp.local_shape == (2, 3)
    assert "from Arg_0 (user sharding)" in exp.provenance and "negate" in exp.provenance


def test_terminal_output_has_summary_and_top_collectives():
    from rich.console import Console

    report, _ = _matmul_report()
    console = Console(record=True, width=200)
    report.print(console)
    text = console.export_text()
    assert "top 5 collectives by time" in text and "peak memory per device" in text
    assert "all-reduce" in text and "f32[4,2]" in text


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.scripts, self.external, self._in = set(), [], [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for key in ("src", "href"):
            if key in attrs:
                self.external.append(attrs[key])
        self._in = attrs.get("id") if tag == "script" else None

    def handle_data(self, data):
        if self._in == "data":
            self.scripts.append(data)


def _rank4_on_3d_mesh_html():
    xs.set_num_devices(8)
    mesh = xs.make_mesh({"a": 2, "b": 2, "c": 2}, axis_types=xs.AxisType.Auto)

    def f(x, w):
        return xnp.tanh(xnp.einsum("ijkl,lm->ijkm", x, w)).sum(axis=0)

    jitted = xs.jit(f, in_shardings=(xs.NamedSharding(mesh, xs.P("a", None, "b", "c")),
                                     xs.NamedSharding(mesh, xs.P("c", None))))
    report = xs.inspect(jitted, np.ones((4, 4, 8, 8), np.float32),
                        np.ones((8, 6), np.float32))
    return report, report.to_html()


def test_html_is_self_contained_and_holds_nd_shard_views():
    report, page = _rank4_on_3d_mesh_html()
    parser = _Collect()
    parser.feed(page)
    assert parser.external == []                   # opens offline: nothing to fetch
    assert {"mesh", "shards", "gantt", "memory", "ops", "filter", "kind"} <= parser.ids
    data = json.loads("".join(parser.scripts).replace("<\\/", "</"))
    assert data["mesh"]["axes"] == {"a": 2, "b": 2, "c": 2}
    assert data["mesh"]["devices"] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    x = data["values"][0]
    assert x["global_shape"] == [4, 4, 8, 8] and x["local_shape"] == [2, 4, 4, 4]
    # Device d = 4a + 2b + c holds block (a, 0, b, c): worked out from the mesh order.
    expected = sorted([[a, 0, b, c], [4 * a + 2 * b + c]]
                      for a in range(2) for b in range(2) for c in range(2))
    assert sorted(x["blocks"]) == expected
    assert len(data["ops"]) == len(report.cost.ops)
    assert data["summary"]["peak_memory"] == report.cost.peak_memory


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install "
                    "chromium); the HTML's structure is tested without it above")
def test_html_loads_in_chromium_without_errors(tmp_path):
    _, page = _rank4_on_3d_mesh_html()
    path = tmp_path / "report.html"
    path.write_text(page)
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
             "--v=0"]
    dom = subprocess.run([*flags, "--dump-dom", path.as_uri()], capture_output=True,
                         text=True, timeout=120)
    # The script marks the page when every view is drawn; an exception stops it before.
    assert 'data-ready="1"' in dom.stdout, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines()
               if "CONSOLE" in line or "Uncaught" in line]
    assert console == []
    assert re.search(r"<rect[^>]*class=\"bar\"", dom.stdout)      # the Gantt has bars
    shot = tmp_path / "report.png"
    subprocess.run([*flags, "--hide-scrollbars", "--window-size=1200,1600",
                    f"--screenshot={shot}", path.as_uri()], capture_output=True, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_inspect_writes_html(tmp_path, capsys):
    program = tmp_path / "p.hlo"
    program.write_text("HloModule p\nENTRY e { x = f32[8,4] parameter(0)\n"
                       " y = f32[4,6] parameter(1)\n ROOT d = f32[8,6] dot(x, y), "
                       "lhs_contracting_dims={1}, rhs_contracting_dims={0} }")
    out = tmp_path / "r.html"
    assert main(["inspect", str(program), "--mesh", "data=2,model=2", "--html", str(out)]) == 0
    assert "peak memory per device" in capsys.readouterr().out
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert main(["inspect", str(program), "--mesh", "data=2,data=2"]) == 2
    assert "axis 'data' given twice" in capsys.readouterr().err
