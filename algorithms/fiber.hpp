// A fiber: a function running on its own stack that can pause (yield) and be resumed. loom-sim
// holds thousands of simulated ranks mid-algorithm in one thread with it, and the non-blocking
// collectives (resumable.hpp) run an algorithm's unchanged function on one, pausing wherever
// it would wait. Built on ucontext; the stack is mmap'd (only touched pages cost memory) with
// a guard page below it, so an overflow faults instead of corrupting a neighbour. A switch
// costs a few hundred nanoseconds (swapcontext saves the signal mask with a system call).
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <ucontext.h>

namespace loom {

class Fiber {
public:
    static constexpr std::size_t kDefaultStack = 256 * 1024;

    explicit Fiber(std::function<void()> body, std::size_t stack_bytes = kDefaultStack);
    ~Fiber();
    Fiber(const Fiber&) = delete;
    Fiber& operator=(const Fiber&) = delete;

    // Runs the body until it yields or returns; rethrows what the body threw.
    void resume();
    bool finished() const { return finished_; }

    // Called from inside a running fiber: back to whoever resumed it.
    static void yield();

private:
    static void trampoline();
    std::function<void()> body_;
    void* stack_ = nullptr;
    std::size_t mapped_ = 0;
    ucontext_t context_{}, caller_{};
    bool started_ = false, finished_ = false;
    std::exception_ptr failure_;
};

} // namespace loom
