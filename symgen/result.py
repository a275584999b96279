"""What a simulation produced: every recorded step, the run's status and its metadata.

A :class:`Result` is plain data (NumPy arrays, one row per recorded step including the initial
state) and is written by :meth:`Result.save` as ``.npz`` (arrays plus the metadata as a JSON string)
or ``.csv`` (one row per step, named columns, metadata in ``#`` comment lines at the top);
:func:`load_result` reads either back.

Attributes
----------
t (N,), x, xd, xdd (N × n), lam (N × m):
    time, coordinates, velocities, accelerations, Lagrange multipliers (M ẍ = f + Hᵀλ).
coords:
    coordinate names (tuple of str), the column order of x, xd, xdd.
pos_err, vel_err, acc_err (N,):
    ‖q‖₂, ‖q̇‖₂, ‖q̈‖₂ at each recorded state (zeros for unconstrained models).
omega_max, h_max (N,):
    the stability estimate (highest frequency of the reduced system, rad/s) and the Eq. 11 step
    limit for the scheme in use (inf: unconditionally stable; nan: not estimated).  By default
    (``simulate(estimate=None)``, ``meta['estimate']``) only where it bounds the step: the first
    row, and every row only for a scheme with a stability limit; ``estimate=True``: every row.
newton_iters (N,):
    Newton iterations (linear solves) of the step that produced the row (0 for the initial state).
flags (N,):
    bits (:class:`symgen.steppers.control.Flag`) of the step that produced each row (a ``t_eval``
    row: the step it lies in; 0 at the start): 4 accepted at Newton's round-off floor, 16 a fixed
    step taken as sub-steps; ``dt="auto"`` also 1 a try rejected by the error test, 2 a try whose
    Newton failed, 8 h cut to the stability limit, 32 no error estimate (None: an older file).
h, err_est (N,) or None:
    ``dt="auto"`` only: each row's step (NaN at the start), its error estimate (WRMS, ≤ 1).
t_events, x_events, xd_events, event_names: the located events, one array per event.
energy (N,) or None:
    T + V per step when the model has a potential V, else None; ``energy_kinetic`` and
    ``energy_potential`` hold T and V (always recorded; V = 0 without a potential).
outputs (N × n_out), output_names:
    the model's named outputs, then ``work:<element>`` for each ``power:<element>`` output (its
    integral over every step taken, docs/energy-balance.md).
u (N × n_in), input_names:
    the model's inputs: row j holds the values the step that produced it used (row 0: those of
    the start); docs/inputs.md.  Saved only when the model has inputs.
status:
    ``'completed'``, ``'event'`` (a terminal event ended it: docs/events.md), ``'diverged'``
    (non-finite values or |x| past the divergence bound), ``'failed'`` (Newton, a singular step
    matrix) or ``'interrupted'`` (Ctrl-C, SIGTERM under the CLI); the steps before are kept.
reason:
    empty when completed, otherwise a sentence naming time, step, iteration and residual norms.
meta:
    dict: versions (symgen, numpy, scipy, sympy, python), model name and hash, method, scheme
    ({name, gamma, beta, hht_alpha}), h, t0, t_end, tolerances, parameters, wall time, ``every``
    (rows are every K-th step plus the last one) and ``run_stats``: the maxima over *all* steps
    taken (see :func:`run_stats`), exact also when only every K-th step is recorded; ``units``
    (:attr:`Result.units`; the CSV's column names carry them as ``x:bob.x [m]``).

Files are written whole or not at all (a temporary file renamed over the target).  A CSV
declares its row count in its header and ends with an end line; a ``.npz`` declares its array
shapes: :func:`load_result` checks both before trusting (or allocating) the data.
"""
from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import numpy as np

from . import _npz
from ._io import atomic_open, memory_budget
from .result_events import EventResults
from .summary import energy_drift, run_stats, summary_lines  # noqa: F401  (re-exported)

__all__ = ["Result", "load_result", "run_stats", "STATUSES", "summary_lines", "energy_drift"]

STATUSES = ("completed", "event", "diverged", "failed", "interrupted")
CSV_FORMAT = "symgen-result-csv 2"
_CSV_END = "# end of symgen result:"
_CSV_CHUNK = 4096           # rows formatted at a time (no full copy of the table when saving)

_ARRAYS = ("t", "x", "xd", "xdd", "lam", "pos_err", "vel_err", "acc_err", "omega_max", "h_max",
           "newton_iters", "outputs")
_OPTIONAL = ("energy", "energy_kinetic", "energy_potential", "h", "err_est", "flags")


class Result(EventResults):
    """Recorded trajectory, status and metadata of one simulation run (see the module docstring)."""

    def __init__(self, *, t, x, xd, xdd, lam, coords, pos_err, vel_err, acc_err, omega_max, h_max,
                 newton_iters, energy=None, energy_kinetic=None, energy_potential=None,
                 outputs=None, output_names=(), status="completed", reason="", meta=None,
                 h=None, err_est=None, flags=None, u=None, input_names=()):
        self.t = np.asarray(t, dtype=float)
        N = self.t.shape[0]
        self.x, self.xd, self.xdd, self.lam = (np.asarray(a, dtype=float).reshape(N, -1)
                                               for a in (x, xd, xdd, lam))
        self.coords = tuple(str(c) for c in coords)
        self.pos_err = np.asarray(pos_err, dtype=float)
        self.vel_err = np.asarray(vel_err, dtype=float)
        self.acc_err = np.asarray(acc_err, dtype=float)
        self.omega_max = np.asarray(omega_max, dtype=float)
        self.h_max = np.asarray(h_max, dtype=float)
        self.newton_iters = np.asarray(newton_iters, dtype=int)
        self.energy = None if energy is None else np.asarray(energy, dtype=float)
        self.energy_kinetic = None if energy_kinetic is None else np.asarray(energy_kinetic, float)
        self.energy_potential = None if energy_potential is None else np.asarray(energy_potential, float)
        self.h = None if h is None else np.asarray(h, dtype=float)
        self.err_est = None if err_est is None else np.asarray(err_est, dtype=float)
        self.flags = None if flags is None else np.asarray(flags).astype(np.int64)
        self.output_names = tuple(str(s) for s in output_names)
        self.outputs = (np.zeros((N, len(self.output_names))) if outputs is None
                        else np.asarray(outputs, dtype=float).reshape(N, len(self.output_names)))
        self.input_names = tuple(str(s) for s in input_names)
        self.u = (np.zeros((N, len(self.input_names))) if u is None
                  else np.asarray(u, dtype=float).reshape(N, len(self.input_names)))
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        self.status = status
        self.reason = str(reason)
        self.meta = dict(meta or {})
        if self.x.shape[1] != len(self.coords):
            raise ValueError(f"x has {self.x.shape[1]} columns but {len(self.coords)} coordinate names")

    # -- convenience ----------------------------------------------------------------------------
    @property
    def n_steps(self) -> int:
        """Number of completed steps (rows − 1)."""
        return max(self.t.shape[0] - 1, 0)

    @property
    def ok(self) -> bool:       # (a terminal event ends a run as asked)
        return self.status in ("completed", "event")

    @property
    def units(self) -> dict:
        """{array: {name: unit}} of ``x``, ``xd``, ``xdd``, ``outputs``, ``params`` (meta's;
        empty for a model without units or a file written before units existed)."""
        units = self.meta.get("units")
        return units if isinstance(units, dict) else {}

    def reactions(self, model=None) -> dict:
        """{joint: {component: (N,) array}}: each named joint's force and moment, body a on body b
        (:func:`symgen.reactions.reactions`, docs/reactions.md; ``model``: default the example)."""
        from .reactions import reactions
        return reactions(self, model)

    def generalized_forces(self, model=None) -> dict:
        """{joint: {coordinate: (N,) array}}: its rows' H_Rᵀλ_R (every coordinate)."""
        from .reactions import generalized_forces
        return generalized_forces(self, model)

    def coord(self, name: str) -> np.ndarray:
        """The column of x for coordinate ``name``."""
        try:
            return self.x[:, self.coords.index(name)]
        except ValueError:
            raise KeyError(f"no coordinate {name!r}; coordinates: {list(self.coords)}") from None

    def output(self, name: str) -> np.ndarray:
        """The column of ``outputs`` for output ``name``."""
        try:
            return self.outputs[:, self.output_names.index(name)]
        except ValueError:
            raise KeyError(f"no output {name!r}; outputs: {list(self.output_names)}") from None

    def input(self, name: str) -> np.ndarray:
        """The column of ``u`` for input ``name``."""
        try:
            return self.u[:, self.input_names.index(name)]
        except ValueError:
            raise KeyError(f"no input {name!r}; inputs: {list(self.input_names)}") from None

    def __repr__(self) -> str:
        name = self.meta.get("model", "?")
        t_last = float(self.t[-1]) if self.t.size else math.nan
        s = (f"Result({name!r}, method={self.meta.get('method', '?')!r}, steps={self.n_steps}, "
             f"t_end={t_last:.6g}, status={self.status!r}")
        if self.reason:
            s += f", reason={self.reason!r}"
        return s + ")"

    def __eq__(self, other) -> bool:
        if not isinstance(other, Result):
            return NotImplemented
        if (self.coords, self.output_names, self.input_names, self.status, self.reason) != \
                (other.coords, other.output_names, other.input_names, other.status, other.reason):
            return False
        for name in _ARRAYS + _OPTIONAL + ("u",):
            a, b = getattr(self, name), getattr(other, name)
            if (a is None) != (b is None):
                return False
            if a is not None and not (a.shape == b.shape and np.array_equal(a, b, equal_nan=True)):
                return False
        return _json_roundtrip(self.meta) == _json_roundtrip(other.meta)

    __hash__ = None

    # -- saving -----------------------------------------------------------------------------------
    def summary(self, name: str | None = None, wall: float | None = None,
                h: float | None = None) -> list[str]:
        """The one-screen summary ``symgen simulate`` prints (one string a line)."""
        meta = self.meta or {}
        return summary_lines(self, name or str(meta.get("model", "result")),
                             float(meta.get("wall_time", 0.0)) if wall is None else wall, h=h)

    def save(self, path) -> Path:
        """Write ``.npz`` or ``.csv`` (chosen by the suffix); returns the path."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".npz":
            self._save_npz(path)
        elif suffix == ".csv":
            self._save_csv(path)
        else:
            raise ValueError(f"cannot save a Result as {path.name!r}: use a .npz or .csv file name")
        return path

    def _save_npz(self, path: Path) -> None:
        data = {name: getattr(self, name) for name in _ARRAYS}
        for name in _OPTIONAL:
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        data["coords"] = np.array(self.coords, dtype=str)
        data["output_names"] = np.array(self.output_names, dtype=str)
        if self.input_names:
            data["u"] = self.u
            data["input_names"] = np.array(self.input_names, dtype=str)
        data["status"] = np.array(self.status)
        data["reason"] = np.array(self.reason)
        data["meta"] = np.array(json.dumps(self.meta, default=_json_default))
        for name, (chars, _) in _TEXT.items():       # what load_result accepts (_check_kinds)
            if name in data and data[name].dtype.itemsize > 4 * chars:
                raise ValueError(f"cannot save the Result: its {name} has an entry longer than "
                                 f"the {chars} characters a result file may hold")
        with atomic_open(path, "wb") as fh:
            np.savez_compressed(fh, **data)

    def _column_blocks(self):
        """(name list, list of (N,) or (N, k) arrays) in the CSV's column order."""
        blocks, names = [self.t], ["t"]
        units = self.units
        for key, arr in (("x", self.x), ("xd", self.xd), ("xdd", self.xdd)):
            blocks.append(arr)
            names += [_column(key, c, units) for c in self.coords]
        blocks.append(self.lam)
        names += [f"lam:{v}" for v in self._lam_names()]
        for key in ("pos_err", "vel_err", "acc_err", "omega_max", "h_max", "newton_iters"):
            blocks.append(getattr(self, key))
            names.append(key)
        for key in _OPTIONAL:
            arr = getattr(self, key)
            if arr is not None:
                blocks.append(arr)
                names.append(key)
        blocks.append(self.outputs)
        names += [_column("outputs", s, units) for s in self.output_names]
        blocks.append(self.u)
        names += [f"in:{s}" for s in self.input_names]
        return names, blocks

    def _lam_names(self) -> list[str]:
        """The λ columns' names: the constraint rows' names (meta) or, unnamed, their indices."""
        rows = list(self.meta.get("constraint_names") or [])
        k = self.lam.shape[1]
        if len(rows) != k:
            return [str(i) for i in range(k)]
        return [str(i) if v == f"q[{i}]" else str(v) for i, v in enumerate(rows)]

    def _save_csv(self, path: Path) -> None:
        names, blocks = self._column_blocks()
        N = self.t.shape[0]
        header = {
            "format": CSV_FORMAT,
            "rows": int(N),
            "coords": list(self.coords),
            "output_names": list(self.output_names),
            **({"input_names": list(self.input_names)} if self.input_names else {}),
            "n_lam": int(self.lam.shape[1]),
            "lam_names": self._lam_names(),
            "units": self.units,                # column names carry " [unit]" (_column)
            "status": self.status,
            "reason": self.reason,
        }
        with atomic_open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(f"# symgen result: {json.dumps(header)}\n")
            fh.write(f"# meta: {json.dumps(self.meta, default=_json_default)}\n")
            fh.write(",".join(names) + "\n")
            for a in range(0, N, _CSV_CHUNK):
                b = min(a + _CSV_CHUNK, N)
                table = np.hstack([np.asarray(blk[a:b], dtype=float).reshape(b - a, -1)
                                   for blk in blocks])
                fh.writelines(",".join(repr(float(v)) for v in row) + "\n" for row in table)
            fh.write(f"{_CSV_END} {N} rows\n")


def _column(key: str, name: str, units: dict) -> str:
    """A CSV column's name: ``x:<coord>``, ``xd:…``, ``xdd:…``, ``out:<output>``, with
    `` [unit]`` when the result has one."""
    unit = (units.get(key) or {}).get(name, "") if isinstance(units, dict) else ""
    return f"{'out' if key == 'outputs' else key}:{name}" + (f" [{unit}]" if unit else "")


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def _json_roundtrip(meta: dict):
    return json.loads(json.dumps(meta, default=_json_default))


def load_result(path, *, max_bytes: int | None = None) -> Result:
    """Read a Result written by :meth:`Result.save` (``.npz`` or ``.csv``).

    A file that cannot be opened raises the OSError (FileNotFoundError, PermissionError, …); a
    file that is not a complete symgen result (truncated, another format, missing keys, fewer
    rows than its header declares) raises ValueError naming the file.  Before any array is
    read, the sizes the file declares (the ``.npy`` headers inside a ``.npz``, the row count of a
    CSV) are checked against each other and against ``max_bytes`` (default
    :func:`symgen._io.memory_budget`, half the physical memory): a small file that would
    decompress to more is refused without allocating it, and so is a text member longer than a
    result holds (status, reason and meta at most 1 Mi characters, names 1024).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        reader, kind = _load_npz, "a symgen result .npz"
    elif suffix == ".csv":
        reader, kind = _load_csv, "a symgen result CSV"
    else:
        raise ValueError(f"cannot load a Result from {path.name!r}: expected a .npz or .csv file")
    limit = memory_budget() if max_bytes is None else int(max_bytes)
    try:
        if suffix == ".npz" and path.is_file():
            if not zipfile.is_zipfile(path):   # np.load would guess a pickle and say so
                raise ValueError(f"{path} is not {kind}: not a zip archive (truncated, or "
                                 "another format)")
        return reader(path, limit)
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise _not_a_result(path, kind, exc) from exc
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        raise
    except Exception as exc:  # zipfile.BadZipFile, zlib.error, EOFError, KeyError, …
        raise _not_a_result(path, kind, exc) from exc


def _not_a_result(path: Path, kind: str, exc: BaseException) -> ValueError:
    why = " ".join(str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).split())
    if len(why) > 200:
        why = why[:200] + " …"
    return ValueError(f"{path} is not {kind} (truncated or another format?): "
                      f"{type(exc).__name__}: {why}")


def _too_big(path: Path, what: str, nbytes: int, limit: int) -> ValueError:
    return ValueError(f"{path}: {what} would take {nbytes / 1e6:.4g} MB in memory, more than the "
                      f"{limit / 1e6:.4g} MB a result may take (half the physical memory; "
                      "load_result(max_bytes=...) or SYMGEN_MEMORY_LIMIT sets the limit)")


#: Members of a result .npz that hold one row per recorded step, and the width of each
#: ("n": the number of coordinates, "lam"/"out": free widths, None: 1-D).
_PER_STEP = {"t": None, "x": "n", "xd": "n", "xdd": "n", "lam": "lam", "pos_err": None,
             "vel_err": None, "acc_err": None, "omega_max": None, "h_max": None,
             "newton_iters": None, "energy": None, "energy_kinetic": None,
             "energy_potential": None, "outputs": "out", "h": None, "err_est": None,
             "flags": None, "u": "in"}


#: Members of a result .npz that hold text: the longest each may be (characters), and whether it
#: is one string (0-d) or a list of names (1-D).
_TEXT = {"status": (max(map(len, STATUSES)), 0), "reason": (1 << 20, 0), "meta": (1 << 20, 0),
         "coords": (1024, 1), "output_names": (1024, 1), "input_names": (1024, 1)}


def _check_kinds(path: Path, headers: dict, limit: int) -> None:
    """Each member read by the loader has the kind of data it should (numbers, or text of a
    bounded length), and the arrays with their conversions to float fit in ``limit``: a member that
    would be refused after it was read (a status of a gigabyte, text where numbers belong) is
    refused from its header."""
    need = 0
    for name, (shape, dtype) in headers.items():
        if name in _TEXT:
            chars, ndim = _TEXT[name]
            if dtype.kind != "U" or len(shape) != ndim or dtype.itemsize > 4 * chars:
                what = "a list of names" if ndim else "a string"
                raise ValueError(f"{path}: member {name!r} is not {what} of at most {chars} "
                                 f"characters (dtype {dtype.str}, shape {shape})")
        elif name in _PER_STEP:
            if dtype.kind not in "biuf":
                raise ValueError(f"{path}: member {name!r} holds {dtype.str}, not numbers")
            if dtype.itemsize != 8 or dtype.kind == "b":   # converted to float64/int64 on load
                need += math.prod(shape) * 8
        else:
            continue                                       # not read
        need += math.prod(shape) * dtype.itemsize
    if need > limit:
        raise _too_big(path, "its arrays (with their conversion to float)", need, limit)


def _npz_headers(path: Path, fh, limit: int) -> dict:
    """{member: :class:`symgen._npz.Member`} of a result .npz, checked before any array is read
    (symgen/_npz.py: the declared sizes at most ``limit`` bytes in all, each member's header read
    without inflating its data, each header's shape filling its member): the members have the
    kinds a result's have, fit ``limit`` with their conversions, and the per-step arrays agree on
    the number of rows."""
    members = _npz.members(path, fh, limit, lambda what, n: _too_big(path, what, n, limit))
    headers = {name: (m.shape, m.dtype) for name, m in members.items()}
    _check_kinds(path, headers, limit)
    if "t" not in headers or len(headers["t"][0]) != 1:
        raise ValueError(f"{path}: no 1-D time array 't'")
    N = headers["t"][0][0]
    n = headers["coords"][0] if "coords" in headers else None
    for arr, names in (("outputs", "output_names"), ("u", "input_names")):
        if arr in headers and names in headers:
            shape, k = headers[arr][0], headers[names][0][0]
            if shape[1:] != (k,):
                raise ValueError(f"{path}: member {arr!r} has shape {shape}, which does not fit "
                                 f"{k} {names.replace('_', ' ')}")
    for name, width in _PER_STEP.items():
        if name not in headers:
            continue
        shape = headers[name][0]
        ok = len(shape) >= 1 and shape[0] == N
        if ok and width is None:
            ok = len(shape) == 1
        elif ok and width == "n":
            ok = len(shape) == 2 and (n is None or (shape[1],) == n)
        elif ok and name == "lam":
            ok = len(shape) in (1, 2)
        if not ok:
            raise ValueError(f"{path}: member {name!r} has shape {shape}, which does not fit "
                             f"{N} recorded steps" + (f" of {n[0]} coordinates" if n else ""))
    return members


def _load_npz(path: Path, limit: int) -> Result:
    with open(path, "rb") as fh:
        members = _npz_headers(path, fh, limit)
        missing = [k for k in _ARRAYS + ("coords", "output_names", "status", "reason", "meta")
                   if k not in members]
        if missing:
            raise ValueError(f"{path}: no member {missing[0]!r}")

        def read(name):
            return _npz.read_array(fh, members[name])
        # the text first, checked before any per-step array is inflated
        status, reason, text = (str(read(k)[()]) for k in ("status", "reason", "meta"))
        if status not in STATUSES:
            raise ValueError(f"{path}: status {status!r} is not one of {STATUSES}")
        try:
            meta = json.loads(text)
        except ValueError as exc:
            meta = f"not JSON ({exc})"
        if not isinstance(meta, dict):
            raise ValueError(f"{path}: member 'meta' is not a JSON object: "
                             f"{meta if isinstance(meta, str) else type(meta).__name__}")
        names = {k: tuple(str(s) for s in read(k).tolist())
                 for k in ("coords", "output_names", "input_names") if k in members}
        kw = {name: read(name) for name in _ARRAYS}
        for name in _OPTIONAL:
            kw[name] = read(name) if name in members else None
        if "input_names" in names:
            kw["input_names"] = names["input_names"]
            kw["u"] = read("u") if "u" in members else None
    N = kw["t"].shape[0]
    kw["lam"] = kw["lam"].reshape(N, -1)
    return Result(coords=names["coords"], output_names=names["output_names"], status=status,
                  reason=reason, meta=meta, **kw)


def _load_csv(path: Path, limit: int) -> Result:
    header, meta, names = None, {}, None
    rows, table, k, end = [], None, 0, None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line.startswith(_CSV_END):
                end = line
                break
            if line.startswith("# symgen result:"):
                header = json.loads(line.split(":", 1)[1])
            elif line.startswith("# meta:"):
                meta = json.loads(line.split(":", 1)[1])
            elif line.startswith("#") or not line.strip():
                continue
            elif names is None:
                names = line.split(",")
                declared = header.get("rows") if isinstance(header, dict) else None
                if declared is not None:
                    declared = int(declared)
                    # each value takes at least 2 characters ("0,"): a larger count is a lie
                    size = path.stat().st_size
                    if declared < 0 or declared * len(names) * 2 > size:
                        raise ValueError(f"{path}: its header declares {declared} rows of "
                                         f"{len(names)} columns, more than its {size} bytes hold")
                    if declared * len(names) * 8 > limit:
                        raise _too_big(path, f"its {declared} rows", declared * len(names) * 8,
                                       limit)
                    table = np.empty((declared, len(names)))
            else:
                values = [float(v) for v in line.split(",")]
                if len(values) != len(names):
                    raise ValueError(f"{path}: data row {k + 1} has {len(values)} values, "
                                     f"expected {len(names)} (truncated?)")
                if table is None:
                    rows.append(values)
                elif k < table.shape[0]:
                    table[k] = values
                else:
                    raise ValueError(f"{path}: more data rows than the {table.shape[0]} its "
                                     "header declares")
                k += 1
    if header is None or names is None:
        raise ValueError(f"{path} is not a symgen result CSV (missing the '# symgen result:' header)")
    if "rows" in header:               # format 2: the row count and the end line are checked
        declared = int(header["rows"])
        if k != declared or end is None:
            raise ValueError(f"{path} is truncated: its header declares {declared} rows, found {k}"
                             + ("" if k != declared else " and no end line"))
    else:                              # format 1 (before the row count was recorded)
        table = np.array(rows, dtype=float).reshape(len(rows), len(names))
    col = {name: i for i, name in enumerate(names)}
    coords, outs, n_lam = header["coords"], header["output_names"], int(header["n_lam"])
    units = header.get("units") or {}               # (absent before units: plain names)

    def take(keys):
        return table[:, [col[k] for k in keys]] if keys else np.zeros((table.shape[0], 0))

    kw = dict(
        t=table[:, col["t"]],
        x=take([_column("x", c, units) for c in coords]),
        xd=take([_column("xd", c, units) for c in coords]),
        xdd=take([_column("xdd", c, units) for c in coords]),
        lam=take([f"lam:{v}" for v in header.get("lam_names") or range(n_lam)]),
        outputs=take([_column("outputs", s, units) for s in outs]),
        input_names=header.get("input_names", []),
        u=take([f"in:{s}" for s in header.get("input_names", [])]),
    )
    for key in ("pos_err", "vel_err", "acc_err", "omega_max", "h_max"):
        kw[key] = table[:, col[key]]
    kw["newton_iters"] = table[:, col["newton_iters"]].astype(int)
    for key in _OPTIONAL:
        kw[key] = table[:, col[key]] if key in col else None
    return Result(coords=coords, output_names=outs, status=header["status"],
                  reason=header["reason"], meta=meta, **kw)
