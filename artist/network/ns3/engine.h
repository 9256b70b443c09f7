// ArtISt collective engine: its interface (input Spec, output Result, run_spec),
// implemented in engine.cc. Needs no ns-3 header, so that the C entry points
// worker.py generates for the compiled engine (engine_build.py) and the cppyy
// bindings can use it cheaply. A field added here must also be named in the field
// lists of worker.py (_U32, _U64, _F64, _SCALARS for Spec; _RESULT_* for Result).

#ifndef ARTIST_NS3_ENGINE_H
#define ARTIST_NS3_ENGINE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace artist_ns3
{
extern const char* ENGINE_VERSION; // defined in engine.cc (artist/network/ns3/__init__.py reads it there)

struct Spec
{
    uint32_t nodes = 0;
    std::vector<uint32_t> link_a, link_b;
    std::vector<double> link_bps, link_delay_s;
    std::vector<uint32_t> route_off, route_link, route_dir; // CSR; dir 0: a->b, 1: b->a
    std::vector<uint32_t> m_src, m_dst, m_route, m_coll, m_conn;
    std::vector<uint64_t> m_bytes;
    std::vector<double> m_alpha_s;
    std::vector<uint32_t> dep_off, dep_idx; // CSR over messages
    std::vector<double> c_ready_s, c_base_s;
    std::vector<uint32_t> c_first; // messages of collective c: [c_first[c], c_first[c+1])
    std::vector<uint32_t> c_pred_off, c_pred_idx; // CSR: collectives that must end before c starts
    int transport = 0; // 0 window, 1 tcp
    uint32_t mtu = 9000;
    uint64_t window_bytes = 1 << 20;
    uint32_t ack_every = 8;
    uint32_t queue_packets = 100000;
    uint32_t tcp_red_k_packets = 20;
    uint32_t tcp_buffer_bytes = 8 << 20;
    double tcp_min_rto_s = 0.001;
    bool debug_hang = false;
    bool debug_crash = false;
    uint32_t scheduler = 0; // 0 Map (ns-3's default), 1 List, 2 Heap, 3 Calendar, 4 PriorityQueue
    uint32_t arbitration = 0; // window transport, switch outputs: 0 fifo (drop-tail device queue), 1 round-robin
};

struct Result
{
    std::vector<double> c_start_s, c_end_s;
    std::vector<double> m_done_s;
    std::vector<uint64_t> node_rx_bytes, node_tx_bytes;
    uint64_t data_packets = 0;
    uint64_t ack_packets = 0;
    uint64_t device_transmissions = 0;
    uint64_t drops = 0;
    uint64_t events = 0;
    double t0_s = 0; // when collectives could start (TCP: after connection set-up)
    std::vector<uint64_t> c_end_ps; // c_end_s in the simulator's picoseconds
    uint64_t last_event_ps = 0; // time of the run's last event (every frame and ack delivered)
    std::string error;
};

void fill_u32(std::vector<uint32_t>& v, const uint32_t* p, size_t n);
void fill_u64(std::vector<uint64_t>& v, const uint64_t* p, size_t n);
void fill_f64(std::vector<double>& v, const double* p, size_t n);

Result run_spec(const Spec& spec);

// ns-3's conversions between picosecond time steps and seconds (as Seconds() and GetSeconds() do them).
double ps_to_seconds(int64_t ps);
int64_t seconds_to_ps(double seconds);

} // namespace artist_ns3

#endif // ARTIST_NS3_ENGINE_H
