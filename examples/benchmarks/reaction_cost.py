"""What the joints' reactions as signals cost (docs/reactions.md "Which joints, and what it costs"):
the model's C with and without ``Model.reactions`` and the kernel calls that fill the Result's
``reaction:`` columns after a run.

    SYMGEN_CACHE_DIR=$(mktemp -d) python examples/benchmarks/reaction_cost.py
"""
import time

import symgen
from symgen.reactions import reaction_columns

for name in ("double_four_bar", "n_four_bar"):
    full = symgen.load_model(name)
    for tag, mdl in (("with", full), ("without", full.replace(reactions=None))):
        t0 = time.perf_counter()
        src = symgen.generate(mdl)
        print(f"{name} {tag}: {len(mdl.reactions)} reactions, C {len(src.files[f'{mdl.name}.c'])} B,"
              f" generate {time.perf_counter() - t0:.2f} s", flush=True)
    k = symgen.build(full)
    r = symgen.simulate(k, t_end=1.0)
    arrays = dict(t=r.t, x=r.x, xd=r.xd, xdd=r.xdd, lam=r.lam, u=None)
    t0 = time.perf_counter()
    reaction_columns(k, arrays)
    dt = time.perf_counter() - t0
    print(f"{name}: {len(r.t)} rows, reaction columns {dt * 1e6 / len(r.t):.1f} us a row", flush=True)
