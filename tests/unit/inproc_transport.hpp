// An in-process Transport for unit tests: P ranks run as P threads of one process and
// exchange messages through shared queues, with MPI's matching rules (per sender, in posting
// order). It is deliberately strict, so a schedule that passes here is safe on a real PML:
//   * sends are synchronous: wait_all() returns only after every posted send was received,
//     the semantics of MPI_Ssend, so a schedule that relies on eager buffering deadlocks;
//   * a send buffer changed between post and wait_all() is an error, and a receive buffer
//     is filled with garbage when the receive is posted and gets its data only in
//     wait_all(), so reading it early shows up as wrong data;
//   * a size mismatch between a send and its receive is an error (MPI would truncate);
//   * a deadlock (no rank can progress) is detected and reported instead of hanging;
//   * messages left unreceived at the end of a run are reported.
#pragma once

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

class InprocTransport final : public Transport {
public:
    InprocTransport(InprocFabric& fabric, int rank) : fabric_(fabric), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override;
    void post_send(int peer, const void* buf, std::size_t bytes) override;
    void post_recv(int peer, void* buf, std::size_t bytes) override;
    void wait_all() override;

    std::size_t messages_sent() const { return messages_sent_; }
    std::size_t bytes_sent() const { return bytes_sent_; }
    std::size_t waits() const { return waits_; }

private:
    struct Pending {
        int peer;
        void* buf;
        std::size_t bytes;
        std::vector<std::byte> posted; // sends: the data when posted
    };
    InprocFabric& fabric_;
    int rank_;
    std::vector<Pending> sends_, recvs_;
    std::size_t messages_sent_ = 0, bytes_sent_ = 0, waits_ = 0;
};

// Runs body(transport) on `ranks` threads and rethrows the first failure. Throws if a
// deadlock was detected or messages were left unreceived.
struct RunStats {
    std::vector<std::size_t> messages_sent, bytes_sent, waits;
};
RunStats run_ranks(int ranks, const std::function<void(InprocTransport&)>& body);

} // namespace loom::test
