// ArtISt collective engine: executes collective schedules (dependency graphs of
// point-to-point messages) packet by packet inside ns-3. Compiled once per
// installation into a shared library (engine_build.py), or at run time by
// cppyy.cppdef where no C++ compiler is found (see worker.py); no Python runs per
// packet or per message. Its interface (Spec, Result, run_spec) is in engine.h.
//
// Input (Spec): a point-to-point graph (nodes, links with rate and delay), routes
// (sequences of directed links), messages (src/dst node, bytes, route, start-up
// latency, dependencies) grouped in collectives (the communication nodes of one or
// several jobs' step graphs). Collective c starts at max(t0 + ready_c, the end of its
// last predecessor (c_pred_off/c_pred_idx, CSR)), pays its base latency, then every
// message starts alpha after the last message it depends on has been fully received
// by its sender. A collective without messages is a timer of its base time (a compute
// node of a step graph).
//
// Two transports:
//  * WINDOW (default): message-level reliable transport written here. Raw frames on
//    point-to-point devices with a 16-byte transport header, source routing by flow
//    id at switches, an end-to-end byte window per message with cumulative ACKs
//    every `ack_every` data frames. The fabric is treated as lossless (as InfiniBand
//    with credit flow control): switch queues are sized so that windows cannot
//    overflow them, and any drop is counted and reported as an error.
//    Switch output arbitration (Spec::arbitration):
//      - fifo (0, the default): a forwarded frame joins its output device's drop-tail
//        queue, so one connection's whole window can stand in front of another's frames.
//      - round-robin (1): every switch output keeps one software queue per flow (a
//        connection's data frames; its acks are a flow of their own) and hands the device
//        one frame at a time, the next taken round-robin over the flows with frames the
//        moment the wire frees (pulled at the same picosecond, so the link never idles
//        while frames wait). Frames are at most one MTU, so frame round-robin is close to
//        byte fair queuing, and no flow's backlog delays another flow by more than one
//        frame per competing flow. What this stands for: InfiniBand switches do not let
//        one flow's backlog fill a deep output FIFO. The InfiniBand Architecture
//        Specification, Vol. 1 (Release 1.2.1, InfiniBand Trade Association, 2007),
//        ch. 7 "Link Layer", its flow-control section: link-level credit-based flow control
//        per virtual lane, a port transmits only into receive buffer space its neighbour has
//        advertised (per-VL buffers, no drops); and its VL-arbitration section: each output
//        port picks the next packet among its VLs by weighted round-robin tables (ch. 18
//        "Switches" leaves the choice among input ports to the implementation). The
//        per-flow round-robin here is our idealisation of that (fair queuing per flow at
//        every switch output, unlimited software buffers bounded by the windows), not the
//        specification's mechanism: real switches arbitrate per VL and input port.
//        Endpoints (a GPU's own device) round-robin their connections in both modes (Port).
//  * TCP: the ns-3 TCP/IP stack, DCTCP congestion control, RED queue discs marking
//    ECN, jumbo frames; one connection per (src, dst, channel), opened before the
//    first collective starts; static host routes along the same routes.
//
// Every byte is accounted: per message the receiver must see exactly its bytes,
// per node received bytes are returned for conservation checks.

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include "engine.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace artist_ns3
{
using namespace ns3;

const char* ENGINE_VERSION = "1";

// ---------------------------------------------------------------- header
class MsgHeader : public Header
{
  public:
    uint32_t flow = 0;
    uint16_t type = 0; // 0 data, 1 ack
    uint16_t pad = 0;
    uint64_t value = 0; // ack: cumulative bytes received

    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("artist::MsgHeader").SetParent<Header>().AddConstructor<MsgHeader>();
        return tid;
    }

    TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    uint32_t GetSerializedSize() const override
    {
        return 16;
    }

    void Serialize(Buffer::Iterator i) const override
    {
        i.WriteU32(flow);
        i.WriteU16(type);
        i.WriteU16(pad);
        i.WriteU64(value);
    }

    uint32_t Deserialize(Buffer::Iterator i) override
    {
        flow = i.ReadU32();
        type = i.ReadU16();
        pad = i.ReadU16();
        value = i.ReadU64();
        return 16;
    }

    void Print(std::ostream& os) const override
    {
        os << "flow=" << flow << " type=" << type << " value=" << value;
    }
};

void fill_u32(std::vector<uint32_t>& v, const uint32_t* p, size_t n)
{
    v.assign(p, p + n);
}

void fill_u64(std::vector<uint64_t>& v, const uint64_t* p, size_t n)
{
    v.assign(p, p + n);
}

void fill_f64(std::vector<double>& v, const double* p, size_t n)
{
    v.assign(p, p + n);
}

// ---------------------------------------------------------------- engine
class Engine;
void port_tx_end(std::pair<Engine*, uint32_t>* ctx, Ptr<const Packet>);
void arbiter_tx_end(std::pair<Engine*, uint32_t>* ctx, Ptr<const Packet>);

class Engine
{
  public:
    explicit Engine(const Spec& spec)
        : s(spec)
    {
    }

    Result Run();
    void PortTxEnd(uint32_t p);

  private:
    struct Hop
    {
        uint32_t node;
        Ptr<PointToPointNetDevice> dev;
        uint32_t slot; // the device's index among all devices: 2 x link + (0: its a end, 1: its b end)
    };

    struct Route
    {
        std::vector<Hop> fwd, rev; // fwd from src to dst, rev for acks
    };

    struct Msg
    {
        uint32_t deps_left = 0;
        uint64_t sent = 0, acked = 0, rcvd = 0;
        uint32_t frames_since_ack = 0;
        bool started = false, done = false, sent_any = false, blocked = false;
        std::vector<uint32_t> dependents;
    };

    struct Port // an endpoint device with its round-robin over connections that have data
    {
        Ptr<PointToPointNetDevice> dev;
        std::deque<uint32_t> rr; // connection ids
        bool pump_scheduled = false;
    };

    struct Arbiter // round-robin switch output: per-flow frame queues, one frame on the device at a time
    {
        Ptr<PointToPointNetDevice> dev;
        std::map<uint64_t, std::deque<Ptr<Packet>>> waiting; // flow -> its frames, oldest first
        std::deque<uint64_t> rr; // flows with frames waiting, in turn order
        bool busy = false; // a frame is on the wire (handed over, its PhyTxEnd not yet seen)
        bool pump_scheduled = false;
        bool traced = false;
    };

    struct WConn // window transport: messages of one (src, dst, channel) go out in order
    {
        std::deque<uint32_t> queue; // messages ready to send, oldest first
        uint64_t sent = 0, acked = 0;
        bool in_rr = false, blocked = false;
        uint32_t port = 0;
    };

    struct Conn // TCP: one per (src, dst, channel)
    {
        Ptr<Socket> tx, rx;
        uint64_t pending = 0;
        std::deque<uint32_t> send_order; // messages in the order their bytes entered the stream
        uint64_t front_left = 0;
        bool connected = false;
    };

    const Spec& s;
    Result r;
    NodeContainer nodes;
    std::vector<Ptr<PointToPointNetDevice>> dev_a, dev_b; // per link, device on a / on b
    std::vector<Route> routes;
    std::vector<Msg> msgs;
    std::map<PointToPointNetDevice*, uint32_t> port_of;
    std::deque<std::pair<Engine*, uint32_t>> port_ctx;
    uint32_t node_base = 0;
    std::vector<Port> ports;
    std::vector<Arbiter> arbiters; // per device slot (round-robin arbitration only)
    std::deque<std::pair<Engine*, uint32_t>> arbiter_ctx;
    std::vector<WConn> wconns;
    std::vector<uint32_t> coll_left;
    std::vector<uint32_t> preds_left;             // per collective: predecessors not yet ended
    std::vector<std::vector<uint32_t>> successors; // per collective: who waits for it
    uint32_t payload = 0;
    // tcp
    std::vector<Conn> conns;
    std::map<Socket*, uint32_t> conn_of_rx;
    uint32_t connected = 0;
    std::vector<Ipv4Address> addr_a, addr_b;

    void BuildNetwork();
    void StartCollective(uint32_t c);
    void StartRoots(uint32_t c);
    void StartFirstCollectives();
    void CollectiveDone(uint32_t c);
    void MessageReady(uint32_t m);
    void MessageDone(uint32_t m);
    void Hang();

    // window transport
    void WindowStart(uint32_t m);
    void SchedulePump(uint32_t port);
    void Pump(uint32_t port);
    bool OnReceive(Ptr<NetDevice> dev, Ptr<const Packet> p, uint16_t proto, const Address& from);
    void Forward(uint32_t node, const std::vector<Hop>& hops, Ptr<Packet> p, uint64_t flow);
    void ArbiterEnqueue(uint32_t slot, uint64_t flow, Ptr<Packet> p);
    void ArbiterPump(uint32_t slot);

  public:
    void ArbiterTxEnd(uint32_t slot);

  private:
    void SendAck(uint32_t m);

    // tcp transport
    void TcpSetup();
    void TcpOpen();
    // Addresses of route hop k's link at its far (next-hop) and near (this-hop) ends.
    Ipv4Address FarAddr(uint32_t k) const
    {
        uint32_t l = s.route_link[k];
        return s.route_dir[k] == 0 ? addr_b[l] : addr_a[l];
    }
    Ipv4Address NearAddr(uint32_t k) const
    {
        uint32_t l = s.route_link[k];
        return s.route_dir[k] == 0 ? addr_a[l] : addr_b[l];
    }
    void CountWireFrame(Ptr<const Packet>)
    {
        r.device_transmissions++;
    }
    void CountEndpointFrame(Ptr<const Packet>)
    {
        r.data_packets++;
    }
    void TcpStart(uint32_t m);
    void TcpPush(uint32_t c);
    void TcpConnected(Ptr<Socket> sock);
    void TcpConnectFailed(Ptr<Socket> sock);
    void TcpSendSpace(Ptr<Socket> sock, uint32_t avail);
    void TcpAccept(Ptr<Socket> sock, const Address& from);
    void TcpRecv(Ptr<Socket> sock);
    std::map<Socket*, uint32_t> conn_of_tx;
    std::map<uint32_t, uint32_t> conn_of_port;
};

void Engine::BuildNetwork()
{
    nodes.Create(s.nodes);
    node_base = nodes.Get(0)->GetId();
    PointToPointHelper p2p;
    uint32_t nl = s.link_a.size();
    dev_a.resize(nl);
    dev_b.resize(nl);
    for (uint32_t l = 0; l < nl; ++l)
    {
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate((uint64_t)s.link_bps[l])));
        p2p.SetDeviceAttribute("Mtu", UintegerValue(s.mtu));
        p2p.SetChannelAttribute("Delay", TimeValue(PicoSeconds((int64_t)(s.link_delay_s[l] * 1e12 + 0.5))));
        if (s.transport == 0)
        {
            p2p.SetQueue("ns3::DropTailQueue<Packet>",
                         "MaxSize",
                         QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, s.queue_packets)));
        }
        else
        {
            // TCP: the RED queue disc above the device does the queueing (and ECN marking).
            p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("4p")));
        }
        NetDeviceContainer d = p2p.Install(nodes.Get(s.link_a[l]), nodes.Get(s.link_b[l]));
        dev_a[l] = DynamicCast<PointToPointNetDevice>(d.Get(0));
        dev_b[l] = DynamicCast<PointToPointNetDevice>(d.Get(1));
    }
    uint32_t nr = s.route_off.size() - 1;
    routes.resize(nr);
    for (uint32_t rt = 0; rt < nr; ++rt)
    {
        for (uint32_t k = s.route_off[rt]; k < s.route_off[rt + 1]; ++k)
        {
            uint32_t l = s.route_link[k];
            bool ab = s.route_dir[k] == 0;
            routes[rt].fwd.push_back({ab ? s.link_a[l] : s.link_b[l], ab ? dev_a[l] : dev_b[l], 2 * l + (ab ? 0 : 1)});
        }
        for (uint32_t k = s.route_off[rt + 1]; k-- > s.route_off[rt];)
        {
            uint32_t l = s.route_link[k];
            bool ab = s.route_dir[k] == 0;
            routes[rt].rev.push_back({ab ? s.link_b[l] : s.link_a[l], ab ? dev_b[l] : dev_a[l], 2 * l + (ab ? 1 : 0)});
        }
    }
}

Result Engine::Run()
{
    uint32_t nm = s.m_src.size();
    uint32_t nc = s.c_ready_s.size();
    r.c_start_s.assign(nc, -1.0);
    r.c_end_s.assign(nc, -1.0);
    r.c_end_ps.assign(nc, 0);
    r.m_done_s.assign(nm, -1.0);
    r.node_rx_bytes.assign(s.nodes, 0);
    r.node_tx_bytes.assign(s.nodes, 0);
    payload = s.mtu - 16;
    msgs.resize(nm);
    for (uint32_t m = 0; m < nm; ++m)
    {
        msgs[m].deps_left = s.dep_off[m + 1] - s.dep_off[m];
        for (uint32_t k = s.dep_off[m]; k < s.dep_off[m + 1]; ++k)
        {
            msgs[s.dep_idx[k]].dependents.push_back(m);
        }
    }
    coll_left.resize(nc);
    for (uint32_t c = 0; c < nc; ++c)
    {
        coll_left[c] = s.c_first[c + 1] - s.c_first[c];
    }
    if (s.c_pred_off.size() != nc + 1)
    {
        r.error = "c_pred_off must have one entry per collective plus one";
        return r;
    }
    preds_left.assign(nc, 0);
    successors.assign(nc, {});
    for (uint32_t c = 0; c < nc; ++c)
    {
        for (uint32_t k = s.c_pred_off[c]; k < s.c_pred_off[c + 1]; ++k)
        {
            successors[s.c_pred_idx[k]].push_back(c);
            preds_left[c]++;
        }
    }

    if (s.arbitration > 1)
    {
        r.error = "unknown arbitration " + std::to_string(s.arbitration);
        return r;
    }
    BuildNetwork();
    if (s.transport == 0)
    {
        if (s.arbitration == 1)
        {
            arbiters.resize(2 * dev_a.size());
        }
        // One sending port per endpoint device that starts a route; refilled when it drains.
        uint32_t nconn = 0;
        for (uint32_t c : s.m_conn)
        {
            nconn = std::max(nconn, c + 1);
        }
        wconns.resize(nconn);
        for (uint32_t m = 0; m < nm; ++m)
        {
            Ptr<PointToPointNetDevice> dev = routes[s.m_route[m]].fwd[0].dev;
            if (port_of.count(PeekPointer(dev)) == 0)
            {
                uint32_t p = ports.size();
                ports.push_back(Port{dev, {}, false});
                port_of[PeekPointer(dev)] = p;
                port_ctx.emplace_back(this, p);
                dev->TraceConnectWithoutContext("PhyTxEnd", MakeBoundCallback(&port_tx_end, &port_ctx.back()));
            }
            wconns[s.m_conn[m]].port = port_of[PeekPointer(dev)];
        }
        for (uint32_t l = 0; l < dev_a.size(); ++l)
        {
            for (auto d : {dev_a[l], dev_b[l]})
            {
                d->SetReceiveCallback(MakeCallback(&Engine::OnReceive, this));
            }
        }
        StartFirstCollectives();
    }
    else
    {
        TcpSetup();
        // Count frames as they leave endpoints (TCP data and acks) and cross any link.
        std::set<PointToPointNetDevice*> endpoint;
        for (const Route& rt : routes)
        {
            endpoint.insert(PeekPointer(rt.fwd[0].dev));
            endpoint.insert(PeekPointer(rt.rev[0].dev));
        }
        for (uint32_t l = 0; l < dev_a.size(); ++l)
        {
            for (auto d : {dev_a[l], dev_b[l]})
            {
                d->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&Engine::CountWireFrame, this));
                if (endpoint.count(PeekPointer(d)))
                {
                    d->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&Engine::CountEndpointFrame, this));
                }
            }
        }
    }
    if (s.debug_hang)
    {
        Simulator::Schedule(NanoSeconds(1), &Engine::Hang, this);
    }
    if (s.debug_crash)
    {
        std::abort();
    }
    Simulator::Run();
    // Window transport: frames put on a wire (one per link crossed), from the frames each
    // message needed (acks are added as they are sent). TCP counts them as they happen.
    for (uint32_t m = 0; m < nm && s.transport == 0; ++m)
    {
        uint64_t hops = routes[s.m_route[m]].fwd.size();
        uint64_t frames = s.m_bytes[m] == 0 ? 1 : (s.m_bytes[m] + payload - 1) / payload;
        r.device_transmissions += frames * hops;
    }
    for (uint32_t c = 0; c < nc; ++c)
    {
        if (r.c_end_s[c] < 0 && r.error.empty())
        {
            r.error = "collective " + std::to_string(c) + " did not finish: " +
                      std::to_string(coll_left[c]) + " messages undelivered";
        }
    }
    if (r.drops > 0 && s.transport == 0 && r.error.empty())
    {
        r.error = std::to_string(r.drops) + " frames dropped on a fabric the window transport assumes lossless; "
                  "raise queue_packets or lower window_bytes";
    }
    r.events = Simulator::GetEventCount();
    r.last_event_ps = Simulator::Now().GetTimeStep(); // when the network fell quiet (exact reuse needs it)
    Simulator::Destroy();
    return r;
}

void Engine::Hang()
{
    Simulator::Schedule(NanoSeconds(1), &Engine::Hang, this);
}

// Collectives without predecessors start at t0 + their ready time (in index order, so that
// simultaneous starts are scheduled deterministically).
void Engine::StartFirstCollectives()
{
    for (uint32_t c = 0; c < s.c_ready_s.size(); ++c)
    {
        if (preds_left[c] == 0)
        {
            Simulator::Schedule(Seconds(s.c_ready_s[c]), &Engine::StartCollective, this, c);
        }
    }
}

void Engine::CollectiveDone(uint32_t c)
{
    r.c_end_s[c] = Simulator::Now().GetSeconds();
    r.c_end_ps[c] = Simulator::Now().GetTimeStep();
    for (uint32_t d : successors[c])
    {
        if (--preds_left[d] == 0)
        {
            double next = std::max(s.c_ready_s[d] + r.t0_s, r.c_end_s[c]);
            Simulator::Schedule(Seconds(next) - Simulator::Now(), &Engine::StartCollective, this, d);
        }
    }
}

void Engine::StartCollective(uint32_t c)
{
    r.c_start_s[c] = Simulator::Now().GetSeconds();
    Simulator::Schedule(Seconds(s.c_base_s[c]), &Engine::StartRoots, this, c);
}

void Engine::StartRoots(uint32_t c)
{
    if (coll_left[c] == 0)
    {
        CollectiveDone(c); // a timer, or a collective with nothing to send
        return;
    }
    for (uint32_t m = s.c_first[c]; m < s.c_first[c + 1]; ++m)
    {
        if (msgs[m].deps_left == 0)
        {
            Simulator::Schedule(Seconds(s.m_alpha_s[m]), &Engine::MessageReady, this, m);
        }
    }
}

void Engine::MessageReady(uint32_t m)
{
    msgs[m].started = true;
    r.node_tx_bytes[s.m_src[m]] += s.m_bytes[m];
    if (s.transport == 0)
    {
        WindowStart(m);
    }
    else
    {
        TcpStart(m);
    }
}

void Engine::MessageDone(uint32_t m)
{
    Msg& g = msgs[m];
    g.done = true;
    r.m_done_s[m] = Simulator::Now().GetSeconds();
    r.node_rx_bytes[s.m_dst[m]] += g.rcvd;
    for (uint32_t d : g.dependents)
    {
        if (--msgs[d].deps_left == 0)
        {
            Simulator::Schedule(Seconds(s.m_alpha_s[d]), &Engine::MessageReady, this, d);
        }
    }
    uint32_t c = s.m_coll[m];
    if (--coll_left[c] == 0)
    {
        CollectiveDone(c);
    }
}

// ---------------------------------------------------------------- window transport
void Engine::WindowStart(uint32_t m)
{
    WConn& cn = wconns[s.m_conn[m]];
    cn.queue.push_back(m);
    if (!cn.in_rr && !cn.blocked)
    {
        cn.in_rr = true;
        ports[cn.port].rr.push_back(s.m_conn[m]);
    }
    SchedulePump(cn.port);
}

void Engine::SchedulePump(uint32_t p)
{
    if (!ports[p].pump_scheduled)
    {
        ports[p].pump_scheduled = true;
        Simulator::ScheduleNow(&Engine::Pump, this, p);
    }
}

void Engine::Pump(uint32_t p)
{
    Port& port = ports[p];
    port.pump_scheduled = false;
    Ptr<Queue<Packet>> q = port.dev->GetQueue();
    // Keep a few frames queued on the device so it never idles between pumps;
    // connections take turns frame by frame, each sends its messages in order.
    while (q->GetNPackets() < 8 && !port.rr.empty())
    {
        uint32_t c = port.rr.front();
        port.rr.pop_front();
        WConn& cn = wconns[c];
        cn.in_rr = false;
        if (cn.queue.empty())
        {
            continue;
        }
        if (cn.sent - cn.acked >= s.window_bytes)
        {
            cn.blocked = true; // re-queued by the ack that opens the window
            continue;
        }
        uint32_t m = cn.queue.front();
        Msg& g = msgs[m];
        uint64_t size = s.m_bytes[m];
        uint32_t n = (uint32_t)std::min<uint64_t>(payload, size - g.sent);
        Ptr<Packet> pkt = Create<Packet>(n);
        MsgHeader h;
        h.flow = m;
        h.type = 0;
        pkt->AddHeader(h);
        g.sent += n;
        cn.sent += n;
        g.sent_any = true;
        r.data_packets++;
        if (!port.dev->Send(pkt, port.dev->GetBroadcast(), 0x0800))
        {
            r.drops++;
        }
        if (g.sent >= size)
        {
            cn.queue.pop_front();
        }
        if (!cn.queue.empty())
        {
            cn.in_rr = true;
            port.rr.push_back(c);
        }
    }
}

void port_tx_end(std::pair<Engine*, uint32_t>* ctx, Ptr<const Packet>)
{
    ctx->first->PortTxEnd(ctx->second);
}

void Engine::PortTxEnd(uint32_t p)
{
    if (!ports[p].rr.empty() && ports[p].dev->GetQueue()->GetNPackets() <= 4)
    {
        SchedulePump(p);
    }
}

bool Engine::OnReceive(Ptr<NetDevice> dev, Ptr<const Packet> p, uint16_t, const Address&)
{
    uint32_t node = dev->GetNode()->GetId() - node_base;
    MsgHeader h;
    p->PeekHeader(h);
    uint32_t m = h.flow;
    const Route& rt = routes[s.m_route[m]];
    if (h.type == 0)
    {
        if (node != s.m_dst[m])
        {
            Forward(node, rt.fwd, p->Copy(), 2 * (uint64_t)s.m_conn[m]);
            return true;
        }
        Msg& g = msgs[m];
        uint64_t n = p->GetSize() - 16;
        g.rcvd += n;
        g.frames_since_ack++;
        if (g.rcvd > s.m_bytes[m])
        {
            r.error = "message " + std::to_string(m) + " received more bytes than sent";
        }
        bool complete = g.rcvd == s.m_bytes[m];
        if (complete || g.frames_since_ack >= s.ack_every)
        {
            SendAck(m);
        }
        if (complete && !g.done)
        {
            MessageDone(m);
        }
        return true;
    }
    if (node != s.m_src[m])
    {
        Forward(node, rt.rev, p->Copy(), 2 * (uint64_t)s.m_conn[m] + 1);
        return true;
    }
    Msg& g = msgs[m];
    WConn& cn = wconns[s.m_conn[m]];
    if (h.value > g.acked)
    {
        cn.acked += h.value - g.acked;
        g.acked = h.value;
    }
    if (cn.blocked && cn.sent - cn.acked < s.window_bytes)
    {
        cn.blocked = false;
        if (!cn.in_rr && !cn.queue.empty())
        {
            cn.in_rr = true;
            ports[cn.port].rr.push_back(s.m_conn[m]);
        }
        SchedulePump(cn.port);
    }
    return true;
}

void Engine::Forward(uint32_t node, const std::vector<Hop>& hops, Ptr<Packet> p, uint64_t flow)
{
    for (const Hop& hop : hops)
    {
        if (hop.node == node)
        {
            if (s.arbitration == 1)
            {
                ArbiterEnqueue(hop.slot, flow, p);
            }
            else if (!hop.dev->Send(p, hop.dev->GetBroadcast(), 0x0800))
            {
                r.drops++;
            }
            return;
        }
    }
    r.error = "frame reached node " + std::to_string(node) + " which is not on its route";
}

// Round-robin switch output (arbitration 1). A frame goes straight to an idle device with
// nothing waiting; otherwise it waits in its flow's queue, and each time the device finishes
// a frame the next flow in turn sends one (ArbiterPump, scheduled at the same instant: ns-3
// fires PhyTxEnd inside the device's transmit-complete handler, where a Send would start a
// transmission the handler then clobbers).
void Engine::ArbiterEnqueue(uint32_t slot, uint64_t flow, Ptr<Packet> p)
{
    Arbiter& a = arbiters[slot];
    if (!a.traced)
    {
        a.traced = true;
        a.dev = slot % 2 == 0 ? dev_a[slot / 2] : dev_b[slot / 2];
        arbiter_ctx.emplace_back(this, slot);
        a.dev->TraceConnectWithoutContext("PhyTxEnd", MakeBoundCallback(&arbiter_tx_end, &arbiter_ctx.back()));
    }
    if (!a.busy && a.rr.empty())
    {
        a.busy = true;
        if (!a.dev->Send(p, a.dev->GetBroadcast(), 0x0800))
        {
            r.drops++;
        }
        return;
    }
    std::deque<Ptr<Packet>>& q = a.waiting[flow];
    if (q.empty())
    {
        a.rr.push_back(flow);
    }
    q.push_back(p);
}

void arbiter_tx_end(std::pair<Engine*, uint32_t>* ctx, Ptr<const Packet>)
{
    ctx->first->ArbiterTxEnd(ctx->second);
}

void Engine::ArbiterTxEnd(uint32_t slot)
{
    Arbiter& a = arbiters[slot];
    a.busy = false;
    if (!a.rr.empty() && !a.pump_scheduled)
    {
        a.pump_scheduled = true;
        Simulator::ScheduleNow(&Engine::ArbiterPump, this, slot);
    }
}

void Engine::ArbiterPump(uint32_t slot)
{
    Arbiter& a = arbiters[slot];
    a.pump_scheduled = false;
    if (a.busy || a.rr.empty())
    {
        return;
    }
    uint64_t flow = a.rr.front();
    a.rr.pop_front();
    auto it = a.waiting.find(flow);
    Ptr<Packet> p = it->second.front();
    it->second.pop_front();
    if (it->second.empty())
    {
        a.waiting.erase(it);
    }
    else
    {
        a.rr.push_back(flow);
    }
    a.busy = true;
    if (!a.dev->Send(p, a.dev->GetBroadcast(), 0x0800))
    {
        r.drops++;
    }
}

void Engine::SendAck(uint32_t m)
{
    Msg& g = msgs[m];
    g.frames_since_ack = 0;
    Ptr<Packet> pkt = Create<Packet>(48); // 64-byte ack frame with the header
    MsgHeader h;
    h.flow = m;
    h.type = 1;
    h.value = g.rcvd;
    pkt->AddHeader(h);
    r.ack_packets++;
    r.device_transmissions += routes[s.m_route[m]].rev.size();
    Ptr<PointToPointNetDevice> dev = routes[s.m_route[m]].rev[0].dev;
    if (!dev->Send(pkt, dev->GetBroadcast(), 0x0800))
    {
        r.drops++;
    }
}

// ---------------------------------------------------------------- tcp transport
void Engine::TcpSetup()
{
    // Socket and queue defaults must be set before any socket or queue disc exists.
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TypeId::LookupByName("ns3::TcpDctcp")));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(s.mtu - 20 - 32));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(s.tcp_buffer_bytes));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(s.tcp_buffer_bytes));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(s.tcp_min_rto_s)));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue("On"));
    Config::SetDefault("ns3::RedQueueDisc::UseEcn", BooleanValue(true));
    Config::SetDefault("ns3::RedQueueDisc::UseHardDrop", BooleanValue(false));
    Config::SetDefault("ns3::RedQueueDisc::MeanPktSize", UintegerValue(s.mtu));
    Config::SetDefault("ns3::RedQueueDisc::QW", DoubleValue(1.0)); // DCTCP: instantaneous queue
    Config::SetDefault("ns3::RedQueueDisc::MinTh", DoubleValue(s.tcp_red_k_packets));
    Config::SetDefault("ns3::RedQueueDisc::MaxTh", DoubleValue(s.tcp_red_k_packets));
    Config::SetDefault("ns3::RedQueueDisc::MaxSize", QueueSizeValue(QueueSize("4000p")));

    InternetStackHelper stack;
    stack.Install(nodes);
    TrafficControlHelper tch;
    tch.SetRootQueueDisc("ns3::RedQueueDisc");
    uint32_t nl = s.link_a.size();
    addr_a.resize(nl);
    addr_b.resize(nl);
    Ipv4AddressHelper ip;
    for (uint32_t l = 0; l < nl; ++l)
    {
        NetDeviceContainer d;
        d.Add(dev_a[l]);
        d.Add(dev_b[l]);
        tch.Install(d);
        uint32_t net = 0x0A000000u + (l << 2); // 10.x.y.z/30 per link
        ip.SetBase(Ipv4Address(net), Ipv4Mask("255.255.255.252"));
        Ipv4InterfaceContainer ifc = ip.Assign(d);
        addr_a[l] = ifc.GetAddress(0);
        addr_b[l] = ifc.GetAddress(1);
    }
    // Static host routes along each route (forward to the dst's address on its last
    // link, reverse to the src's address on its first link).
    Ipv4StaticRoutingHelper srh;
    std::set<std::pair<uint32_t, uint32_t>> installed;
    auto add_route = [&](uint32_t node, Ptr<PointToPointNetDevice> dev, Ipv4Address dst, Ipv4Address next) {
        if (!installed.insert({node, dst.Get()}).second)
        {
            return;
        }
        Ptr<Ipv4> ipv4 = nodes.Get(node)->GetObject<Ipv4>();
        int32_t ifi = ipv4->GetInterfaceForDevice(dev);
        srh.GetStaticRouting(ipv4)->AddHostRouteTo(dst, next, ifi);
    };
    uint32_t nr = s.route_off.size() - 1;
    for (uint32_t rt = 0; rt < nr; ++rt)
    {
        uint32_t k0 = s.route_off[rt], k1 = s.route_off[rt + 1];
        Ipv4Address dst = FarAddr(k1 - 1), src = NearAddr(k0);
        for (uint32_t k = k0; k < k1; ++k)
        {
            uint32_t i = k - k0;
            add_route(routes[rt].fwd[i].node, routes[rt].fwd[i].dev, dst, FarAddr(k));
            add_route(routes[rt].rev[k1 - 1 - k].node, routes[rt].rev[k1 - 1 - k].dev, src, NearAddr(k));
        }
    }
    // Sockets are opened once the simulation runs (nodes and their traffic-control
    // layers are initialised at start).
    Simulator::ScheduleNow(&Engine::TcpOpen, this);
}

void Engine::TcpOpen()
{
    // Connections.
    uint32_t nconn = 0;
    for (uint32_t c : s.m_conn)
    {
        nconn = std::max(nconn, c + 1);
    }
    conns.resize(nconn);
    std::vector<int64_t> conn_msg(nconn, -1);
    for (uint32_t m = 0; m < s.m_conn.size(); ++m)
    {
        if (conn_msg[s.m_conn[m]] < 0)
        {
            conn_msg[s.m_conn[m]] = m;
        }
    }
    for (uint32_t c = 0; c < nconn; ++c)
    {
        uint32_t m = conn_msg[c];
        uint32_t rt = s.m_route[m];
        uint32_t k0 = s.route_off[rt], k1 = s.route_off[rt + 1];
        uint16_t port = 1000 + c;
        Ptr<Socket> lsock = Socket::CreateSocket(nodes.Get(s.m_dst[m]), TcpSocketFactory::GetTypeId());
        lsock->Bind(InetSocketAddress(Ipv4Address::GetAny(), port));
        lsock->Listen();
        lsock->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                 MakeCallback(&Engine::TcpAccept, this));
        conn_of_port[port] = c;
        Ptr<Socket> tx = Socket::CreateSocket(nodes.Get(s.m_src[m]), TcpSocketFactory::GetTypeId());
        tx->Bind(InetSocketAddress(NearAddr(k0), 0));
        conns[c].tx = tx;
        conn_of_tx[PeekPointer(tx)] = c;
        tx->SetConnectCallback(MakeCallback(&Engine::TcpConnected, this), MakeCallback(&Engine::TcpConnectFailed, this));
        tx->SetSendCallback(MakeCallback(&Engine::TcpSendSpace, this));
        tx->Connect(InetSocketAddress(FarAddr(k1 - 1), port));
    }
    if (nconn == 0)
    {
        StartFirstCollectives();
    }
}

void Engine::TcpConnected(Ptr<Socket> sock)
{
    conns[conn_of_tx[PeekPointer(sock)]].connected = true;
    if (++connected == conns.size())
    {
        // Every connection is up: collective times are measured from here.
        r.t0_s = Simulator::Now().GetSeconds();
        StartFirstCollectives();
    }
}

void Engine::TcpConnectFailed(Ptr<Socket>)
{
    r.error = "a TCP connection failed to open";
}

void Engine::TcpAccept(Ptr<Socket> sock, const Address&)
{
    Address local;
    sock->GetSockName(local);
    uint16_t port = InetSocketAddress::ConvertFrom(local).GetPort();
    uint32_t c = conn_of_port[port];
    conns[c].rx = sock;
    conn_of_rx[PeekPointer(sock)] = c;
    sock->SetRecvCallback(MakeCallback(&Engine::TcpRecv, this));
}

void Engine::TcpStart(uint32_t m)
{
    uint32_t c = s.m_conn[m];
    Conn& cn = conns[c];
    if (cn.send_order.empty())
    {
        cn.front_left = s.m_bytes[m];
    }
    cn.send_order.push_back(m);
    cn.pending += s.m_bytes[m];
    if (s.m_bytes[m] == 0 && cn.send_order.size() == 1)
    {
        cn.send_order.pop_front();
        MessageDone(m);
        return;
    }
    TcpPush(c);
}

void Engine::TcpPush(uint32_t c)
{
    Conn& cn = conns[c];
    while (cn.pending > 0)
    {
        uint32_t avail = cn.tx->GetTxAvailable();
        if (avail == 0)
        {
            return;
        }
        uint32_t n = (uint32_t)std::min<uint64_t>({cn.pending, (uint64_t)avail, (uint64_t)1 << 20});
        int sent = cn.tx->Send(Create<Packet>(n));
        if (sent <= 0)
        {
            return;
        }
        cn.pending -= sent;
    }
}

void Engine::TcpSendSpace(Ptr<Socket> sock, uint32_t)
{
    TcpPush(conn_of_tx[PeekPointer(sock)]);
}

void Engine::TcpRecv(Ptr<Socket> sock)
{
    uint32_t c = conn_of_rx[PeekPointer(sock)];
    Conn& cn = conns[c];
    Ptr<Packet> p;
    while ((p = sock->Recv()))
    {
        uint64_t n = p->GetSize();
        while (n > 0)
        {
            if (cn.send_order.empty())
            {
                r.error = "TCP stream delivered bytes beyond its messages";
                return;
            }
            uint32_t m = cn.send_order.front();
            uint64_t take = std::min(n, cn.front_left);
            msgs[m].rcvd += take;
            cn.front_left -= take;
            n -= take;
            if (cn.front_left == 0)
            {
                cn.send_order.pop_front();
                MessageDone(m);
                // Skip zero-byte messages queued behind it.
                while (!cn.send_order.empty() && s.m_bytes[cn.send_order.front()] == 0)
                {
                    uint32_t z = cn.send_order.front();
                    cn.send_order.pop_front();
                    MessageDone(z);
                }
                if (!cn.send_order.empty())
                {
                    cn.front_left = s.m_bytes[cn.send_order.front()];
                }
            }
        }
    }
}

// Picosecond resolution, before the first simulation of this process. The cppyy path
// (worker.py) sets it right after importing ns-3; the compiled engine has no Python
// ns-3 import, so it is set here. Only once: a second SetResolution aborts in ns-3.
static void picosecond_resolution()
{
    if (Time::GetResolution() != Time::PS)
    {
        Time::SetResolution(Time::PS);
    }
}

// ns-3's own time conversions (fixed-point, not a plain division), so that exact reuse
// (artist/network/ns3/reuse.py) composes a timeline to the bit the engine would report.
double ps_to_seconds(int64_t ps)
{
    picosecond_resolution();
    return PicoSeconds(ps).GetSeconds();
}

int64_t seconds_to_ps(double seconds)
{
    picosecond_resolution();
    return Seconds(seconds).GetTimeStep();
}

Result run_spec(const Spec& spec)
{
    picosecond_resolution();
    // The event scheduler: every ns-3 scheduler orders events by (time, insertion order), so
    // the choice changes speed, never an answer (tests/test_ns3_reuse.py checks all five).
    static const char* const schedulers[] = {"ns3::MapScheduler", "ns3::ListScheduler", "ns3::HeapScheduler",
                                             "ns3::CalendarScheduler", "ns3::PriorityQueueScheduler"};
    if (spec.scheduler >= sizeof(schedulers) / sizeof(schedulers[0]))
    {
        Result bad;
        bad.error = "unknown scheduler " + std::to_string(spec.scheduler);
        return bad;
    }
    ObjectFactory factory;
    factory.SetTypeId(schedulers[spec.scheduler]);
    Simulator::SetScheduler(factory);
    Engine e(spec);
    return e.Run();
}

} // namespace artist_ns3
