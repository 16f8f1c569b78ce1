#include "shm_turns.hpp"

namespace loom {

void ShmTurns::wait_slowly(std::uint64_t turn, Transport& net)
{
    while (!is_turn(turn)) {
        // The turn before may have been abandoned after its holder-to-be gave up: a waiter
        // skips it (end does not look, to stay one store).
        if (std::atomic_ref<std::size_t>(abandoned_count_).load(std::memory_order_acquire) != 0) {
            const std::lock_guard<std::mutex> hold(abandoned_lock_);
            skip_abandoned();
            if (is_turn(turn)) break;
        }
        net.progress(); // earlier calls run meanwhile (Open MPI's progress)
    }
}

void ShmTurns::abandon(std::uint64_t turn)
{
    const std::lock_guard<std::mutex> hold(abandoned_lock_);
    abandoned_.push_back(turn);
    std::atomic_ref<std::size_t>(abandoned_count_).store(abandoned_.size(), std::memory_order_release);
    skip_abandoned();
}

void ShmTurns::skip_abandoned()
{
    std::atomic_ref<std::uint64_t> serving(serving_);
    for (auto it = abandoned_.begin(); it != abandoned_.end();) {
        if (*it != serving.load(std::memory_order_acquire)) {
            ++it;
            continue;
        }
        serving.fetch_add(1, std::memory_order_release);
        abandoned_.erase(it);
        it = abandoned_.begin(); // the next one may be abandoned too
    }
    std::atomic_ref<std::size_t>(abandoned_count_).store(abandoned_.size(), std::memory_order_release);
}

} // namespace loom
