"""Parameter and step-size studies on Dask (``symgen.sweep``): many independent simulations, one
table.

    study = symgen.sweep(model, {"T0": [5, 6, 7, 8, 9], "method": ["nullspace", "index3"]},
                         out="study/", workers=2, t_end=300)
    study.rows        # one dict per run; study.table_path: study/table.csv (and .parquet)

Every grid point is one Dask task.  The model is shipped once a worker: a Dask WorkerPlugin
installs it on every worker, also on workers that join or restart later (scattered data would be
lost with the worker that held it); workers need symgen installed.  Each worker builds its
kernels once through the content-hash cache of :func:`symgen.build` (concurrent workers on one
host wait for one compilation on the cache's file lock), shared by the worker's threads.
The tasks of a worker that dies are rescheduled by the Dask scheduler (up to its
``distributed.scheduler.allowed-failures``, then the row is ``failed`` with ``KilledWorker``);
``retries`` re-runs a task that raised outside the simulation (e.g. a model not installed).
A grid key is either a model parameter (runtime override, no new compilation) or one of
:data:`RUN_KEYS`, the fields of :class:`~symgen.SimulationSettings` (``dt``, ``method``,
``scheme``, ``t_end``, ``chart``, …).

Results, under ``out``:

* ``runs/<run id>.npz``: the :class:`~symgen.Result` of each run (written by the client, so the
  workers need no shared file system; written whole or not at all);
* ``table.csv``: one row per run, columns ``run``, the grid keys, ``status`` (``completed``,
  ``diverged`` or ``failed``), ``reason``, ``steps``, ``wall_time``, ``max_pos_err``,
  ``max_vel_err``, ``max_acc_err``, ``energy_drift`` (the energy balance max |E − E(0) − W_ext|
  when the model has ``power:`` outputs), ``min_h_max`` (steps and the maxima over
  every step taken, also with ``every`` > 1: :func:`symgen.summary.run_stats`), and for every
  output (the coordinates when the model has none) ``final.<name>`` and ``max_abs.<name>`` (over
  the recorded rows), ``peak_force.<joint>`` (max |F|) of each joint's reactions.  Written after
  every finished run (an interrupted study keeps its rows); ``table.parquet`` too with pyarrow.

A run that fails or diverges is a row with its status; a task that raises (bad option, a worker
that died ``retries`` times) is a ``failed`` row whose reason names the exception, without a
``.npz``.  Re-running the same study skips every run whose ``.npz`` in ``out`` loads (resume; a
damaged file is run again, a damaged table rebuilt from the run files): a run's id is a hash of
the model hash, its grid point and the simulate options.  Rows of other grids in the same folder
stay in the table, after the current grid's.

``workers=0`` runs the grid serially in this process, without Dask.
"""
from __future__ import annotations

import csv
import hashlib
import itertools
import json
import logging
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ._io import atomic_open
from .settings import SimulationSettings
from .summary import table_row

__all__ = ["sweep", "Study", "parse_values", "grid_points", "run_row", "load_table", "RUN_KEYS",
           "SweepError"]

log = logging.getLogger(__name__)

#: Grid keys that are options of :func:`symgen.simulate` rather than model parameters: the fields
#: of :class:`~symgen.SimulationSettings`.
RUN_KEYS = SimulationSettings.names()
#: Table columns that hold names, not numbers.
TEXT_COLUMNS = ("run", "status", "reason", "method", "scheme", "factorization", "chart", "metric",
                "preset")
TABLE = "table.csv"
FIXED_COLUMNS = ("run", "status", "reason", "steps", "wall_time", "max_pos_err", "max_vel_err",
                 "max_acc_err", "energy_drift", "min_h_max")


class SweepError(ValueError):
    """A study that cannot start (bad grid, unknown key, dask missing); the message says why."""


# -- grid ---------------------------------------------------------------------------------------
def _num(text: str):
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        return text                      # a method or scheme name
    if not math.isfinite(v):
        raise SweepError(f"value {text!r} is not finite")
    return v


def parse_values(spec: str) -> list:
    """``"5:9:5"`` → [5.0, 6.0, 7.0, 8.0, 9.0] (start:stop:count, both ends included);
    ``"0.1,0.05"`` → [0.1, 0.05]; ``"9"`` → [9]; names stay strings (``"nullspace,index3"``)."""
    spec = spec.strip()
    if not spec:
        raise SweepError("empty value list")
    if ":" in spec and "," not in spec:
        parts = spec.split(":")
        if len(parts) != 3:
            raise SweepError(f"range {spec!r}: expected START:STOP:COUNT, e.g. 5:9:5")
        try:
            a, b, n = float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise SweepError(f"range {spec!r}: expected numbers START:STOP:COUNT") from None
        if n < 1 or not (math.isfinite(a) and math.isfinite(b)):
            raise SweepError(f"range {spec!r}: COUNT must be ≥ 1 and the ends finite")
        return [float(v) for v in np.linspace(a, b, n)]
    items = [s.strip() for s in spec.split(",")]
    if any(not s for s in items):
        raise SweepError(f"value list {spec!r} has an empty entry")
    return [_num(s) for s in items]


def grid_points(grid: Mapping[str, Sequence]) -> list[dict]:
    """The Cartesian product of the grid, first key slowest."""
    keys = list(grid)
    values = []
    for k in keys:
        v = grid[k]
        v = [v] if isinstance(v, (str, int, float)) else list(v)
        if not v:
            raise SweepError(f"grid key {k!r} has no values")
        values.append(v)
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def _run_id(model_hash: str, point: dict, options: dict) -> str:
    blob = json.dumps([model_hash, sorted(point.items()), sorted(options.items())],
                      default=str, sort_keys=True)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:12]
    label = "_".join(f"{k}{v:g}" if isinstance(v, float) else f"{k}{v}" for k, v in point.items())
    label = "".join(c if c.isalnum() or c in "._-" else "-" for c in label)[:60]
    return f"{label}-{digest}" if label else digest


# -- one run (on a worker) -----------------------------------------------------------------------
_kernels_of: dict = {}
_kernels_lock = threading.Lock()


def _kernels(model):
    """This process's kernels of ``model``, built (cache hit or one compilation) at most once and
    shared by its threads: each run has its own data (``Kernels.for_run``, issue 37.5)."""
    with _kernels_lock:
        k = _kernels_of.get(model.hash)
        if k is None:
            from .jit import build
            k = _kernels_of[model.hash] = build(model)
    return k


def run_row(model, point: dict, options: dict):
    """Simulate one grid point; returns ``(row, result)`` (result None when the run raised)."""
    from .run import simulate
    params = {k: float(v) for k, v in point.items() if k not in RUN_KEYS}
    opts = dict(options)
    opts.update({k: v for k, v in point.items() if k in RUN_KEYS})
    opts["meta"] = {**(opts.get("meta") or {}), "sweep_point": dict(point)}
    try:
        result = simulate(_kernels(model), params=params or None, **opts)
    except Exception as exc:  # a row, never the end of the sweep
        msg = " ".join(str(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc).split())
        return {"status": "failed", "reason": f"{type(exc).__name__}: {msg}"[:400]}, None
    return table_row(result), result


# -- the study ----------------------------------------------------------------------------------
@dataclass
class Study:
    """What :func:`sweep` produced: ``rows`` (grid order), the folder and the table's path, and
    how many runs were skipped because ``out`` already held them."""

    rows: list
    out: Path | None
    table_path: Path | None
    skipped: int = 0
    ran: int = 0
    wall_time: float = 0.0
    columns: list = field(default_factory=list)

    def failed(self) -> list:
        return [r for r in self.rows if r.get("status") not in ("completed", "event")]


def _columns(keys, rows) -> list:
    cols = ["run"] + list(keys) + [c for c in FIXED_COLUMNS if c != "run"]
    for r in rows:
        for c in r:
            if c not in cols:
                cols.append(c)
    return cols


def _write_table(path: Path, columns: list, rows: list) -> None:
    """table.csv (and table.parquet with pandas and pyarrow), each written whole."""
    with atomic_open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, restval="", extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        return
    frame = load_table(path)
    with atomic_open(path.with_suffix(".parquet"), "wb") as fh:
        frame.to_parquet(fh)


def load_table(path):
    """The study table as a pandas DataFrame (``path``: the folder or its table.csv)."""
    import pandas as pd
    path = Path(path)
    if path.is_dir():
        path = path / TABLE
    return pd.read_csv(path, keep_default_na=False, na_values=["nan", "NaN", ""])


def read_rows(path) -> list[dict]:
    """The rows of a study table as dicts of numbers and strings (no pandas needed).  A row with
    fewer or more fields than the header (a truncated file) raises SweepError naming it."""
    rows, bad = _read_rows(path)
    if bad:
        raise SweepError(f"{bad[0]}; the table is damaged (re-running the sweep rebuilds it "
                         "from the run files)")
    return rows


def _read_rows(path) -> tuple[list[dict], list[str]]:
    """(the complete rows, a description of each incomplete one)."""
    path = Path(path)
    if path.is_dir():
        path = path / TABLE
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        header = reader.fieldnames or []
    out, bad = [], []
    for k, r in enumerate(rows, start=2):
        if None in r or None in r.values():
            n = len(header) - sum(v is None for v in r.values()) + len(r.get(None) or ())
            bad.append(f"{path}: line {k} has {n} fields, its header {len(header)}")
            continue
        d = {}
        for key, v in r.items():
            if key in TEXT_COLUMNS:
                d[key] = v
            else:
                d[key] = _num(v) if v not in ("", "nan", "inf", "-inf") else float(v or "nan")
        out.append(d)
    return out, bad


def _chart_metric(model, point: dict, options: dict):
    """The (chart, metric) a null-space run of ``point`` takes (None: another method, or settings
    that simulate will refuse)."""
    run = {k: v for k, v in {**options, **point}.items() if k in RUN_KEYS}
    try:
        cfg = SimulationSettings.merged(model.settings, run)
    except (TypeError, ValueError):
        return None
    return (cfg.chart, cfg.metric) if cfg.method == "nullspace" else None


def _resume(out: Path, ids: list, points: list, keys: list, steps: list | None = None):
    """What ``out`` already holds of this grid: ({run id: row} of the runs whose ``.npz`` loads,
    rows of other grids, the table's keys, whether the table must be rewritten).  Each row of this
    grid is rebuilt from its run file, so a damaged table loses nothing; a run file that does not
    load (truncated, another format) is not a finished run: it is run again, and so is one whose
    chart and metric are not the ones ``steps`` (per point, :func:`_chart_metric`) says the run
    takes now (a study made when the default step was the paper's)."""
    from .result import load_result
    old, damaged = [], False
    if (out / TABLE).is_file():
        try:
            old, bad = _read_rows(out / TABLE)
            if old:
                keys = keys + [k for k in grid_keys(old) if k not in keys]
        except (ValueError, UnicodeDecodeError, csv.Error) as exc:   # SweepError is a ValueError
            old, bad = [], [str(exc)]
        if bad:
            log.warning("%s; rebuilding the table from the run files", bad[0])
            damaged = True
    listed = {r.get("run") for r in old}
    foreign = [r for r in old if r.get("run") not in ids]
    done = {}
    for i, (run_id, point) in enumerate(zip(ids, points)):
        path = out / "runs" / f"{run_id}.npz"
        if not path.is_file():
            continue
        try:
            result = load_result(path)
        except (OSError, ValueError) as exc:
            log.warning("run %s: %s; running it again", run_id, " ".join(str(exc).split())[:300])
            continue
        if steps and steps[i] and (result.meta.get("chart"), result.meta.get("metric")) != steps[i]:
            log.warning("run %s was not made with chart %s, metric %s (the default step then?); "
                        "running it again", run_id, *steps[i])
            continue
        done[run_id] = {"run": run_id, **point, **table_row(result)}
        damaged = damaged or run_id not in listed
    return done, foreign, keys, damaged


def _client(workers: int, scheduler: str | None):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise SweepError("sweeps on Dask need dask and distributed: pip install 'symgen[sweep]' "
                         "(or run serially with workers=0)") from None
    if scheduler:
        try:
            return Client(scheduler, timeout="20s"), None
        except (OSError, TimeoutError) as exc:
            raise SweepError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
    cluster = LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster), cluster


def sweep(model, grid: Mapping[str, Sequence], *, out=None, workers: int = 2,
          scheduler: str | None = None, client=None, retries: int = 2,
          progress: bool = False, timeout: float | None = None, **simulate_options) -> Study:
    """Run ``model`` at every point of ``grid`` (a mapping key → values; keys are model parameters
    or :data:`RUN_KEYS`); further keyword arguments go to :func:`symgen.simulate` for every run.

    ``workers``: processes of a local Dask cluster (0: serial, no Dask); ``scheduler``: the address
    of an existing cluster (``tcp://HOST:8786``); ``client``: an existing ``distributed.Client``.
    ``out``: the study folder (see the module docstring; resume skips its finished runs).
    ``progress``: a tqdm bar over finished runs on stderr.  ``timeout``: seconds to wait for the
    Dask runs before SweepError (the finished ones stay in ``out``); a scheduler without workers
    is logged as a warning after :data:`NO_WORKER_WARNING` s.  Returns a :class:`Study`."""
    from .model import Model
    if not isinstance(model, Model):
        raise SweepError(f"sweep needs a symgen.Model, got {type(model).__name__}")
    # parameter values as floats: T0=5 and T0=5.0 are one run (its id, and so resume)
    points = [{k: float(v) if k not in RUN_KEYS and isinstance(v, (int, float)) else v
               for k, v in p.items()} for p in grid_points(grid)]
    for k in grid:
        if k not in RUN_KEYS and k not in model.param_names:
            raise SweepError(f"grid key {k!r} is neither a parameter of model {model.name!r} "
                             f"({', '.join(model.param_names) or 'none'}) nor one of {RUN_KEYS}")
    clash = set(grid) & set(simulate_options)
    if clash:
        raise SweepError(f"{sorted(clash)} given both in the grid and as a simulate option")
    bad = {"params", "progress"} & set(simulate_options)
    if bad:
        raise SweepError(f"{sorted(bad)} cannot be a sweep option (put parameters in the grid)")
    options = {k: v for k, v in simulate_options.items() if v is not None}
    ids = [_run_id(model.hash, p, options) for p in points]
    if len(set(ids)) != len(ids):
        raise SweepError("the grid repeats a point")

    if int(workers) < 0:
        raise SweepError(f"workers must be ≥ 0 (0: serial), got {workers}")
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0
                                    and math.isfinite(timeout)):
        raise SweepError(f"timeout must be a positive number of seconds, got {timeout!r}")

    out = Path(out) if out is not None else None
    done: dict[str, dict] = {}
    foreign: list = []          # rows of other grids or options in the same folder: kept
    keys = list(grid)           # the grid columns of the table (with those of foreign rows)
    if out is not None:
        (out / "runs").mkdir(parents=True, exist_ok=True)
        done, foreign, keys, damaged = _resume(out, ids, points, keys,
                                               [_chart_metric(model, p, options) for p in points])
        if damaged:
            ordered = [done[i] for i in ids if i in done] + foreign
            _write_table(out / TABLE, _columns(keys, ordered), ordered)
    rows: dict[str, dict] = dict(done)
    todo = [(i, p) for i, p in zip(ids, points) if i not in done]
    start = time.perf_counter()
    bar = None
    if progress and todo:
        import sys

        from tqdm import tqdm
        bar = tqdm(total=len(points), initial=len(done), desc=f"sweep {model.name}", unit="run",
                   file=sys.stderr)

    def finish(run_id, point, row, result):
        row = {"run": run_id, **point, **row}
        if result is not None and out is not None:
            result.save(out / "runs" / f"{run_id}.npz")          # written whole (Result.save)
        rows[run_id] = row
        if out is not None:
            ordered = [rows[i] for i in ids if i in rows] + foreign
            _write_table(out / TABLE, _columns(keys, ordered), ordered)
        if bar is not None:
            bar.update(1)

    try:
        if todo and workers == 0 and client is None and scheduler is None:
            for run_id, point in todo:
                finish(run_id, point, *run_row(model, point, options))
        elif todo:
            _run_dask(model, todo, options, finish, workers, scheduler, client, retries, timeout)
    finally:
        if bar is not None:
            bar.close()
    ordered = [rows[i] for i in ids if i in rows]
    return Study(rows=ordered, out=out, table_path=(out / TABLE) if out is not None else None,
                 skipped=len(done), ran=len(todo), wall_time=time.perf_counter() - start,
                 columns=_columns(grid, ordered))


_MODELS: dict = {}      # on a worker: model hash → Model, installed by _ModelPlugin


def _model_plugin(model):
    """A Dask WorkerPlugin that installs ``model`` on every worker, once, including workers that
    join (or are restarted) later; scattered data would be lost with the worker that held it."""
    from distributed import WorkerPlugin

    class _ModelPlugin(WorkerPlugin):
        def __init__(self, model):
            self.model = model

        def setup(self, worker):
            # imported here: cloudpickle sends this local class by value, with a copy of the
            # module globals it names, so `_MODELS` itself would be a copy
            from symgen import study
            study._MODELS[self.model.hash] = self.model

    return _ModelPlugin(model)


def _run_on_worker(model_hash: str, point: dict, options: dict):
    model = _MODELS.get(model_hash)
    if model is None:
        raise RuntimeError(f"model {model_hash[:12]} is not installed on this worker")
    return run_row(model, point, options)


#: Seconds the Dask runs may wait on a scheduler without workers before a warning says so.
NO_WORKER_WARNING = 5.0


def _completed(client, futures, timeout):
    """The futures as they finish.  A warning (logged) when the scheduler has had no worker for
    :data:`NO_WORKER_WARNING` s while runs wait; SweepError after ``timeout`` s (None: no limit),
    the unfinished runs cancelled (the finished ones are already in the table)."""
    from dask.distributed import wait
    pending, start, warned = set(futures), time.monotonic(), False
    while pending:
        try:
            done, pending = wait(pending, timeout=0.5, return_when="FIRST_COMPLETED")
        except TimeoutError:            # distributed's TimeoutError is the builtin one
            done = ()
        yield from done
        waited = time.monotonic() - start
        if pending and not warned and waited >= NO_WORKER_WARNING and not client.nthreads():
            warned = True
            log.warning("the Dask scheduler %s has no workers: %d runs are waiting (start "
                        "workers: dask worker %s; or give a timeout)",
                        client.scheduler.address, len(pending), client.scheduler.address)
        if pending and timeout is not None and waited >= timeout:
            client.cancel(list(pending))
            raise SweepError(f"gave up after the timeout of {timeout:g} s: "
                             f"{len(futures) - len(pending)} of {len(futures)} runs finished "
                             f"(kept; re-running the sweep resumes), {len(pending)} still "
                             f"waiting on a scheduler with {len(client.nthreads())} workers")


def _run_dask(model, todo, options, finish, workers, scheduler, client, retries, timeout=None):
    own = None
    if client is None:
        client, own = _client(workers, scheduler)
    plugin = f"symgen-model-{model.hash[:16]}"
    try:
        client.register_plugin(_model_plugin(model), name=plugin)   # the model, once a worker
        futures = {}
        for run_id, point in todo:
            fut = client.submit(_run_on_worker, model.hash, point, options,
                                key=f"symgen-run-{run_id}", retries=retries, pure=False)
            futures[fut] = (run_id, point)
        for fut in _completed(client, futures, timeout):
            run_id, point = futures[fut]
            try:
                row, result = fut.result()
            except Exception as exc:   # the worker died `retries` times, or the task broke
                msg = " ".join(str(exc).split())[:300]
                row, result = {"status": "failed", "reason": f"{type(exc).__name__}: {msg}"}, None
            finish(run_id, point, row, result)
            fut.release()
    finally:
        if own is None:
            try:
                client.unregister_worker_plugin(plugin)
            except Exception:  # an old distributed, or the cluster went away
                log.debug("could not unregister the model plugin %s", plugin)
        if own is not None:
            client.close()
            own.close()
        elif scheduler:
            client.close()


def grid_keys(rows_or_columns) -> list:
    """The grid columns of a study table: those between ``run`` and ``status``."""
    cols = list(rows_or_columns[0]) if rows_or_columns and isinstance(rows_or_columns[0], dict) \
        else list(rows_or_columns)
    if "run" not in cols or "status" not in cols:
        raise SweepError("not a symgen study table (no 'run'/'status' columns)")
    return cols[cols.index("run") + 1:cols.index("status")]
