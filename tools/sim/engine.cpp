#include "engine.hpp"
#include "decide.hpp"

#include "fiber.hpp"
#include "topology.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <map>
#include <unordered_map>
#include <stdexcept>
#include <string>
#include <sys/mman.h>

namespace loom::sim {
namespace {

// Buffers are addresses in a reserved region nobody may touch: 1 TiB of address space, no
// memory. Send buffers, receive buffers and scratch get a quarter each.
constexpr std::size_t kRegionBytes = std::size_t(1) << 40;
constexpr std::size_t kQuarter = kRegionBytes / 4;

std::byte* fake_region()
{
    static std::byte* const base = [] {
        void* p = mmap(nullptr, kRegionBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) throw std::runtime_error("loom-sim: cannot reserve address space for fake buffers");
        return static_cast<std::byte*>(p);
    }();
    return base;
}

void never_called(const void*, void*, std::size_t, void*)
{
    throw std::logic_error("loom-sim: an algorithm reduced data behind MemoryOps's back");
}

// What one rank posted, in program order. `delay` is the local work (copies, reductions)
// the rank did just before it.
struct Op {
    enum class Kind : unsigned char { send, recv, wait, end } kind;
    int peer;
    std::size_t bytes;
    double delay;
};

constexpr std::size_t kOpsPerBatch = 256; // a fiber runs ahead at most this many operations

struct RankState {
    std::vector<Op> ops;
    std::size_t next = 0;
    double local_delay = 0; // recorded local work not yet attached to an Op
    std::unique_ptr<Fiber> fiber;
    double clock = 0;
    double batch_done = 0; // latest completion among posted operations
    int pending = 0;       // posted operations not yet complete
    bool waiting = false, done = false;
    std::size_t messages = 0, bytes = 0;
    std::vector<std::uint32_t> unmatched_sends, unmatched_recvs; // messages to this rank
};

struct Message {
    int src, dst;
    std::size_t bytes;
    double send_post, recv_post, arrival;
    bool has_send, has_recv, start_scheduled, started;
};

// The agenda: pending events by time. An event resumes a rank (id >= 0) or starts a
// message's transfer (id < 0: message -id - 1). Events of equal time run in the order they
// were scheduled, so a run is deterministic. Symmetric algorithms schedule thousands of
// events for the same instant, so each distinct time holds a bucket: O(1) per event there,
// O(log distinct times) otherwise.
class Agenda {
public:
    void push(double time, std::int64_t id)
    {
        if (last_ == buckets_.end() || last_->first != time) {
            last_ = buckets_.try_emplace(time).first;
            if (last_->second.capacity() == 0 && !spare_.empty()) {
                last_->second.swap(spare_.back());
                spare_.pop_back();
            }
        }
        last_->second.push_back(id);
    }
    bool empty() const { return buckets_.empty(); }
    // Runs every event of the earliest time, including those scheduled for that same time
    // while it runs; fn(time, id).
    template <class F>
    void run_earliest(F&& fn)
    {
        const auto it = buckets_.begin();
        std::vector<std::int64_t>& ids = it->second;
        for (std::size_t i = 0; i < ids.size(); ++i) fn(it->first, ids[i]);
        if (last_ == it) last_ = buckets_.end();
        ids.clear();
        spare_.push_back(std::move(ids));
        buckets_.erase(it);
    }

private:
    std::map<double, std::vector<std::int64_t>> buckets_;
    std::map<double, std::vector<std::int64_t>>::iterator last_ = buckets_.end();
    std::vector<std::vector<std::int64_t>> spare_;
};

// A group of identical links (a switch's uplinks, one direction): each carries one message
// at a time; a message takes the one free earliest.
struct LinkGroup {
    std::vector<double> free_at;
    std::size_t earliest() const
    {
        return std::size_t(std::min_element(free_at.begin(), free_at.end()) - free_at.begin());
    }
};

class Engine;

class RecordingTransport final : public Transport {
public:
    RecordingTransport(RankState& state, int rank, int size, const topo::Layout& layout)
        : st_(state), rank_(rank), size_(size), layout_(layout)
    {}
    int rank() const override { return rank_; }
    // The simulated cluster's placement (blocks of ranks_per_node), for hierarchical
    // algorithms and ring order; no shared memory, so shm phases run their messaging fallback.
    const topo::Layout* layout() const override { return &layout_; }
    int size() const override { return size_; }
    void post_send(int peer, const void*, std::size_t bytes) override { push(Op::Kind::send, peer, bytes); }
    void post_recv(int peer, void*, std::size_t bytes) override { push(Op::Kind::recv, peer, bytes); }
    void wait_all() override { push(Op::Kind::wait, -1, 0); }

private:
    void push(Op::Kind kind, int peer, std::size_t bytes)
    {
        if (kind != Op::Kind::wait && (peer < 0 || peer >= size_))
            throw std::logic_error("rank " + std::to_string(rank_) + " posted to rank " + std::to_string(peer) +
                                   " of " + std::to_string(size_));
        st_.ops.push_back(Op{kind, peer, bytes, st_.local_delay});
        st_.local_delay = 0;
        if (st_.ops.size() >= kOpsPerBatch) Fiber::yield();
    }
    RankState& st_;
    int rank_, size_;
    const topo::Layout& layout_;
};

class RecordingMemory final : public MemoryOps {
public:
    RecordingMemory(RankState& state, double copy_per_byte, double reduce_per_byte)
        : st_(state), copy_(copy_per_byte), reduce_(reduce_per_byte)
    {}
    void copy(void*, const void*, std::size_t bytes) override { st_.local_delay += double(bytes) * copy_; }
    void reduce(const Reduction& op, const void*, void*, std::size_t count) override
    {
        st_.local_delay += double(count * op.elem_size) * reduce_;
    }
    Scratch scratch(std::size_t bytes) override
    {
        if (bytes > kQuarter) throw std::invalid_argument("loom-sim: scratch larger than the fake address space");
        return Scratch(fake_region() + 2 * kQuarter, [](std::byte*) {});
    }

private:
    RankState& st_;
    double copy_, reduce_;
};

class Engine {
public:
    Engine(const Model& model, const Scenario& s) : model_(model), s_(s)
    {
        if (s.algorithm == nullptr) throw std::invalid_argument("no algorithm");
        if (s.ranks < 1) throw std::invalid_argument("ranks must be >= 1");
        ppn_ = s.ranks_per_node > 0 ? s.ranks_per_node : std::max(1, model.ranks_per_node);
        nodes_ = (s.ranks + ppn_ - 1) / ppn_;
        const int on_node = std::min(ppn_, s.ranks);
        share_ =
            model.cores_per_node > 0 && on_node > model.cores_per_node ? double(on_node) / model.cores_per_node : 1.0;
        // One machine's cores shared by every node (an emulated cluster): all ranks compete.
        if (model.shared_cores > 0 && s.ranks > model.shared_cores)
            share_ = std::max(share_, double(s.ranks) / model.shared_cores);
        inter_eager_ = model.inter_eager_limit.value_or(model.eager_limit);
        wakeup_ = share_ > 1 ? model.oversubscribed_wakeup_s : 0.0;
        send_overhead_ = model.inter_send_overhead_s;
        recv_overhead_ = model.inter_recv_overhead_s;
        if (model.shared_cores > 0) cores_.assign(std::size_t(model.shared_cores), 0.0);
        if (s.root < 0 || s.root >= s.ranks) throw std::invalid_argument("root must be a rank of the communicator");
        std::vector<topo::Place> places(static_cast<std::size_t>(s.ranks));
        for (int r = 0; r < s.ranks; ++r) places[std::size_t(r)].node = r / ppn_;
        layout_ = std::make_unique<topo::Layout>(std::move(places));
        build_fat_tree();
        ranks_.resize(std::size_t(s.ranks));
        rank_out_.assign(std::size_t(s.ranks), 0.0);
        rank_in_.assign(std::size_t(s.ranks), 0.0);
        rank_rx_cpu_.assign(std::size_t(s.ranks), 0.0);
        node_out_.assign(std::size_t(nodes_), 0.0);
        node_in_.assign(std::size_t(nodes_), 0.0);
        bytes_by_level_.assign(std::size_t(levels_) + 1, 0.0);
    }

    Result run()
    {
        call_ = layout_call(s_, fake_region(), fake_region() + kQuarter);
        // A hierarchical algorithm runs the leaders' algorithm a job's chooser would give it.
        if (s_.algorithm->reads.leaders) {
            rules::CallFacts facts;
            facts.collective = s_.algorithm->collective;
            facts.bytes = call_.bytes;
            facts.ranks = s_.ranks;
            facts.nodes = nodes_;
            facts.ranks_per_node = std::min(ppn_, s_.ranks);
            facts.element_bytes = reduces(facts.collective) ? call_.call.op.elem_size : 0;
            facts.segment_size = call_.call.segment_bytes; // the segments hierarchical_seg runs
            facts.forced = s_.algorithm->name;
            facts.forced_algorithm = s_.algorithm;
            const auto tables = rules::resolved_for(facts.ranks, facts.nodes, facts.ranks_per_node);
            call_.call.leaders = rules::decide(facts, *tables).leaders;
        }
        if (call_.buffer_bytes > kQuarter)
            throw std::invalid_argument("message too large to simulate (over 256 GiB per buffer)");
        for (int r = 0; r < s_.ranks; ++r) {
            RankState& st = ranks_[std::size_t(r)];
            st.ops.reserve(kOpsPerBatch + 1);
            st.fiber = std::make_unique<Fiber>([this, r, &st] {
                RecordingTransport net(st, r, s_.ranks, *layout_);
                const double local = cores_.empty() ? share_ : 1.0; // shared cores: cpu_work queues it instead
                RecordingMemory mem(st, model_.copy_per_byte_s * local, model_.reduce_per_byte_s * local);
                run_call(*s_.algorithm, net, mem, call_.call);
                st.ops.push_back(Op{Op::Kind::end, -1, 0, st.local_delay});
            });
            agenda_.push(0.0, r);
        }
        while (!agenda_.empty())
            agenda_.run_earliest([this](double time, std::int64_t id) {
                now_ = time;
                if (id >= 0)
                    run_rank(int(id));
                else
                    start_transfer(std::uint32_t(-id - 1));
            });
        return finish();
    }

private:
    void build_fat_tree()
    {
        const long long R = model_.fat_tree_radix;
        levels_ = 1;
        if (R < 2 || nodes_ <= 1) return;
        long long span = R;
        while (span < nodes_) span *= R, ++levels_;
        // Uplink groups of levels 1 .. levels_-1 (the top switch has none).
        long long cover = 1;
        double taper = 1;
        for (int l = 1; l < levels_; ++l) {
            cover *= R;
            taper *= l - 1 < int(model_.taper.size()) ? model_.taper[std::size_t(l - 1)] : 1.0;
            const auto lanes = std::size_t(std::max(1.0, std::floor(double(cover) / taper)));
            const auto groups = std::size_t((nodes_ + cover - 1) / cover);
            up_.emplace_back(groups, LinkGroup{std::vector<double>(lanes, 0.0)});
            down_.emplace_back(groups, LinkGroup{std::vector<double>(lanes, 0.0)});
            cover_.push_back(cover);
        }
    }

    // Highest switch level between two nodes: 1 = the same leaf switch.
    int top_level(int a, int b) const
    {
        int level = 1;
        for (std::size_t l = 0; l < cover_.size() && a / cover_[l] != b / cover_[l]; ++l) ++level;
        return level;
    }

    void run_rank(int r)
    {
        RankState& st = ranks_[std::size_t(r)];
        st.clock = std::max(st.clock, now_);
        for (;;) {
            if (st.next == st.ops.size()) {
                st.ops.clear();
                st.next = 0;
                try {
                    st.fiber->resume();
                } catch (const std::exception& e) {
                    throw std::runtime_error("rank " + std::to_string(r) + ": " + e.what());
                }
                if (st.ops.empty()) throw std::logic_error("loom-sim: a rank stopped without finishing");
            }
            const Op op = st.ops[st.next++];
            // Local work (copies, reductions): with shared cores it waits for one of the machine's
            // cores and runs at a core's speed; otherwise it was scaled by the node's core share.
            st.clock = op.delay > 0 && !cores_.empty() ? cpu_work(st.clock, op.delay) : st.clock + op.delay;
            switch (op.kind) {
            case Op::Kind::send:
                if (send_overhead_ > 0 && !same_node(r, op.peer))
                    st.clock = cpu_work(st.clock, send_overhead_); // the send's system call
                ++st.pending;
                ++st.messages;
                st.bytes += op.bytes;
                post_send(r, op.peer, op.bytes, st.clock);
                break;
            case Op::Kind::recv:
                ++st.pending;
                post_recv(r, op.peer, op.bytes, st.clock);
                break;
            case Op::Kind::wait:
                if (st.pending > 0) {
                    st.waiting = true;
                    return;
                }
                st.clock = std::max(st.clock, st.batch_done);
                break;
            case Op::Kind::end:
                if (st.pending > 0)
                    throw std::runtime_error("rank " + std::to_string(r) + " returned with operations not waited for");
                st.done = true;
                finish_time_ = std::max(finish_time_, st.clock);
                st.fiber.reset(); // its stack and whatever the algorithm held
                st.ops = {};
                return;
            }
        }
    }

    void complete(int r, double t)
    {
        RankState& st = ranks_[std::size_t(r)];
        st.batch_done = std::max(st.batch_done, t);
        if (--st.pending == 0 && st.waiting) {
            st.waiting = false;
            st.batch_done += wakeup_; // a rank that blocked gave its core away: it waits to be scheduled again
            agenda_.push(st.batch_done, r);
        }
    }

    std::uint32_t new_message(int src, int dst, std::size_t bytes)
    {
        std::uint32_t id;
        if (!free_ids_.empty()) {
            id = free_ids_.back();
            free_ids_.pop_back();
        } else {
            id = std::uint32_t(messages_.size());
            messages_.emplace_back();
        }
        messages_[id] = Message{src, dst, bytes, 0, 0, 0, false, false, false, false};
        ++live_;
        return id;
    }

    void release(std::uint32_t id)
    {
        free_ids_.push_back(id);
        --live_;
    }

    // The first unmatched message from `src` in `list` (MPI's per-sender posting order).
    std::uint32_t take(std::vector<std::uint32_t>& list, int src)
    {
        for (auto it = list.begin(); it != list.end(); ++it)
            if (messages_[*it].src == src) {
                const std::uint32_t id = *it;
                list.erase(it);
                return id;
            }
        return std::uint32_t(-1);
    }

    void check_sizes(const Message& m, std::size_t recv_bytes)
    {
        if (m.bytes != recv_bytes)
            throw std::runtime_error("rank " + std::to_string(m.src) + " sends " + std::to_string(m.bytes) +
                                     " bytes to rank " + std::to_string(m.dst) + ", which receives " +
                                     std::to_string(recv_bytes));
    }

    void post_send(int src, int dst, std::size_t bytes, double t)
    {
        RankState& d = ranks_[std::size_t(dst)];
        std::uint32_t id = take(d.unmatched_recvs, src);
        if (id != std::uint32_t(-1)) {
            Message& m = messages_[id];
            check_sizes(m, bytes);
            m.bytes = bytes;
            m.has_send = true;
            m.send_post = t;
            schedule_start(id, matched_start(m));
            return;
        }
        id = new_message(src, dst, bytes);
        Message& m = messages_[id];
        m.has_send = true;
        m.send_post = t;
        d.unmatched_sends.push_back(id);
        if (eager(m)) schedule_start(id, t);
    }

    void post_recv(int dst, int src, std::size_t bytes, double t)
    {
        RankState& d = ranks_[std::size_t(dst)];
        std::uint32_t id = take(d.unmatched_sends, src);
        if (id != std::uint32_t(-1)) {
            Message& m = messages_[id];
            check_sizes(m, bytes);
            m.has_recv = true;
            m.recv_post = t;
            if (m.started) {
                complete(dst, received(m, t));
                release(id);
            } else if (!m.start_scheduled) {
                schedule_start(id, matched_start(m));
            }
            return;
        }
        id = new_message(src, dst, bytes);
        Message& m = messages_[id];
        m.has_recv = true;
        m.recv_post = t;
        d.unmatched_recvs.push_back(id);
    }

    bool same_node(int a, int b) const { return a / ppn_ == b / ppn_; }
    std::uint64_t pair_key(int src, int dst) const { return std::uint64_t(src) * std::uint64_t(s_.ranks) + std::uint64_t(dst); }
    bool eager(const Message& m) const
    {
        return m.bytes <= (same_node(m.src, m.dst) ? model_.eager_limit : inter_eager_);
    }
    // The one-way latency of a message between two ranks: inside a node scaled by the core share;
    // between nodes plus the extra switch hops, and scaled by the share when the cores are shared
    // by all nodes (a TCP message's system calls and wake-ups are CPU work).
    double latency(int src, int dst) const
    {
        if (same_node(src, dst)) return model_.intra.latency_s * share_;
        return model_.inter.latency_s * (model_.shared_cores > 0 ? share_ : 1.0) +
               2.0 * (top_level(src / ppn_, dst / ppn_) - 1) * model_.hop_latency_s;
    }
    // When a message whose send and receive are both posted starts moving. A rendezvous message
    // with rendezvous_handshakes = h: the sender's request reaches the receiver h latencies after
    // the send, and the receiver's answer needs h latencies more once its receive is posted.
    double matched_start(const Message& m) const
    {
        const double both = std::max(m.send_post, m.recv_post);
        if (eager(m) || model_.rendezvous_handshakes == 0) return both;
        const double h = model_.rendezvous_handshakes * latency(m.src, m.dst);
        return std::max(m.send_post + h, m.recv_post) + h;
    }

    void schedule_start(std::uint32_t id, double ready)
    {
        messages_[id].start_scheduled = true;
        if (ready <= now_)
            start_transfer(id);
        else
            agenda_.push(ready, -std::int64_t(id) - 1);
    }

    // When the receiver has a message whose receive was posted at recv_post: between nodes it
    // handles the arrived message for recv_overhead_, one message at a time.
    double received(const Message& m, double recv_post)
    {
        if (recv_overhead_ <= 0 || same_node(m.src, m.dst)) return std::max(m.arrival, recv_post);
        double& cpu = rank_rx_cpu_[std::size_t(m.dst)];
        cpu = cpu_work(std::max({m.arrival, recv_post, cpu}), recv_overhead_);
        return cpu;
    }

    // A rank's CPU work of `work` seconds that can start at `ready`: when it is done. With shared
    // cores it takes the machine's core that is free first (all nodes' ranks compete for them, so
    // messages sent at once by more ranks than cores queue, while a lone message does not wait);
    // otherwise the rank has its own core. Reservations are made in the order ranks post, which
    // can run ahead of virtual time by a rank's local work: an approximation, like the links'.
    double cpu_work(double ready, double work)
    {
        if (cores_.empty()) return ready + work;
        const auto core = std::min_element(cores_.begin(), cores_.end());
        *core = std::max(ready, *core) + work;
        return *core;
    }

    // The transfer starts when its ports (and fat-tree links) are free, and holds them for
    // bytes x per-byte time; the data arrives one latency later.
    void start_transfer(std::uint32_t id)
    {
        Message& m = messages_[id];
        const double ready = std::max(now_, m.has_recv ? matched_start(m) : m.send_post);
        const int ns = m.src / ppn_, nd = m.dst / ppn_;
        // Between nodes the sender's and receiver's overheads are part of the latency, but are
        // charged to their CPUs (cpu_work): in flight is the rest, scaled like the latency.
        const double lat =
            latency(m.src, m.dst) -
            (ns == nd ? 0.0 : (send_overhead_ + recv_overhead_) * (model_.shared_cores > 0 ? share_ : 1.0));
        double start = ready, per_byte;
        int level = 0;
        double* holds[2 + 2 * 8];
        int n_holds = 0;
        if (ns == nd) {
            holds[n_holds++] = &rank_out_[std::size_t(m.src)];
            holds[n_holds++] = &rank_in_[std::size_t(m.dst)];
            if (cores_.empty()) {
                per_byte = model_.intra.per_byte_s * share_;
            } else { // shared cores: the copy through shared memory is CPU work on one of the machine's cores
                per_byte = model_.intra.per_byte_s;
                holds[n_holds++] = &*std::min_element(cores_.begin(), cores_.end());
            }
        } else {
            level = top_level(ns, nd);
            per_byte = model_.inter.per_byte_s;
            // One machine's TCP (shared cores): every transfer between nodes, in either direction,
            // holds the machine's TCP capacity while it moves at the CPU's rate.
            if (model_.shared_cores > 0 && model_.inter_cpu_per_byte_s > 0) {
                per_byte = std::max(per_byte, model_.inter_cpu_per_byte_s);
                holds[n_holds++] = &machine_tcp_;
            }
            holds[n_holds++] = &node_out_[std::size_t(ns)];
            holds[n_holds++] = &node_in_[std::size_t(nd)];
            for (int l = 1; l < level && n_holds + 2 <= int(std::size(holds)); ++l) {
                LinkGroup& up = up_[std::size_t(l - 1)][std::size_t(ns / cover_[std::size_t(l - 1)])];
                LinkGroup& down = down_[std::size_t(l - 1)][std::size_t(nd / cover_[std::size_t(l - 1)])];
                holds[n_holds++] = &up.free_at[up.earliest()];
                holds[n_holds++] = &down.free_at[down.earliest()];
            }
        }
        for (int i = 0; i < n_holds; ++i) start = std::max(start, *holds[i]);
        // One connection's two directions (model.hpp): a rendezvous message between nodes that
        // starts while the same two ranks' rendezvous message moves the other way is slower.
        const bool two_way = ns != nd && model_.inter_exchange_per_byte_s > 0 && !eager(m);
        double duration = double(m.bytes) * per_byte;
        if (two_way && m.bytes > model_.inter_exchange_after) {
            const auto back = pair_moving_.find(pair_key(m.dst, m.src));
            if (back != pair_moving_.end() && back->second > start)
                duration = double(model_.inter_exchange_after) * per_byte +
                           double(m.bytes - model_.inter_exchange_after) * std::max(per_byte, model_.inter_exchange_per_byte_s);
        }
        const double sent = start + duration;
        if (two_way) {
            double& moving = pair_moving_[pair_key(m.src, m.dst)];
            moving = std::max(moving, sent);
        }
        for (int i = 0; i < n_holds; ++i) *holds[i] = sent;
        bytes_by_level_[std::size_t(level)] += double(m.bytes);
        m.started = true;
        m.arrival = sent + lat;
        complete(m.src, sent);
        if (m.has_recv) {
            complete(m.dst, received(m, m.recv_post));
            release(id);
        }
    }

    Result finish()
    {
        for (int r = 0; r < s_.ranks; ++r) {
            const RankState& st = ranks_[std::size_t(r)];
            if (!st.done)
                throw std::runtime_error("deadlock: rank " + std::to_string(r) + " waits for " +
                                         std::to_string(st.pending) + " operations that never complete");
        }
        if (live_ != 0) throw std::runtime_error(std::to_string(live_) + " messages were never matched");
        Result res;
        res.seconds = finish_time_;
        res.bytes = call_.bytes;
        res.nodes = nodes_;
        res.levels = levels_;
        res.bytes_by_level = bytes_by_level_;
        double msgs = 0, bytes = 0;
        for (const RankState& st : ranks_) {
            res.messages_max = std::max(res.messages_max, st.messages);
            res.bytes_sent_max = std::max(res.bytes_sent_max, st.bytes);
            msgs += double(st.messages);
            bytes += double(st.bytes);
            res.total_messages += st.messages;
        }
        res.messages_mean = msgs / s_.ranks;
        res.bytes_sent_mean = bytes / s_.ranks;
        return res;
    }

    const Model& model_;
    Scenario s_;
    CallLayout call_;
    int ppn_ = 1, nodes_ = 1, levels_ = 1;
    double share_ = 1;
    std::size_t inter_eager_ = std::size_t(-1);
    double wakeup_ = 0; // model.oversubscribed_wakeup_s when ranks outnumber cores
    double send_overhead_ = 0, recv_overhead_ = 0; // per inter-node message
    std::vector<double> cores_; // shared cores: when each of the machine's cores is free
    std::vector<double> rank_rx_cpu_; // when each rank has handled the inter-node messages it received
    double machine_tcp_ = 0; // shared cores: when the machine's TCP capacity is free again
    // inter_exchange_per_byte_s: until when a rendezvous message between nodes moves, per (src, dst)
    std::unordered_map<std::uint64_t, double> pair_moving_;
    std::unique_ptr<topo::Layout> layout_;
    std::vector<RankState> ranks_;
    std::vector<double> rank_out_, rank_in_, node_out_, node_in_;
    std::vector<std::vector<LinkGroup>> up_, down_; // [level-1][group]
    std::vector<long long> cover_;                  // [level-1]: nodes under one level-l switch
    std::vector<double> bytes_by_level_;
    std::vector<Message> messages_;
    std::vector<std::uint32_t> free_ids_;
    std::size_t live_ = 0;
    Agenda agenda_;
    double now_ = 0, finish_time_ = 0;
};

} // namespace

namespace {

// How loom-sim lays out a call of each layout (collectives.def) of s.bytes: its counts, in units of
// `unit` bytes, and the bytes it covers. One record per layout, in Layout's order.
struct SimLayout {
    Layout layout;
    void (*lay_out)(CallLayout& c, const Scenario& s, std::size_t unit);
    bool buffer_per_rank; // each rank's buffer holds a message for every rank (alltoall)
};

void one_vector(CallLayout& c, const Scenario& s, std::size_t unit)
{
    c.call.count = s.bytes / unit;
    c.bytes = c.call.count * unit;
}

void blocks(CallLayout& c, const Scenario& s, std::size_t unit)
{
    const auto P = std::size_t(s.ranks);
    if (per_rank_counts(s.algorithm->collective)) { // nearly equal blocks, the whole message
        const BlockPartition split(s.bytes / unit, s.ranks);
        for (int r = 0; r < s.ranks; ++r) c.counts.push_back(split.length(r));
        c.bytes = s.bytes / unit * unit;
    } else {
        c.counts.assign(P, s.bytes / (P * unit));
        c.bytes = c.counts[0] * P * unit;
    }
}

void blocks_to_and_from(CallLayout& c, const Scenario& s, std::size_t) // equal blocks of s.bytes / P
{
    const auto P = std::size_t(s.ranks);
    c.counts.assign(2 * P, s.bytes / P);
    c.bytes = s.bytes / P * P;
}

void no_data(CallLayout& c, const Scenario&, std::size_t) { c.bytes = 0; }

// The neighbourhood collectives need a process topology, which a Scenario does not describe
// yet: loom-sim cannot lay out their calls.
void no_neighbourhood(CallLayout&, const Scenario&, std::size_t)
{
    throw std::invalid_argument("loom-sim does not model the neighbourhood collectives (no process topology)");
}

constexpr std::array<SimLayout, kLayoutCount> kSimLayouts = {{
    {Layout::vector, one_vector, false},
    {Layout::split, blocks, false},
    {Layout::gathered, blocks, false},
    {Layout::per_peer, one_vector, true},
    {Layout::scattered, blocks, false},
    {Layout::per_peer_v, blocks_to_and_from, false},
    {Layout::none, no_data, false},
    {Layout::neighbour_gathered, no_neighbourhood, false},
    {Layout::per_neighbour, no_neighbourhood, false},
}};

constexpr bool in_layout_order()
{
    for (std::size_t i = 0; i < kSimLayouts.size(); ++i)
        if (int(kSimLayouts[i].layout) != int(i) || kSimLayouts[i].lay_out == nullptr) return false;
    return true;
}
static_assert(in_layout_order(), "kSimLayouts: one record per layout, in Layout's order");

} // namespace

CallLayout layout_call(const Scenario& s, const void* sendbuf, void* recvbuf)
{
    if (s.algorithm == nullptr || s.ranks < 1) throw std::invalid_argument("no algorithm, or no ranks");
    CallLayout c;
    const std::size_t e = std::max<std::size_t>(1, s.elem_size);
    loom_call_t& call = c.call;
    call.coll = loom_coll_t(s.algorithm->collective);
    call.sbuf = sendbuf;
    call.rbuf = recvbuf;
    call.root = s.root;
    call.segment_bytes = s.segment_bytes;
    call.buffer_bytes = s.buffer_bytes;
    call.op = loom_reduction_t{e, 1, &never_called, nullptr, nullptr};
    // By the collective's layout (collectives.def), in units of e bytes for a reduction.
    const Collective coll = s.algorithm->collective;
    const SimLayout& l = kSimLayouts[std::size_t(layout(coll))];
    l.lay_out(c, s, reduces(coll) ? e : 1);
    c.buffer_bytes = l.buffer_per_rank ? s.bytes * std::size_t(s.ranks) : s.bytes;
    call.counts = c.counts.empty() ? nullptr : c.counts.data();
    return c;
}

Result simulate(const Model& model, const Scenario& scenario)
{
    Engine engine(model, scenario);
    return engine.run();
}

} // namespace loom::sim
