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
// fiber's per-thread pool. A resumption is two _setjmp/_longjmp switches (fiber.hpp). The operation has no shared state: shared-memory algorithms, which need the
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

namespace loom {
namespace {

// The glue's transport, never blocking: a wait yields until test_all says every posted
// message completed, and a wait on shared memory yields too.
class ResumableTransport final : public CallbackTransport {
public:
    using CallbackTransport::CallbackTransport;
    void wait_all() override
    {
        for (;;) {
            const int done = t_.test_all(t_.ctx);
            if (done == 1) return;
            if (done != 0) throw TransportError(done, "test_all");
            Fiber::yield();
        }
    }
    void progress() override { Fiber::yield(); }
};

} // namespace
} // namespace loom

struct loom_resumable {
    loom_transport_t transport;
    loom_call_t call;
    loom::ResumableTransport net{transport};
    loom::HostMemory mem;
    std::unique_ptr<loom::Fiber> fiber;
    int rc = LOOM_SUCCESS;
};

using namespace loom;

extern "C" loom_resumable_t* loom_resumable_create(const loom_transport_t* transport, const loom_call_t* call)
{
    loom_resumable_t* op = nullptr;
    const int rc = guarded([&] {
        const auto* algo = static_cast<const Algorithm*>(call->chosen);
        if (algo == nullptr || transport->test_all == nullptr || call->copier != nullptr)
            throw std::invalid_argument("not resumable");
        auto made = std::make_unique<loom_resumable>();
        made->transport = *transport;
        made->call = *call;
        loom_resumable* self = made.get();
        made->fiber = std::make_unique<Fiber>(
            [self, algo] { self->rc = guarded([&] { run_call(*algo, self->net, self->mem, self->call); }); });
        op = made.release();
    });
    return rc == LOOM_SUCCESS ? op : nullptr;
}

extern "C" int loom_resumable_resume(loom_resumable_t* op, int* rc)
{
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

extern "C" void loom_resumable_free(loom_resumable_t* op) { delete op; }

extern "C" std::size_t loom_resumable_stack_bytes(void) { return Fiber::kDefaultStack; }
