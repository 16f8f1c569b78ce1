// Turns on a communicator's shared segment (the shm and cma families).
//
// The calls that use the segment run one at a time, in the order their MPI calls were made,
// which is the same on every rank (MPI's rule for collectives on a communicator), so every
// rank goes through the same phases. A blocking call takes its turn when it runs; a
// non-blocking one when its MPI call is made (it may run later, interleaved with other calls,
// completed in any order). A call waits until serving reaches its turn, progressing MPI (a
// resumable operation yields), and ends it when done.
//
// The turns belong to the communicator, not to the segment: a non-blocking call's set-up of
// the segment (shm_begin_setup, shm.hpp) takes the first turn before the segment exists, and
// the calls decided meanwhile take the next ones; each finds out at its turn whether the
// set-up succeeded.
//
// Turns are taken by the thread making the communicator's collective calls; end may run on
// another (Open MPI's progress engine), hence the atomic.
#pragma once

#include "transport.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace loom {

class ShmTurns {
public:
    std::uint64_t take() { return turns_++; }
    bool is_turn(std::uint64_t turn) const
    {
        return std::atomic_ref<const std::uint64_t>(serving_).load(std::memory_order_acquire) == turn;
    }
    // Only the turn's holder writes serving now (an abandoned turn is never held, so nobody
    // skips one meanwhile): a plain release store, no locked add, on every call's path.
    void end()
    {
        std::atomic_ref<std::uint64_t> serving(serving_);
        serving.store(serving.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
    // Waits until `turn` comes, calling net.progress() meanwhile. Inline where it has come
    // (every blocking call that runs alone): one load.
    void wait_for(std::uint64_t turn, Transport& net)
    {
        if (!is_turn(turn)) wait_slowly(turn, net);
    }
    // A turn taken for a call that will never run (its operation could not be made): it
    // ends at once if it has come, else when the next turn's call waits for it.
    void abandon(std::uint64_t turn);

private:
    std::uint64_t turns_ = 0;
    alignas(64) std::uint64_t serving_ = 0;
    std::mutex abandoned_lock_; // abandoned_ is rare: end reads abandoned_count_ alone
    std::vector<std::uint64_t> abandoned_;
    std::size_t abandoned_count_ = 0;
    void skip_abandoned(); // with abandoned_lock_ held
    void wait_slowly(std::uint64_t turn, Transport& net);
};

} // namespace loom
