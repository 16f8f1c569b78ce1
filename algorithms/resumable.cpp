// Resumable operations: one collective call's algorithm, unchanged, on a fiber of its own, for
// the non-blocking and persistent collectives (loom_resumable_* in loom_c_api.h).
//
// Why a fiber: every loom algorithm is straight-line code over Transport (post sends and
// receives, wait for them, compute, repeat). Rewriting each as a state machine or a libnbc-style
// schedule would be a second implementation per algorithm; on a fiber the same function runs,
// and where the blocking path would wait (Transport::wait_all, or a wait on shared memory that
// calls progress()) it yields instead, so whoever resumes it - Open MPI's progress engine -
// decides when it goes on. Its locals live on its own stack between resumptions.
//
// Cost per operation: one Fiber::kDefaultStack (256 KiB) of virtual memory, mapped on demand
// (test_resumable measures at most 64 KiB of it resident after every collective's algorithms),
// plus this object with its HostMemory (1.5 KiB); stacks, once started, are reused through the
// fiber's per-thread pool, and operation objects through this file's (an object of that size
// takes malloc's slow path: about 1,000 instructions of an 8-byte MPI_Iallreduce went to
// making, zeroing and freeing it, callgrind). A resumption is two _setjmp/_longjmp switches (fiber.hpp). The operation has no shared state: shared-memory algorithms, which need the
// communicator's segment for one call at a time, are not run here (the chooser is told there
// is no segment), and device buffers are not staged here.
#include "callback_transport.hpp"
#include "fiber.hpp"
#include "guarded.hpp"
#include "loom_c_api.h"
#include "registry.hpp"
#include "topology.hpp"

#include <memory>
#include <new>
#include <optional>
#include <vector>

namespace loom {
namespace {

// The glue's transport, never blocking: a wait yields until test_all says every posted
// message completed, and a wait on shared memory yields too. While the fiber waits on its
// messages, the resumer tests them itself (ready()) and switches to the fiber only once they
// are done: a poll that finds them pending costs a test, not two stack switches.
class ResumableTransport final : public CallbackTransport {
public:
    using CallbackTransport::CallbackTransport;
    void wait_all() override
    {
        int done = t_.test_all(t_.ctx);
        while (done == 0) {
            waiting_ = true;
            Fiber::yield();
            waiting_ = false;
            done = tested_; // what ready() found before resuming
        }
        if (done != 1) throw TransportError(done, "test_all");
    }
    void progress() override { Fiber::yield(); }
    void reset() // for an operation object taken from the pool
    {
        waiting_ = false;
        tested_ = 0;
    }
    // For the resumer: false while the fiber waits on messages that are not all done.
    bool ready()
    {
        if (!waiting_) return true;
        tested_ = t_.test_all(t_.ctx);
        return tested_ != 0;
    }

private:
    bool waiting_ = false;
    int tested_ = 0;
};

} // namespace
} // namespace loom

struct loom_resumable {
    loom_transport_t transport;
    loom_call_t call;
    loom::ResumableTransport net{transport};
    std::optional<loom::HostMemory> mem;
    std::optional<loom::Fiber> fiber;
    int rc = LOOM_SUCCESS;
};

using namespace loom;

namespace {
// Finished operations kept for the thread's next one (freed on one thread, reused there).
struct OperationPool {
    std::vector<loom_resumable*> free;
    ~OperationPool()
    {
        for (loom_resumable* op : free) delete op;
    }
};
thread_local OperationPool operations;
constexpr std::size_t kOperationPoolLimit = 256;
} // namespace

extern "C" loom_resumable_t* loom_resumable_create(const loom_transport_t* transport, const loom_call_t* call)
{
    loom_resumable_t* op = nullptr;
    const int rc = guarded([&] {
        const auto* algo = static_cast<const Algorithm*>(call->chosen);
        if (algo == nullptr || transport->test_all == nullptr || call->copier != nullptr)
            throw std::invalid_argument("not resumable");
        std::unique_ptr<loom_resumable> made;
        if (!operations.free.empty()) {
            made.reset(operations.free.back());
            operations.free.pop_back();
        } else {
            made.reset(new loom_resumable); // default-initialised: nothing zeroed
        }
        made->transport = *transport;
        made->call = *call;
        made->rc = LOOM_SUCCESS;
        made->net.reset();
        made->mem.emplace();
        loom_resumable* self = made.get();
        made->fiber.emplace(
            [self, algo] { self->rc = guarded([&] { run_call(*algo, self->net, *self->mem, self->call); }); });
        op = made.release();
    });
    return rc == LOOM_SUCCESS ? op : nullptr;
}

extern "C" int loom_resumable_resume(loom_resumable_t* op, int* rc)
{
    if (!op->net.ready()) return 0;
    // The body catches everything it throws (guarded above); resume() itself throws only if
    // the body did, so this is belt and braces.
    const int resumed = guarded([&] { op->fiber->resume(); });
    if (resumed != LOOM_SUCCESS) {
        *rc = resumed;
        return 1;
    }
    if (!op->fiber->finished()) return 0;
    *rc = op->rc;
    return 1;
}

extern "C" void loom_resumable_free(loom_resumable_t* op)
{
    if (op == nullptr) return;
    op->fiber.reset(); // its stack back to the fiber pool, or unmapped
    op->mem.reset();
    if (operations.free.size() < kOperationPoolLimit) {
        try {
            operations.free.push_back(op);
            return;
        } catch (...) {}
    }
    delete op;
}

extern "C" std::size_t loom_resumable_stack_bytes(void) { return Fiber::kDefaultStack; }
