"""Persistent latency cache: ``Cached(inner, store)`` wraps any CommModel.

- key.py: the key material (canonical placement shape, touched link parameters,
  backend identity) and KEY_VERSION;
- store.py: LatencyStore, the SQLite file (answers, in-flight claims with /proc
  liveness, counters) and its whole-file checks (verify, clear);
- cached.py: Cached, the CommModel wrapper that asks the store first.

The names below are the module's public names from before it became a package.
"""

from artist.jsonkey import canonical_json
from artist.network.cache.cached import Cached, SessionStats
from artist.network.cache.key import (KEY_VERSION, cache_key, collective_key_material, key_material,
                                      key_material_parts, touched_link_parameters)
from artist.network.cache.store import (CACHE_FILE_NAME, COUNTER_FLUSH_INTERVAL_S, COUNTER_NAMES,
                                        DEFAULT_BUSY_TIMEOUT_S, DEFAULT_CLAIM_TTL_S, DEFAULT_POLL_INTERVAL_S,
                                        ENTRY_COLUMNS, NS3_BACKEND, SCHEMA_VERSION, SIDE_FILE_SUFFIXES, WAIT,
                                        CacheReport, CacheUnusable, Claim, ClearOutcome, LatencyStore, StoredAnswer,
                                        UnreadableEntry, cache_command, cache_files, check_cache_usable,
                                        created_before, default_cache_dir, default_cache_path, inspect_cache,
                                        is_damage, owner_is_gone, readable_ns3_results, remove_cache_files,
                                        result_from_json, result_to_json, stored_answer_from_row)

__all__ = [
    "CACHE_FILE_NAME", "COUNTER_FLUSH_INTERVAL_S", "COUNTER_NAMES", "DEFAULT_BUSY_TIMEOUT_S", "DEFAULT_CLAIM_TTL_S",
    "DEFAULT_POLL_INTERVAL_S", "ENTRY_COLUMNS", "KEY_VERSION", "NS3_BACKEND", "SCHEMA_VERSION", "SIDE_FILE_SUFFIXES",
    "WAIT", "CacheReport", "CacheUnusable", "Cached", "Claim", "ClearOutcome", "LatencyStore", "SessionStats",
    "StoredAnswer", "UnreadableEntry", "cache_command", "cache_files", "cache_key", "canonical_json",
    "check_cache_usable", "collective_key_material", "created_before", "default_cache_dir", "default_cache_path",
    "inspect_cache", "is_damage", "key_material", "key_material_parts", "owner_is_gone", "readable_ns3_results",
    "remove_cache_files", "result_from_json", "result_to_json", "stored_answer_from_row", "touched_link_parameters",
]
