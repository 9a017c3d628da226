"""Random HLO programs aimed at the CPU backend's buffer optimisations (``program.py``'s
in-place fusions and donation, ``epilogue.py``'s dot epilogues and split fusions, ``blas.py``'s
row, column and batch splits, recycled outputs), over every dtype the backend fuses.

``program(data, size)`` draws one entry computation (and its callees) as HLO text: chains of
elementwise ops whose operands are read again later, values read twice by one fusion, views
(transpose, reshape, slice, broadcast, bitcast, a tuple's element) of a value that then dies
in an elementwise op while the view is read after, dots followed by elementwise users that
read the dot twice or its operands too, dots read by another op before the fusion that reads
them last, batched dots, dot transposes, dynamic(-update)-slices at constant or computed
indices (out of range too), concatenates, pads, while loops over some of the values, results
returned twice and parameters returned as they are; ``size`` picks the shapes: ``tiny`` (odd
and empty), ``epilogue`` (dot outputs of 256 KiB and more: epilogues, row and column splits),
``large`` and ``huge`` (loop fusions of 1 MiB and more: split over threads).

``arguments(rng, kinds, special)`` draws inputs: small halves (every sum exact in any order,
so a difference is a buffer written too early, never a rounding), ``special=True`` with
NaN, infinities, signed zeros, subnormals and integer extremes, ``"normal"`` random normal
floats (sums then round: the order of a dot's or a reduce's sum shows).
"""

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
          "f16": np.float16, "s8": np.int8, "s32": np.int32, "u32": np.uint32,
          "pred": np.bool_, "c64": np.complex64}
FLOATS = ("f32", "f64", "bf16", "f16")
INTS = ("s8", "s32", "u32")


def text(dtype, dims):
    return f"{dtype}[{','.join(map(str, dims))}]"


class Gen:
    """One computation's instructions grown from drawn ops."""

    def __init__(self, data, r, c, dtype, prefix=""):
        self.data, self.r, self.c, self.dtype = data, r, c, dtype
        self.lines, self.values, self.count = [], [], 0
        self.prefix = prefix
        self.extra = []   # helper computations
        self.bias = []
        self.nodot = False
        self.keep = []  # values that must be returned

    def draw(self, s):
        return self.data.draw(s)

    def kinds(self):
        r, c = self.r, self.c
        return {"M": (r, c), "T": (c, r), "Q": (r, r), "P": (c, c), "V": (r,), "W": (c,),
                "S": (), "BM": (2, r, c), "BT": (2, c, r), "BQ": (2, r, r)}

    def new(self, dtype, dims, op):
        name = f"%{self.prefix}v{self.count}"
        self.count += 1
        self.lines.append(f"  {name} = {text(dtype, dims)} {op}")
        self.values.append((name, dtype, tuple(dims)))
        return (name, dtype, tuple(dims))

    def raw(self, dtype, dims, op):
        name = f"%{self.prefix}w{self.count}"
        self.count += 1
        self.lines.append(f"  {name} = {text(dtype, dims)} {op}")
        return name

    def reducer(self, dtype, kind):
        """A scalar reducer computation of `kind` over `dtype` (added to the module), and a
        zero (false) init value: (its name, the init's name)."""
        comp = f"%{self.prefix}red{self.count}"
        self.extra.append(
            f"{comp} (p: {dtype}[], q: {dtype}[]) -> {dtype}[] {{\n"
            f"  %p = {dtype}[] parameter(0)\n  %q = {dtype}[] parameter(1)\n"
            f"  ROOT %o = {dtype}[] {kind}(%p, %q)\n}}\n")
        return comp, self.raw(dtype, (), f"constant({'false' if dtype == 'pred' else '0'})")

    def pick(self, dims=None, dtype=None):
        pool = [v for v in self.values
                if (dims is None or v[2] == tuple(dims)) and (dtype is None or v[1] == dtype)]
        if pool:
            if self.draw(st.booleans()):
                return pool[-1]
            return self.draw(st.sampled_from(pool))
        # make one: from any value of those dims (convert), else broadcast a scalar/vector
        if dims is None:
            dims = self.draw(st.sampled_from(list(self.kinds().values())))
        if dtype is None:
            dtype = self.dtype
        same = [v for v in self.values if v[2] == tuple(dims)]
        if same:
            src = self.draw(st.sampled_from(same))
            return self.new(dtype, dims, f"convert({src[0]})")
        scal = [v for v in self.values if v[2] == () and v[1] == dtype]
        if scal:
            return self.new(dtype, dims, f"broadcast({scal[-1][0]}), dimensions={{}}")
        const = self.raw(dtype, (), f"constant({self.const(dtype)})")
        return self.new(dtype, dims, f"broadcast({const}), dimensions={{}}")

    def fresh(self, kind, dtype):
        """A new buffer of the plan's own: an elementwise fusion or a dot."""
        K = self.kinds()
        if self.draw(st.booleans()) and len(K[kind]) == 2 and dtype != "pred" \
                and not self.nodot:
            a = self.pick((K[kind][0], self.c), dtype)
            b = self.pick((self.c, K[kind][1]), dtype)
            return self.new(dtype, K[kind], f"dot({a[0]}, {b[0]}), lhs_contracting_dims={{1}}, "
                                            "rhs_contracting_dims={0}")
        a = self.pick(K[kind], dtype)
        b = self.pick(K[kind], dtype)
        f = self.draw(st.sampled_from(self.binary_ops(dtype)))
        return self.new(dtype, K[kind], f"{f}({a[0]}, {b[0]})")

    def viewrace(self):
        """x fresh; v a view of x; x dies in an elementwise op (in place?); v read after."""
        dtype = self.dtype
        K = self.kinds()
        kind = self.draw(st.sampled_from(["M", "Q", "V"]))
        x = self.fresh(kind, dtype)
        dims = K[kind]
        how = self.draw(st.sampled_from(["transpose", "reshape", "slice", "broadcast",
                                         "tuple", "identity-slice", "bitcast"]))
        if how == "transpose" and len(dims) == 2:
            v = self.new(dtype, dims[::-1], f"transpose({x[0]}), dimensions={{1,0}}")
        elif how == "reshape" and len(dims) == 2:
            v = self.new(dtype, (dims[0] * dims[1],), f"reshape({x[0]})")
        elif how == "slice" and len(dims) == 2 and dims[0] > 0:
            v = self.new(dtype, (1, dims[1]), f"slice({x[0]}), slice={{[0:1], [0:{dims[1]}]}}")
        elif how == "broadcast":
            kept = ",".join(str(i + 1) for i in range(len(dims)))
            v = self.new(dtype, (2, *dims), f"broadcast({x[0]}), dimensions={{{kept}}}")
        elif how == "tuple":
            t = f"%{self.prefix}t{self.count}"
            self.count += 1
            self.lines.append(f"  {t} = ({text(dtype, dims)}) tuple({x[0]})")
            v = self.new(dtype, dims, f"get-tuple-element({t}), index=0")
        elif how == "bitcast":
            v = self.new(dtype, dims, f"bitcast({x[0]})")
        else:
            whole = ", ".join(f"[0:{n}]" for n in dims)
            v = self.new(dtype, dims, f"slice({x[0]}), slice={{{whole}}}")
        # x's last use: elementwise (wants to be in place)
        f = self.draw(st.sampled_from(self.unary_ops(dtype)))
        if f == "is-finite":
            f = "copy"
        self.new(dtype, dims, f"{f}({x[0]})")
        # v read after: by a non-fusion (dot/reduce/root) or an elementwise op
        use = self.draw(st.sampled_from(["keep", "reduce", "binary", "dot"]))
        if use == "keep":
            self.keep.append(v)
        elif use == "reduce" and v[2] and dtype not in ("c64",):
            comp, init = self.reducer(dtype, "maximum" if dtype == "pred" else "add")
            every = ",".join(str(i) for i in range(len(v[2])))
            self.new(dtype, (), f"reduce({v[0]}, {init}), dimensions={{{every}}}, "
                                f"to_apply={comp}")
        elif use == "dot" and len(v[2]) == 2 and dtype != "pred" and not self.nodot:
            other = self.pick((v[2][1], v[2][1]), dtype) if v[2][1] in (self.r, self.c) else None
            if other is not None:
                self.new(dtype, (v[2][0], v[2][1]), f"dot({v[0]}, {other[0]}), "
                         "lhs_contracting_dims={1}, rhs_contracting_dims={0}")
            else:
                self.keep.append(v)
        else:
            f = "and" if dtype == "pred" else "add"
            self.new(dtype, v[2], f"{f}({v[0]}, {v[0]})")

    def dotread(self):
        """d = dot; g reads d (not elementwise, or elementwise but not last); f(d, older)
        reads d last: an epilogue must not write over d before g read it."""
        dtype = self.dtype
        K = self.kinds()
        older = self.pick(K["M"], dtype)
        a = self.pick(K["Q"], dtype)
        d = self.new(dtype, K["M"], f"dot({a[0]}, {older[0]}), lhs_contracting_dims={{1}}, "
                                    "rhs_contracting_dims={0}")
        how = self.draw(st.sampled_from(["reduce", "transpose", "keep", "dot"]))
        if how == "reduce" and dtype != "c64":
            comp = f"%{self.prefix}red{self.count}"
            self.extra.append(
                f"{comp} (p: {dtype}[], q: {dtype}[]) -> {dtype}[] {{\n"
                f"  %p = {dtype}[] parameter(0)\n  %q = {dtype}[] parameter(1)\n"
                f"  ROOT %o = {dtype}[] maximum(%p, %q)\n}}\n")
            init = self.raw(dtype, (), "constant(0)")
            self.new(dtype, (self.r,), f"reduce({d[0]}, {init}), dimensions={{1}}, to_apply={comp}")
        elif how == "transpose":
            self.keep.append(self.new(dtype, K["T"], f"transpose({d[0]}), dimensions={{1,0}}"))
        elif how == "dot":
            b = self.pick(K["P"], dtype)
            self.new(dtype, K["M"], f"dot({d[0]}, {b[0]}), lhs_contracting_dims={{1}}, "
                                    "rhs_contracting_dims={0}")
        else:
            self.keep.append(self.new(dtype, K["M"], f"copy({d[0]})"))
        f = self.draw(st.sampled_from(self.binary_ops(dtype)))
        self.new(dtype, K["M"], f"{f}({d[0]}, {older[0]})")
        if self.draw(st.booleans()):
            self.keep.append(older)  # read later: the fusion writes over d, not older

    def index(self, n):
        """An s32 scalar index: a constant, or a value of the program (maybe out of range)."""
        scalars = [v for v in self.values if v[2] == () and v[1] == "s32"]
        if scalars and self.draw(st.booleans()):
            return self.draw(st.sampled_from(scalars))[0]
        return self.raw("s32", (), f"constant({self.draw(st.integers(-1, n))})")

    def const(self, dtype):
        if dtype == "pred":
            return "true"
        if dtype == "c64":
            return "(1, 0.5)"
        if dtype in INTS:
            return "3"
        return "0.5"

    def unary_ops(self, dtype):
        if dtype == "pred":
            return ["not", "copy"]
        if dtype in INTS:
            return ["negate", "abs", "not", "copy", "sign"] if dtype != "u32" else \
                ["not", "copy", "negate"]
        if dtype == "c64":
            return ["negate", "copy"]
        return ["negate", "abs", "floor", "copy", "sign", "ceil", "round-nearest-even",
                "round-nearest-afz", "sqrt", "is-finite", "exponential", "log", "tanh",
                "logistic", "rsqrt", "cbrt", "sine", "cosine", "exponential-minus-one",
                "log-plus-one"]

    def binary_ops(self, dtype):
        if dtype == "pred":
            return ["and", "or", "xor", "maximum", "minimum"]
        if dtype in INTS:
            return ["add", "subtract", "multiply", "maximum", "minimum", "and", "xor",
                    "divide", "remainder", "shift-left", "shift-right-logical",
                    "shift-right-arithmetic", "or", "power"]
        if dtype == "c64":
            return ["add", "subtract", "multiply", "divide"]
        return ["add", "subtract", "multiply", "maximum", "minimum", "divide", "remainder",
                "power", "atan2"]

    def step(self):
        op = self.draw(st.sampled_from(
            ["unary", "binary", "binary", "binary", "twice", "select", "convert",
             "broadcast", "transpose", "reshape", "slice", "reverse", "reduce", "dot", "dot",
             "epilogue", "concat", "dus", "ds", "iota", "tuple", "pad", "clamp", "bdot",
             "tdot", "viewrace", "viewrace", "dotread"]
            + self.bias))
        K = self.kinds()
        if self.nodot and op in ("dot", "epilogue", "bdot", "tdot"):
            op = "binary"
        if op in ("dot", "epilogue") and self.dtype != "pred":
            x = self.pick(K[self.draw(st.sampled_from(["M", "T", "Q", "P"]))], self.dtype)
        else:
            x = self.pick()
        name, dtype, dims = x
        if op == "bdot" and self.dtype != "pred":
            lhs = self.pick(K["BM"], self.dtype)
            rhs = self.pick(K["BT"], self.dtype)
            d = self.new(self.dtype, K["BQ"], f"dot({lhs[0]}, {rhs[0]}), lhs_batch_dims={{0}}, "
                         "rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}")
            other = self.pick(K["BQ"], self.dtype)
            f = self.draw(st.sampled_from(self.binary_ops(self.dtype)))
            self.new(self.dtype, K["BQ"], f"{f}({d[0]}, {other[0]})")
            return
        if op == "tdot" and self.dtype != "pred":
            lhs = self.pick(K["M"], self.dtype)
            rhs = self.pick(K["P"], self.dtype)
            d = self.raw(self.dtype, K["M"], f"dot({lhs[0]}, {rhs[0]}), "
                         "lhs_contracting_dims={1}, rhs_contracting_dims={0}")
            t = self.new(self.dtype, K["T"], f"transpose({d}), dimensions={{1,0}}")
            other = self.pick(K["T"], self.dtype)
            f = self.draw(st.sampled_from(self.binary_ops(self.dtype)))
            self.new(self.dtype, K["T"], f"{f}({other[0]}, {t[0]})")
            return
        if op == "viewrace":
            self.viewrace()
            return
        if op == "dotread" and self.dtype != "pred":
            self.dotread()
            return
        if op == "unary":
            f = self.draw(st.sampled_from(self.unary_ops(dtype)))
            self.new("pred" if f == "is-finite" else dtype, dims, f"{f}({name})")
        elif op == "binary":
            y = self.pick(dims, dtype)
            f = self.draw(st.sampled_from(self.binary_ops(dtype)))
            if self.draw(st.booleans()):
                name, y = y[0], (name,)
            self.new(dtype, dims, f"{f}({name}, {y[0]})")
        elif op == "twice":
            f = self.draw(st.sampled_from(self.binary_ops(dtype)))
            inner = self.new(dtype, dims, f"{f}({name}, {name})")
            g = self.draw(st.sampled_from(self.binary_ops(dtype)))
            self.new(dtype, dims, f"{g}({inner[0]}, {name})")
        elif op == "clamp" and dtype not in ("c64",):
            lo = self.pick((), dtype)
            hi = self.pick(dims, dtype)
            self.new(dtype, dims, f"clamp({lo[0]}, {name}, {hi[0]})")
        elif op == "select":
            y = self.pick(dims, dtype)
            if dtype == "c64":
                cmp = self.raw("pred", dims, f"compare({name}, {y[0]}), direction=EQ")
            else:
                d = self.draw(st.sampled_from(["LT", "GT", "LE", "GE", "EQ", "NE"]))
                cmp = self.raw("pred", dims, f"compare({name}, {y[0]}), direction={d}")
            self.new(dtype, dims, f"select({cmp}, {y[0]}, {name})")
        elif op == "convert":
            to = self.draw(st.sampled_from(list(DTYPES)))
            if dtype == "c64" and to != "c64":
                return
            self.new(to, dims, f"convert({name})")
        elif op == "broadcast":
            if dims == ():
                target = self.draw(st.sampled_from(["M", "V", "W", "Q"]))
                self.new(dtype, K[target], f"broadcast({name}), dimensions={{}}")
            elif len(dims) == 1:
                if dims[0] == self.r and self.draw(st.booleans()):
                    self.new(dtype, K["M"], f"broadcast({name}), dimensions={{0}}")
                elif dims[0] == self.c:
                    self.new(dtype, K["M"], f"broadcast({name}), dimensions={{1}}")
                else:
                    self.new(dtype, K["T"], f"broadcast({name}), dimensions={{1}}")
            elif len(dims) == 2 and self.draw(st.booleans()):
                self.new(dtype, (2, *dims), f"broadcast({name}), dimensions={{1,2}}")
            else:
                every = ",".join(str(i) for i in range(len(dims)))
                self.new(dtype, dims, f"broadcast({name}), dimensions={{{every}}}")
        elif op == "transpose" and len(dims) == 2:
            self.new(dtype, dims[::-1], f"transpose({name}), dimensions={{1,0}}")
        elif op == "reshape" and len(dims) == 2:
            flat = self.raw(dtype, (dims[0] * dims[1],), f"reshape({name})")
            if self.draw(st.booleans()) or dims[0] == dims[1]:
                self.new(dtype, dims, f"reshape({flat})")
            else:
                self.new(dtype, dims[::-1], f"reshape({flat})")  # not a transpose!
        elif op == "slice" and len(dims) == 2:
            if self.draw(st.booleans()):
                self.new(dtype, dims, f"slice({name}), slice={{[0:{dims[0]}], [0:{dims[1]}]}}")
            elif dims[0] > 0:
                row = self.draw(st.integers(0, dims[0] - 1))
                r1 = self.raw(dtype, (1, dims[1]),
                              f"slice({name}), slice={{[{row}:{row + 1}], [0:{dims[1]}]}}")
                self.new(dtype, (dims[1],), f"reshape({r1})")
        elif op == "reverse" and dims:
            d = self.draw(st.integers(0, len(dims) - 1))
            self.new(dtype, dims, f"reverse({name}), dimensions={{{d}}}")
        elif op == "reduce" and dims and dtype != "c64":
            comp, init = self.reducer(dtype, "maximum" if dtype == "pred" else self.draw(
                st.sampled_from(["add", "maximum", "minimum"])))
            d = self.draw(st.sampled_from([(0,), (len(dims) - 1,), tuple(range(len(dims)))]))
            out = tuple(n for i, n in enumerate(dims) if i not in d)
            self.new(dtype, out, f"reduce({name}, {init}), dimensions={{{','.join(map(str, d))}}}, "
                                 f"to_apply={comp}")
        elif op in ("dot", "epilogue") and len(dims) == 2 and dtype != "pred":
            # x (a, b) @ y (b, e) with y of a kind whose rows are b
            choices = [k for k, d in K.items() if len(d) == 2 and d[0] == dims[1]]
            kind = self.draw(st.sampled_from(choices))
            y = self.pick(K[kind], dtype)
            out = (dims[0], K[kind][1])
            swap = self.draw(st.booleans())  # contract x's dim 1 with y's dim 0
            if swap and dims[0] == dims[1] == K[kind][0]:
                d = self.new(dtype, out, f"dot({name}, {y[0]}), lhs_contracting_dims={{0}}, "
                                         f"rhs_contracting_dims={{0}}")
            else:
                d = self.new(dtype, out, f"dot({name}, {y[0]}), lhs_contracting_dims={{1}}, "
                                         f"rhs_contracting_dims={{0}}")
            if op == "epilogue":
                # elementwise users of the dot: read it twice, read its operands too
                f = self.draw(st.sampled_from(self.binary_ops(dtype)))
                other = self.draw(st.sampled_from(
                    [d[0]] + [v[0] for v in self.values if v[2] == out and v[1] == dtype]))
                form = self.draw(st.sampled_from(["binary", "binary", "select", "convert",
                                                  "compare", "chain"]))
                if form == "select" and dtype != "c64":
                    cmp = self.raw("pred", out, f"compare({d[0]}, {other}), direction=GT")
                    e = self.new(dtype, out, f"select({cmp}, {d[0]}, {other})")
                elif form == "convert":
                    to = self.draw(st.sampled_from(["bf16", "f16", "s32", "pred", "s8", "f64"]))
                    if dtype == "c64":
                        to = "c64"
                    cv = self.new(to, out, f"convert({d[0]})")
                    e = self.new(dtype, out, f"convert({cv[0]})")
                elif form == "compare" and dtype != "c64":
                    e0 = self.new("pred", out, f"compare({d[0]}, {other}), direction=LT")
                    e = self.new(dtype, out, f"convert({e0[0]})")
                elif form == "chain":
                    a1 = self.raw(dtype, out, f"{f}({d[0]}, {other})")
                    a2 = self.raw(dtype, out, f"multiply({a1}, {d[0]})")
                    e = self.new(dtype, out, f"subtract({a2}, {other})")
                else:
                    e = self.new(dtype, out, f"{f}({d[0]}, {other})")
                if self.draw(st.booleans()):
                    self.new(dtype, out, f"{self.draw(st.sampled_from(self.binary_ops(dtype)))}"
                                         f"({e[0]}, {d[0]})")
                if self.draw(st.booleans()) and out[::-1] == out:
                    tr = self.raw(dtype, out[::-1], f"transpose({d[0]}), dimensions={{1,0}}")
                    self.new(dtype, out, f"add({e[0]}, {tr})")
        elif op == "concat" and len(dims) == 2:
            y = self.pick(dims, dtype)
            both = self.raw(dtype, (dims[0], 2 * dims[1]),
                            f"concatenate({name}, {y[0]}), dimensions={{1}}")
            self.new(dtype, dims, f"slice({both}), slice={{[0:{dims[0]}], "
                                  f"[{dims[1]}:{2 * dims[1]}]}}")
        elif op == "dus" and len(dims) == 2 and dims[0] > 0:
            upd = self.pick((dims[1],), dtype)
            u2 = self.raw(dtype, (1, dims[1]), f"reshape({upd[0]})")
            i = self.index(dims[0])
            z = self.raw("s32", (), "constant(0)")
            self.new(dtype, dims, f"dynamic-update-slice({name}, {u2}, {i}, {z})")
        elif op == "ds" and len(dims) == 2 and dims[0] > 0:
            i = self.index(dims[0])
            z = self.raw("s32", (), "constant(0)")
            row = self.raw(dtype, (1, dims[1]),
                           f"dynamic-slice({name}, {i}, {z}), dynamic_slice_sizes={{1,{dims[1]}}}")
            self.new(dtype, (dims[1],), f"reshape({row})")
        elif op == "iota" and len(dims) >= 1 and dtype != "pred":
            io = self.raw(dtype, dims, f"iota(), iota_dimension={len(dims) - 1}")
            self.new(dtype, dims, f"add({name}, {io})")
        elif op == "pad" and len(dims) == 2:
            pv = self.raw(dtype, (), f"constant({self.const(dtype)})")
            padded = self.raw(dtype, (dims[0] + 1, dims[1] + 2),
                              f"pad({name}, {pv}), padding=1_0x0_2")
            self.new(dtype, dims, f"slice({padded}), slice={{[0:{dims[0]}], [2:{dims[1] + 2}]}}")
        elif op == "tuple":
            y = self.pick()
            t = f"%{self.prefix}t{self.count}"
            self.count += 1
            self.lines.append(f"  {t} = ({text(dtype, dims)}, {text(y[1], y[2])}) "
                              f"tuple({name}, {y[0]})")
            idx = self.draw(st.integers(0, 1))
            v = (x, y)[idx]
            self.new(v[1], v[2], f"get-tuple-element({t}), index={idx}")


SPECIAL = {"f": [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-45, 65504.0, 1e30, 3.5, -2.5],
           "i": [0, -1, 1, 127, -128, 2**31 - 1, -2**31, 31, 32, 7]}


def arguments(rng, kinds, special=False):
    out = []
    if special == "normal":
        for dtype, dims in kinds:
            if dtype in FLOATS:
                out.append(rng.standard_normal(dims).astype(DTYPES[dtype]))
            elif dtype == "c64":
                out.append((rng.standard_normal(dims) + 1j * rng.standard_normal(dims))
                           .astype(np.complex64))
            else:
                out.extend(arguments(rng, [(dtype, dims)]))
        return out
    if special:
        for dtype, dims in kinds:
            if dtype == "pred":
                out.append(rng.integers(0, 2, dims).astype(bool))
            elif dtype == "c64":
                pool = np.array(SPECIAL["f"])
                values = rng.choice(pool, dims) + 1j * rng.choice(pool, dims)
                out.append(values.astype(np.complex64))
            elif dtype in INTS:
                pool = np.array(SPECIAL["i"], dtype=np.int64)
                out.append(rng.choice(pool, dims).astype(DTYPES[dtype]))
            else:
                pool = np.array(SPECIAL["f"])
                with np.errstate(all="ignore"):
                    out.append(rng.choice(pool, dims).astype(DTYPES[dtype]))
        return out
    for dtype, dims in kinds:
        if dtype == "pred":
            out.append(rng.integers(0, 2, dims).astype(bool))
        elif dtype == "c64":
            out.append(((rng.integers(-4, 5, dims) + 1j * rng.integers(-4, 5, dims)) / 2)
                       .astype(np.complex64))
        elif dtype in INTS:
            lo = 0 if dtype == "u32" else -4
            out.append(rng.integers(lo, 5, dims).astype(DTYPES[dtype]))
        else:
            out.append((rng.integers(-4, 5, dims) / 2).astype(DTYPES[dtype]))
    return out


SIZES = {"tiny": [(0, 3), (1, 1), (2, 3), (3, 2), (5, 7), (4, 4), (3, 0), (1, 6)],
         "epilogue": [(128, 640), (256, 256), (256, 300)],
         "large": [(512, 640), (640, 512)],
         "huge": [(1024, 1040), (1040, 1024)]}


def program(data, size=None, max_steps=16, loops=True):
    """(hlo text, parameter kinds [(dtype, dims)], n results, donate pairs)"""
    if size is None:
        size = data.draw(st.sampled_from(["tiny", "tiny", "tiny", "epilogue", "large"]))
    r, c = data.draw(st.sampled_from(SIZES[size]))
    if size == "tiny":
        dtype = data.draw(st.sampled_from(list(DTYPES)))
    elif size == "huge":
        dtype = data.draw(st.sampled_from(["s8", "pred", "bf16", "f16", "f32", "s32"]))
    else:
        dtype = data.draw(st.sampled_from(["f32", "f32", "f32", "bf16", "f64", "s32", "pred",
                                           "c64", "f16"]))
    g = Gen(data, r, c, dtype)
    g.nodot = size == "huge" and dtype in ("s8", "s32", "pred")
    if size != "tiny":
        g.bias = ["dot", "epilogue", "epilogue", "binary", "unary", "bdot", "tdot", "dotread",
                  "dotread", "viewrace"]
    K = g.kinds()
    nparams = data.draw(st.integers(1, 3))
    params = []
    for i in range(nparams):
        kind = data.draw(st.sampled_from(["M", "M", "T", "V", "W", "S", "Q", "BM"]))
        pd = dtype if data.draw(st.integers(0, 4)) else data.draw(st.sampled_from(list(DTYPES)))
        params.append((pd, K[kind]))
        g.lines.append(f"  %p{i} = {text(pd, K[kind])} parameter({i})")
        g.values.append((f"%p{i}", pd, K[kind]))
    if data.draw(st.booleans()):
        i = len(params)
        params.append(("s32", ()))
        g.lines.append(f"  %p{i} = s32[] parameter({i})")
        g.values.append((f"%p{i}", "s32", ()))
    for _ in range(data.draw(st.integers(max_steps // 2, max_steps))):
        g.step()
    loop_text = ""
    if loops and data.draw(st.integers(0, 3)) == 0:
        loop_text = add_loop(g, data)
    results = [g.values[-1]] + g.keep[:4] + data.draw(st.lists(st.sampled_from(g.values),
                                                               max_size=3))
    if data.draw(st.booleans()):
        results.append(results[0])  # the same value twice
    shape = ", ".join(text(v[1], v[2]) for v in results)
    names = ", ".join(v[0] for v in results)
    ptext = ", ".join(f"p{i}: {text(*k)}" for i, k in enumerate(params))
    # donation: parameter i -> output j with the same type
    pairs = [(i, j) for i, k in enumerate(params) for j, v in enumerate(results)
             if (v[1], v[2]) == k]
    donate = []
    if pairs and data.draw(st.booleans()):
        chosen = data.draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=2,
                                    unique_by=(lambda p: p[0])))
        seen_out = set()
        for i, j in chosen:
            if j not in seen_out:
                donate.append((i, j))
                seen_out.add(j)
    body = "\n".join(g.lines)
    hlo = "".join(g.extra) + loop_text + (
        f"ENTRY %e ({ptext}) -> ({shape}) {{\n{body}\n  ROOT %root = ({shape}) tuple({names})\n}}")
    return hlo, params, len(results), donate


def add_loop(g, data):
    """A while loop whose carry is (i, some values); the body is a fresh Gen over the carry."""
    carry_vals = data.draw(st.lists(st.sampled_from(g.values), min_size=1, max_size=3))
    trips = data.draw(st.integers(0, 3))
    ctype = "(s32[], " + ", ".join(text(v[1], v[2]) for v in carry_vals) + ")"
    b = Gen(data, g.r, g.c, g.dtype, prefix="b")
    b.bias = g.bias
    b.nodot = g.nodot
    b.lines.append(f"  %bp = {ctype} parameter(0)")
    b.lines.append("  %bi = s32[] get-tuple-element(%bp), index=0")
    for k, v in enumerate(carry_vals):
        b.lines.append(f"  %bc{k} = {text(v[1], v[2])} get-tuple-element(%bp), index={k + 1}")
        b.values.append((f"%bc{k}", v[1], v[2]))
    for _ in range(data.draw(st.integers(1, 6))):
        b.step()
    b.lines.append("  %bone = s32[] constant(1)")
    b.lines.append("  %bj = s32[] add(%bi, %bone)")
    outs = []
    for v in carry_vals:
        same = [w for w in b.values if (w[1], w[2]) == (v[1], v[2])]
        outs.append(data.draw(st.sampled_from(same))[0])
    b.lines.append(f"  ROOT %bt = {ctype} tuple(%bj, {', '.join(outs)})")
    name = f"loop{g.count}"
    body = (f"%body{name} (bp: {ctype}) -> {ctype} {{\n" + "\n".join(b.lines) + "\n}\n")
    cond = (f"%cond{name} (cp: {ctype}) -> pred[] {{\n  %cp = {ctype} parameter(0)\n"
            f"  %ci = s32[] get-tuple-element(%cp), index=0\n  %cn = s32[] constant({trips})\n"
            f"  ROOT %lt = pred[] compare(%ci, %cn), direction=LT\n}}\n")
    zero = g.raw("s32", (), "constant(0)")
    init = f"%init{g.count}"
    g.lines.append(f"  {init} = {ctype} tuple({zero}, {', '.join(v[0] for v in carry_vals)})")
    w = f"%while{g.count}"
    g.count += 1
    g.lines.append(f"  {w} = {ctype} while({init}), condition=%cond{name}, body=%body{name}")
    for k, v in enumerate(carry_vals):
        g.new(v[1], v[2], f"get-tuple-element({w}), index={k + 1}")
    return "".join(b.extra) + body + cond
