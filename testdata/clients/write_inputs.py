"""Writes a JSON lines dataset as parquet three ways, as users make them:
pyarrow (from the rows, nested types inferred), pandas (read_json, then
to_parquet with pyarrow) and polars (read_ndjson, then write_parquet).

usage: write_inputs.py IN.jsonl PYARROW.parquet PANDAS.parquet POLARS.parquet NORMALISED.jsonl
"""
import json
import sys

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

src, via_pa, via_pd, via_pl, norm = sys.argv[1:6]
rows = [json.loads(line) for line in open(src) if line.strip()]

# A column must have one type in parquet: a field that is a number in some
# rows and a string in others (the example's extra_info.task_id) is written
# as a string, as a user would have to.
def kinds(v, path, out):
    if isinstance(v, dict):
        for k, x in v.items():
            kinds(x, path + (k,), out)
    elif not isinstance(v, list) and v is not None:
        out.setdefault(path, set()).add(type(v).__name__)

seen = {}
for r in rows:
    kinds(r, (), seen)
for path, ts in seen.items():
    if len(ts) > 1:
        for r in rows:
            d = r
            for k in path[:-1]:
                d = d.get(k, {})
            if path[-1] in d and d[path[-1]] is not None:
                d[path[-1]] = str(d[path[-1]])
with open(norm, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")

pq.write_table(pa.Table.from_pylist(rows), via_pa)
pd.read_json(norm, lines=True, dtype=False).to_parquet(via_pd, engine="pyarrow")
pl.read_ndjson(norm, infer_schema_length=None).write_parquet(via_pl)
