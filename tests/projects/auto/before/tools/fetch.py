"""Downloads the data: only the standard library and a project module that needs no torch, so it
is no entry of the automatic migration (it would need torch_npu for nothing)."""
import json
import urllib.request

from lib.paths import DATA

if __name__ == "__main__":
    print(json.dumps({"data": DATA, "opener": urllib.request.build_opener().__class__.__name__}))
