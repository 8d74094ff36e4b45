"""Reads verl-score run's outputs with the libraries users load them with
(pyarrow, pandas with the pyarrow engine, polars, and DuckDB when it is
installed) and checks what docs/semantics.md and the README promise: every
input column unchanged, values and types, nested ones included; the four
added columns with their types; the provenance in the parquet metadata; the
cases files; the JSON lines outputs equal to the parquet ones.

usage: read_outputs.py INPUT.parquet OUT.parquet CASES.parquet OUT.jsonl CASES.jsonl
Prints one JSON line of figures; exits 1 naming every problem found.
"""
import json
import math
import sys

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

inp, out_pq, cases_pq, out_jsonl, cases_jsonl = sys.argv[1:6]
problems = []


def check(ok, msg):
    if not ok:
        problems.append(msg)


src = pq.read_table(inp)
out = pq.read_table(out_pq)
check(out.num_rows == src.num_rows, f"{out.num_rows} output rows for {src.num_rows} input rows")

# every input column, unchanged in type and value (pyarrow)
for field in src.schema:
    if field.name not in out.column_names:
        problems.append(f"input column {field.name!r} is missing from the output")
        continue
    got = out.schema.field(field.name).type
    check(got == field.type, f"column {field.name!r}: type {got}, input {field.type}")
    check(out.column(field.name).combine_chunks().equals(src.column(field.name).combine_chunks()),
          f"column {field.name!r}: values differ from the input's")

# the added columns (responses are a list here)
want = {
    "reward": pa.list_(pa.float64()),
    "case_results": pa.list_(pa.list_(pa.int8())),
    "case_status": pa.list_(pa.list_(pa.string())),
    "reward_error": pa.list_(pa.string()),
}
for name, typ in want.items():
    if name not in out.column_names:
        problems.append(f"added column {name!r} is missing")
        continue
    got = out.schema.field(name).type
    # a list's item field may be named "item" or "element": compare the value types
    check(str(got).replace("element", "item") == str(typ).replace("element", "item"),
          f"added column {name!r}: type {got}, want {typ}")
rewards = out.column("reward").to_pylist()
results = out.column("case_results").to_pylist()
responses = src.column("responses").to_pylist()
for i, (r, cr, resp) in enumerate(zip(rewards, results, responses)):
    check(len(r) == len(resp) and len(cr) == len(resp), f"row {i}: {len(r)} rewards, {len(cr)} case lists "
          f"for {len(resp)} responses")
    for v in cr:
        check(all(c in (1, 0, -1, -2, -3, -4) for c in v), f"row {i}: verdict codes {v}")

# the provenance in the file's key-value metadata (pyarrow's read_table
# gives the stored Arrow schema's metadata, which the provenance, known
# only at the end of the run, is not in)
meta = pq.read_metadata(out_pq).metadata or {}
prov = meta.get(b"verl_score.provenance")
check(prov is not None, "no verl_score.provenance in the parquet metadata")
if prov is not None:
    p = json.loads(prov)
    check(p.get("tool") == "verl-score" and "settings" in p, f"provenance {str(p)[:200]}")

# pandas, with the pyarrow engine
df = pd.read_parquet(out_pq, engine="pyarrow")
check(len(df) == src.num_rows, f"pandas reads {len(df)} rows")
for i in range(len(df)):
    got = [float(x) for x in df["reward"].iloc[i]]
    check(got == rewards[i], f"pandas: row {i} rewards {got}, pyarrow {rewards[i]}")
check(str(df["data_source"].dtype) in ("object", "string", "str", "large_string[pyarrow]", "string[pyarrow]"),
      f"pandas: data_source dtype {df['data_source'].dtype}")

# polars
plf = pl.read_parquet(out_pq)
check(plf.schema["reward"] == pl.List(pl.Float64), f"polars: reward {plf.schema['reward']}")
check(plf.schema["case_results"] == pl.List(pl.List(pl.Int8)), f"polars: case_results {plf.schema['case_results']}")
check(plf["reward"].to_list() == rewards, "polars: rewards differ from pyarrow's")
check(isinstance(plf.schema["reward_model"], pl.Struct), f"polars: reward_model {plf.schema['reward_model']}")

# the cases, in parquet and JSON lines
cases = pq.read_table(cases_pq)
ncases = sum(len(v) for row in results for v in row)
check(cases.num_rows >= ncases, f"the cases file has {cases.num_rows} rows for {ncases} verdicts")
cmeta = pq.read_metadata(cases_pq).metadata or {}
check(b"verl_score.provenance" in cmeta, "no provenance in the cases parquet")
cdf = pd.read_parquet(cases_pq, engine="pyarrow")
cpl = pl.read_parquet(cases_pq)
check(len(cdf) == cases.num_rows and cpl.height == cases.num_rows, "pandas or polars read another number of cases")
jcases = [json.loads(line) for line in open(cases_jsonl) if line.strip() and not line.startswith('{"provenance"')]
jcases = [c for c in jcases if "case_index" in c]
check(len(jcases) == cases.num_rows, f"{len(jcases)} JSON cases, {cases.num_rows} parquet ones")

# the JSON lines output equals the parquet one
jdf = pd.read_json(out_jsonl, lines=True)
check(len(jdf) == src.num_rows, f"pandas reads {len(jdf)} JSON rows")
for i in range(len(jdf)):
    got = [float(x) for x in jdf["reward"].iloc[i]]
    check(got == rewards[i], f"JSON lines: row {i} rewards {got}, parquet {rewards[i]}")
# polars cannot infer a list that mixes booleans and integers (verl's
# case_results: true/false, and -1..-4 for errors): it reads them as text
jpl = pl.read_ndjson(out_jsonl, schema_overrides={"case_results": pl.List(pl.List(pl.String))})
check(jpl.height == src.num_rows, "polars reads another number of JSON rows")

duck = None
try:
    import duckdb
except ImportError:
    pass
else:
    n, total = duckdb.sql(f"select count(*), sum(len(reward)) from read_parquet('{out_pq}')").fetchall()[0]
    check(n == src.num_rows and total == sum(len(r) for r in rewards), f"duckdb: {n} rows, {total} rewards")
    duck = duckdb.__version__

print(json.dumps({"rows": src.num_rows, "responses": sum(len(r) for r in rewards), "cases": ncases,
                  "mean": sum(sum(r) for r in rewards) / max(1, sum(len(r) for r in rewards)),
                  "pyarrow": pa.__version__, "pandas": pd.__version__, "polars": pl.__version__, "duckdb": duck}))
if problems:
    for p in problems:
        print("problem:", p, file=sys.stderr)
    sys.exit(1)
