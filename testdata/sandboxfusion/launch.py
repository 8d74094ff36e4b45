# Starts SandboxFusion's own /run_code router (its runners, isolation none)
# on Debian's fastapi/uvicorn/pydantic 1.10, with `python` resolving to
# /usr/bin/python3, for BenchmarkServeVsSandboxFusion. Usage:
#   python3 launch.py CHECKOUT BIN PORT
# CHECKOUT holds SandboxFusion's sandbox/ and runtime/ directories; BIN holds
# a `python` symlink to /usr/bin/python3 (Debian has no `python`).
import os, sys
checkout, bindir, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, checkout)
os.chdir(checkout)
# Debian's pydantic is 1.10: SandboxFusion calls v2's model_dump and keeps
# its config singleton in v2's private attributes. The v1 equivalents:
import pydantic
pydantic.BaseModel.model_dump = pydantic.BaseModel.dict
pydantic.BaseModel.model_dump_json = pydantic.BaseModel.json
from sandbox.configs.run_config import RunConfig
_one = []
RunConfig.get_instance_sync = classmethod(lambda cls, *a, **k: _one[0] if _one else (_one.append(cls(*a, **k)) or _one[0]))
import sandbox.runners.major as major
major.get_python_rt_env = lambda name: {'PATH': bindir + ':' + os.environ.get('PATH', '/usr/bin:/bin')}
from fastapi import FastAPI
from sandbox.server.sandbox_api import sandbox_router
app = FastAPI()
app.include_router(sandbox_router)
import uvicorn
uvicorn.run(app, host='127.0.0.1', port=port, log_level='warning')
