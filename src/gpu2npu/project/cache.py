"""The per-file result cache: what processing one file gave (its result and new bytes), stored
under a key that names everything the result depends on, so a warm run re-reads only the files
that changed.

A key is a hash of: the file's bytes, its path and kind, what the project tells that file
(``ProjectFacts.for_file``), and the run key: the tool itself (version and the bytes of its
package), the compiled rules (built-in, ``-r`` and ``-api`` statuses, for the target version and
mode), the analysis settings and what the run keeps (changes, API uses, diffs). One entry is
one file, content-addressed: written beside its place and renamed (two runs writing one key
write the same bytes), checked by a digest on reading (a corrupt entry is a miss and a
warning), and the folder is trimmed, oldest used first, when it grows past its bound.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, Iterable, List, Optional, Tuple

import gpu2npu

FORMAT = b"gpu2npu-cache 1\n"  # changes when the entry layout does
DIGEST_SIZE = 32
LIMIT_BYTES = 512 * 1024 * 1024  # default bound of the cache folder
TRIMMED_TO = 0.8  # a trim removes the oldest entries until the folder is this share of the bound
ENTRIES = "entries"
HIT, MISS, CORRUPT = "hit", "miss", "corrupt"


def canonical(value: Any) -> Any:
    """``value`` as JSON-ready data that is the same in every process: sets sorted, dataclasses
    and mappings as sorted mappings (hash randomisation must not change a key)."""
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: canonical(getattr(value, f.name)) for f in fields(value) if f.compare}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def fingerprint(*parts: Any) -> str:
    """One hash of ``parts`` (see ``canonical``)."""
    text = json.dumps(canonical(list(parts)), sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def tool_fingerprint() -> str:
    """The tool's version and the bytes of its package (code, data, packaged rules): a result
    made by other code is never reused, even under the same version number."""
    digest = hashlib.blake2b(gpu2npu.__version__.encode(), digest_size=16)
    package = Path(gpu2npu.__file__).resolve().parent
    for path in sorted(package.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def default_directory() -> Path:
    """``$GPU2NPU_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpu2npu``, else ``~/.cache/gpu2npu``:
    outside the project, which a run never writes into."""
    chosen = os.environ.get("GPU2NPU_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpu2npu"


@dataclass(frozen=True)
class ResultCache:
    """The cache as one run uses it (sent once to each worker)."""

    directory: Path  # the cache folder; entries live under ``directory/entries``
    run_key: str  # the run's share of every key

    def key(self, rel: str, kind: str, data: bytes, file_facts: Any) -> str:
        digest = hashlib.blake2b(self.run_key.encode(), digest_size=DIGEST_SIZE)
        digest.update(json.dumps([rel, kind, canonical(file_facts)], sort_keys=True).encode() + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / ENTRIES / key[:2] / key[2:]

    def load(self, key: str) -> Tuple[str, Any]:
        """(HIT, the stored value), (MISS, None) or (CORRUPT, None)."""
        path = self._path(key)
        try:
            blob = path.read_bytes()
        except OSError:  # absent, or trimmed away by another run meanwhile
            return MISS, None
        value = _unpacked(blob, key)
        if value is None:
            return CORRUPT, None
        try:
            os.utime(path)  # used now: the trim removes the entries unused longest
        except OSError:
            pass
        return HIT, value

    def store(self, key: str, value: Any) -> None:
        """Write an entry atomically; a cache that cannot be written only costs the next run time."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(_packed(key, value))
                os.replace(temporary, path)
            except BaseException:
                _remove(Path(temporary))
                raise
        except OSError:
            pass


def _packed(key: str, value: Any) -> bytes:
    payload = pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL)
    return FORMAT + hashlib.blake2b(payload, digest_size=DIGEST_SIZE).digest() + payload


def _unpacked(blob: bytes, key: str) -> Any:
    """The value of an entry, or None when it is not intact (wrong format, digest or key)."""
    start = len(FORMAT) + DIGEST_SIZE
    if not blob.startswith(FORMAT) or len(blob) < start:
        return None
    payload = blob[start:]
    if hashlib.blake2b(payload, digest_size=DIGEST_SIZE).digest() != blob[len(FORMAT) : start]:
        return None
    try:
        stored_key, value = pickle.loads(payload)
    except Exception:  # an entry of another layout: unusable, never fatal
        return None
    return value if stored_key == key else None


def open_cache(directory: Path, run_key: str) -> Tuple[Optional[ResultCache], str]:
    """The cache at ``directory`` for this run, or None and why it cannot be used."""
    try:
        (directory / ENTRIES).mkdir(parents=True, exist_ok=True, mode=0o700)
        probe = tempfile.NamedTemporaryFile(prefix=".probe-", dir=directory / ENTRIES)
        probe.close()
    except OSError as exc:
        return None, f"the cache folder '{directory}' cannot be written ({exc.strerror or exc})"
    return ResultCache(directory, run_key), ""


def trim(directory: Path, limit: int = LIMIT_BYTES) -> int:
    """Remove the entries used longest ago until the folder holds at most ``TRIMMED_TO`` of
    ``limit`` bytes (only when it holds more than ``limit``); how many were removed."""
    entries = list(_entries(directory / ENTRIES))
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return 0
    removed = 0
    for path, size, _ in sorted(entries, key=lambda entry: entry[2]):
        if total <= limit * TRIMMED_TO:
            break
        if _remove(path):
            total -= size
            removed += 1
    return removed


def _entries(folder: Path) -> Iterable[Tuple[Path, int, float]]:
    """(path, size, last use) of every file in the folder, stray temporary files included."""
    try:
        shards = list(os.scandir(folder))
    except OSError:
        return
    for shard in shards:
        if not shard.is_dir(follow_symlinks=False):
            continue
        try:
            files = list(os.scandir(shard.path))
        except OSError:
            continue
        for entry in files:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield Path(entry.path), info.st_size, info.st_mtime


def _remove(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except OSError:
        return False


@dataclass
class CacheCounts:
    """What the cache did in one run, for the line on standard error."""

    hits: int = 0
    misses: int = 0
    corrupt: int = 0

    def add(self, outcomes: List[str]) -> None:
        self.hits += outcomes.count(HIT)
        self.misses += outcomes.count(MISS)
        self.corrupt += outcomes.count(CORRUPT)
