// An in-process Transport: P ranks run as P threads of one process and exchange messages
// through shared queues, with MPI's matching rules (per sender, in posting order). The unit
// tests run every algorithm on it, and tools/loom-schedule uses it to record what an
// algorithm sends. It is not part of the plugin. It is deliberately strict, so a schedule
// that passes here is safe on a real PML:
//   * sends are synchronous: wait_all() returns only after every posted send was received,
//     the semantics of MPI_Ssend, so a schedule that relies on eager buffering deadlocks;
//   * a send buffer changed between post and wait_all() is an error, and a receive buffer
//     is filled with garbage when the receive is posted and gets its data only in
//     wait_all(), so reading it early shows up as wrong data;
//   * a size mismatch between a send and its receive is an error (MPI would truncate);
//   * a deadlock (no rank can progress) is detected and reported instead of hanging;
//   * messages left unreceived at the end of a run are reported.
#pragma once

#include "rank_checks.hpp"
#include "transport.hpp"

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loom::test {

class InprocFabric;
struct InprocMessage;

class InprocTransport final : public Transport {
public:
    InprocTransport(InprocFabric& fabric, int rank) : fabric_(fabric), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override;
    void post_send(int peer, const void* buf, std::size_t bytes) override;
    void post_recv(int peer, void* buf, std::size_t bytes) override;
    void wait_all() override;
    // Never blocks; a rank that finds its batch not yet done yields its thread. -1 after
    // set_testable(false): the tests run segmented algorithms on a transport like loom-sim's.
    int test_all() override;
    void set_testable(bool on) { testable_ = on; }
    // Per-rank state kept for the shared-memory family, released with the transport.
    void** shared_state() override { return &shared_state_; }
    void progress() override;
    // Tests give the ranks a synthetic topology (topology/topology.hpp); none by default.
    void set_layout(const topo::Layout* layout) { layout_ = layout; }
    const topo::Layout* layout() const override { return layout_; }
    void** node_shared_state() override { return layout_ != nullptr ? &node_shared_state_ : nullptr; }
    ~InprocTransport() override;

    std::size_t messages_sent() const { return messages_sent_; }
    std::size_t bytes_sent() const { return bytes_sent_; }
    std::size_t waits() const { return waits_; }

    // One message as the sender posted it, for tools that print schedules.
    struct SentMessage {
        std::size_t step; // index of the wait_all() that completed it (0-based)
        int peer;
        std::size_t bytes;
    };
    void record_messages(bool on) { recording_ = on; }
    const std::vector<SentMessage>& sent_messages() const { return sent_log_; }

private:
    struct Pending {
        int peer;
        void* buf;
        std::size_t bytes;
        std::vector<std::byte> posted; // sends: the data when posted
    };
    void push_sends();
    bool complete_arrived();
    InprocFabric& fabric_;
    int rank_;
    std::vector<Pending> sends_, recvs_;
    std::vector<std::shared_ptr<InprocMessage>> in_flight_; // the batch's sends, handed on
    std::size_t next_recv_ = 0;                             // the batch's receives completed
    bool testable_ = true;
    std::size_t messages_sent_ = 0, bytes_sent_ = 0, waits_ = 0;
    bool recording_ = false;
    void* shared_state_ = nullptr;
    void* node_shared_state_ = nullptr;
    const topo::Layout* layout_ = nullptr;
    std::vector<SentMessage> sent_log_;
};

// MemoryOps on the host that measures scratch memory: the bytes outstanding now and the
// peak over its lifetime. One per rank (not shared between threads).
class CountingMemory final : public MemoryOps {
public:
    void copy(void* dst, const void* src, std::size_t bytes) override { host_.copy(dst, src, bytes); }
    void reduce(const Reduction& op, const void* in, void* inout, std::size_t count) override
    {
        host_.reduce(op, in, inout, count);
    }
    void reduce_into(const Reduction& op, const void* in, const void* in2, void* out, std::size_t count) override
    {
        host_.reduce_into(op, in, in2, out, count);
    }
    Scratch scratch(std::size_t bytes) override;
    std::size_t outstanding() const { return outstanding_; }
    std::size_t peak() const { return peak_; }

private:
    HostMemory host_;
    std::size_t outstanding_ = 0, peak_ = 0;
};

// Runs body(transport) on `ranks` threads and rethrows the first failure. Throws if a
// deadlock was detected or messages were left unreceived, and a RankCheckFailure if a rank
// recorded a failed check (rank_checks.hpp). The body must not use Catch2's assertions: it
// runs on the rank's thread.
struct RunStats {
    std::vector<std::size_t> messages_sent, bytes_sent, waits;
};
RunStats run_ranks(int ranks, const std::function<void(InprocTransport&)>& body);
// Messages every rank of a run sent, together.
inline std::size_t total_messages(const RunStats& stats)
{
    std::size_t n = 0;
    for (std::size_t m : stats.messages_sent) n += m;
    return n;
}

} // namespace loom::test
