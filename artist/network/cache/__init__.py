"""Persistent latency cache: ``Cached(inner, store)`` wraps any FabricModel.

- key.py: the key material (step graphs relabelled onto canonical GPUs, touched
  link parameters, backend identity) and KEY_VERSION;
- store.py: LatencyStore, the SQLite file (answers, in-flight claims with /proc
  liveness, counters) and its whole-file checks (verify, clear);
- cached.py: Cached, the FabricModel wrapper that asks the store first.

The names below are the package's public names.
"""

from artist.jsonkey import canonical_json
from artist.network.cache.cached import Cached, SessionStats
from artist.network.cache.key import (KEY_VERSION, cache_key, canonical_gpu_map, collective_key_material,
                                      graphs_key_material, touched_link_parameters)
from artist.network.cache.store import (CACHE_FILE_NAME, COUNTER_FLUSH_INTERVAL_S, COUNTER_NAMES,
                                        DEFAULT_BUSY_TIMEOUT_S, DEFAULT_CLAIM_TTL_S, DEFAULT_POLL_INTERVAL_S,
                                        ENTRY_COLUMNS, NS3_BACKEND, SCHEMA_VERSION, SIDE_FILE_SUFFIXES, WAIT,
                                        CacheReport, CacheUnusable, CachedTiming, Claim, ClearOutcome, LatencyStore,
                                        StoredAnswer,
                                        UnreadableEntry, cache_command, cache_files, check_cache_usable,
                                        created_before, default_cache_dir, default_cache_path, inspect_cache,
                                        is_damage, owner_is_gone, readable_ns3_results, remove_cache_files,
                                        result_from_json, result_to_json, stored_answer_from_row)

__all__ = [
    "CACHE_FILE_NAME", "COUNTER_FLUSH_INTERVAL_S", "COUNTER_NAMES", "DEFAULT_BUSY_TIMEOUT_S", "DEFAULT_CLAIM_TTL_S",
    "DEFAULT_POLL_INTERVAL_S", "ENTRY_COLUMNS", "KEY_VERSION", "NS3_BACKEND", "SCHEMA_VERSION", "SIDE_FILE_SUFFIXES",
    "WAIT", "CacheReport", "CacheUnusable", "Cached", "CachedTiming", "Claim", "ClearOutcome", "LatencyStore",
    "SessionStats", "StoredAnswer", "UnreadableEntry", "cache_command", "cache_files", "cache_key", "canonical_json",
    "canonical_gpu_map", "check_cache_usable", "collective_key_material", "created_before", "default_cache_dir",
    "default_cache_path", "graphs_key_material", "inspect_cache", "is_damage", "owner_is_gone",
    "readable_ns3_results", "remove_cache_files", "result_from_json", "result_to_json", "stored_answer_from_row",
    "touched_link_parameters",
]
