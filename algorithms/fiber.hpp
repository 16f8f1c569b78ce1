// A fiber: a function running on its own stack that can pause (yield) and be resumed. loom-sim
// holds thousands of simulated ranks mid-algorithm in one thread with it, and the non-blocking
// collectives (resumable.hpp) run an algorithm's unchanged function on one, pausing wherever
// it would wait. The stack is mmap'd (only touched pages cost memory) with a guard page below
// it, so an overflow faults instead of corrupting a neighbour. A stack is started once with
// ucontext (makecontext, swapcontext) and then kept, running one fiber after another; every
// switch is a setjmp/longjmp pair (the compiler's builtin pair, else glibc's _setjmp/_longjmp;
// fiber.cpp), which saves no signal mask: ucontext's sigprocmask system calls on every switch
// and start made an 8-byte MPI_Iallreduce cost 4x its blocking form.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>

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
    // Once the body has returned (finished()): body runs next, from its start, on the same
    // stack, which stays parked in its run loop - no hand-over through the thread's pool of
    // stacks. A non-blocking collective's pooled operation re-arms its fiber so. False, and
    // nothing changed, if the body has not returned.
    bool rearm(std::function<void()> body);

    // Called from inside a running fiber: back to whoever resumed it.
    static void yield();

    // A stack and the place a fiber on it runs from. A context whose body returned stays
    // parked in its run loop and takes the next fiber of its thread without a new start
    // (fiber.cpp); contexts are kept per thread.
    struct Context;

private:
    friend struct Context;
    std::function<void()> body_;
    Context* context_ = nullptr;
    bool finished_ = false;
    std::exception_ptr failure_;
};

} // namespace loom
