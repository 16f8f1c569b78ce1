// loom-sim's cost model: what a message, a reduction and a copy cost on a described cluster.
//
// The cluster: `nodes` nodes of `ranks_per_node` ranks each (ranks placed in blocks: rank r
// on node r / ranks_per_node), optionally joined by a fat tree. Costs (per message: latency
// a; per byte: transfer b, reduction g, local copy c):
//   * inside a node: a_intra + m b_intra; each rank sends and receives one message at a time
//     (its own port), and when a node has more ranks than cores, every intra-node and local
//     cost is scaled by ranks_per_node / cores_per_node (the cores are shared);
//   * between nodes: a_inter + 2 (L-1) hop + m b_inter, where L is the highest switch level the
//     message climbs; each node's network port sends one message and receives one message
//     at a time (contention per node port);
//   * fat tree (radix R > 0): a level-l switch joins R^l nodes; its uplinks are
//     max(1, R^l / (taper_1 x ... x taper_l)) links of bandwidth 1 / b_inter, each carrying
//     one message at a time (up and down separately). taper_l = 1 is a full-bisection level,
//     2 a 2:1 oversubscribed one. Traffic that crosses higher levels therefore competes for
//     fewer links, which is why far-first-small (PAT) beats near-first-small (Bruck).
//   * rendezvous: a message above eager_limit bytes (inter_eager_limit between nodes, if set)
//     starts moving only once its receive is posted; smaller ones leave when sent. With
//     rendezvous_handshakes = h > 0 it starts at max(send + h a, receive) + h a (a: the pair's
//     latency): the sender's request has to arrive and the receiver's answer to come back.
//   * shared cores (an emulated cluster on one machine, tools/emucluster): with shared_cores
//     = C > 0, every node's ranks share the same C cores. CPU work (local copies and reductions,
//     the copy of an intra-node transfer, the per-message overheads below) runs at a core's
//     speed on whichever of the C cores is free first, so it queues only when more ranks work at
//     once than there are cores. With P > C ranks in all, the latencies (waiting for a peer that
//     must be scheduled, and the inter-node latency less its overheads) are scaled by P / C.
//     With inter_cpu_per_byte > 0 as well, the machine moves only so many bytes per second
//     through TCP whatever the links: every inter-node transfer costs max(b_inter,
//     inter_cpu_per_byte) per byte and holds the machine's one TCP "lane" while it moves, so
//     transfers between any nodes, in either direction, take turns (TCP over unlimited veths is
//     CPU-bound: a ping-pong stream already keeps both cores
//     of this machine busy). Meant for links faster than the CPU; with a slow link, leave it 0.
//   * one connection's two directions (ob1's TCP BTL): with inter_exchange_per_byte > 0, a
//     rendezvous message between two ranks on different nodes that starts while a rendezvous
//     message of the same two ranks moves the other way moves its first inter_exchange_after
//     bytes at the usual rate and the rest at max(b_inter, inter_exchange_per_byte) per byte.
//     Two ranks exchanging big messages share one TCP connection; measured on tools/emucluster
//     behind a 1 Gbit/s limit, each direction of a 1-4 MiB exchange gets 0.08 GB/s instead of
//     0.12 (256 KiB: 0.11; 64 KiB: no loss), while two ranks that send to and receive from
//     different peers (a ring) get the link's rate. Only the later of the two starts pays (the
//     earlier is already under way): the exchange as a whole ends when the slower one does,
//     which is what the measurement sees.
//   * oversubscribed wake-up: when ranks outnumber cores (either rule above), a rank whose
//     wait_all() had to block (an operation was still pending) resumes oversubscribed_wakeup
//     after its last operation completed: it yielded its core (mpi_yield_when_idle) and must be
//     scheduled again. Not scaled: it is the scheduler's, not the rank's, work.
//   * per-message CPU overhead between nodes (LogP's o): of the inter-node latency a, the sender
//     spends o_s of its own time posting each inter-node message (a TCP send's system call: the
//     rank can post nothing else meanwhile) and the receiver o_r handling each one that arrives
//     (one at a time); the message flies a - o_s - o_r. A ping-pong still takes a per message, but
//     a rank that sends or receives k messages at once pays k o instead of overlapping them. Both
//     are CPU work: with shared cores they queue for the machine's cores (above), otherwise each
//     rank has its own core.
// The model file format is documented in tools/sim/README.md; format_model() writes it.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loom::sim {

struct LinkCost {
    double latency_s = 0;  // a
    double per_byte_s = 0; // b (1 / bandwidth)
};

struct Model {
    std::string name = "unnamed";
    std::string description;
    int ranks_per_node = 1; // the default for --ppn
    int cores_per_node = 0; // 0: as many cores as ranks
    int shared_cores = 0;   // > 0: all nodes' ranks share this many cores (one machine emulating a cluster)
    LinkCost intra, inter;
    double reduce_per_byte_s = 0; // g, per byte of the reduced vector
    double copy_per_byte_s = 0;   // c, local memory copies
    std::size_t eager_limit = std::size_t(-1);
    std::optional<std::size_t> inter_eager_limit; // between nodes; unset: eager_limit
    double inter_cpu_per_byte_s = 0; // shared cores: the machine's TCP capacity, s per byte (0: none)
    double inter_exchange_per_byte_s = 0; // a rendezvous message against one of the same pair the other way (0: none)
    std::size_t inter_exchange_after = 0;  // ... after its first this many bytes
    int rendezvous_handshakes = 0;      // rendezvous: request + answer cost this many latencies each
    double oversubscribed_wakeup_s = 0; // ranks outnumber cores: a rank whose wait had to block resumes this late
    double inter_send_overhead_s = 0;   // of inter.latency_s: the sender's CPU time per inter-node message
    double inter_recv_overhead_s = 0;   // of inter.latency_s: the receiver's CPU time per inter-node message
    int fat_tree_radix = 0;    // 0: no fat tree (every pair of nodes one hop apart)
    std::vector<double> taper; // taper[l-1]: oversubscription of level-l switches' uplinks
    double hop_latency_s = 0;  // per switch hop above the first, each way
    std::string source;        // the file it came from, for messages
};

// A model file's error: "FILE:LINE: problem".
class ModelError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

Model parse_model(std::string_view text, const std::string& source);
Model load_model(const std::string& path);    // throws ModelError (also when unreadable)
std::string format_model(const Model& model); // parse_model(format_model(m)) == m

// A flat model: every rank its own node, no fat tree, no contention beyond the node ports;
// what the textbook costs assume.
Model flat_model(double latency_s, double per_byte_s, double reduce_per_byte_s);

} // namespace loom::sim
