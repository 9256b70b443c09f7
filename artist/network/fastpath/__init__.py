"""The validated fast path of the ns-3 backend: message-level timing where no link is shared.

    choice = choose_path(arrays, transport, mtu, window_bytes, ack_every)   # rule.py
    if choice.path == MESSAGE_LEVEL:
        result = time_engine_input(arrays, mtu, ack_every)                  # timing.py (waves.py: numpy)

Both read the ns-3 engine's own input (artist/network/ns3/builder.py), so the model times exactly
the network, routes, messages and dependencies ns-3 would simulate. Ns3Model (artist/network/ns3)
asks the rule before every run (its fast_path option, on by default) and records in every answer
which path answered (details["path"]: "ns3" or "ns3-message-level"). benchmarks/sweep_cost.py
and tests/test_fastpath*.py check it against full packet runs (within 1 %). time_engine_input
computes in waves of messages on numpy arrays (waves.py) where it can show the order is the event
loop's, else message by message (timing.py): the same bits either way (tests/test_fastpath_waves.py).
"""

from artist.network.fastpath.rule import (MESSAGE_LEVEL, NS3, PathChoice, choose_path, shared_links,
                                          window_limits)
from artist.network.fastpath.timing import frames_of, path_weights, time_engine_input

# Bump when the message-level model changes an answer (it is part of Ns3Model.identity()).
FASTPATH_VERSION = "1"

__all__ = ["FASTPATH_VERSION", "MESSAGE_LEVEL", "NS3", "PathChoice", "choose_path", "frames_of", "path_weights",
           "shared_links", "time_engine_input", "window_limits"]
