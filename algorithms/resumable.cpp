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
// plus this object with its HostMemory (1.5 KiB). Operation objects are reused through this
// file's per-thread pool, each with its fiber's stack (re-armed, not handed back to the fiber's
// pool of stacks and taken again: about 190 instructions a call, callgrind): an object of that size
// takes malloc's slow path (about 1,000 instructions of an 8-byte MPI_Iallreduce went to
// making, zeroing and freeing it, callgrind). A resumption is two fiber switches (fiber.hpp),
// made only once the messages waited on are done (ResumableTransport::ready).
// Scratch blocks above 1 KiB stay with the operation, so a persistent request's restart
// (loom_resumable_restart) allocates nothing.
//
// Shared-memory algorithms run here too, in their turn on the communicator's segment
// (ShmTurns: the glue takes it when the MPI call is made and passes it as the transport's
// segment_turn); their waits yield (cooperative()). The segment may itself be set up by an
// operation (loom_resumable_create_setup) holding the first turn; a call decided before it
// ended finds at its turn that there is no segment (ShmUnavailable, thrown before the
// algorithm touched anything, on every rank) and runs its stand-in instead, on the same
// fiber and tag. Device buffers are not staged here (the glue runs such calls on host copies).
#include "callback_transport.hpp"
#include "fiber.hpp"
#include "guarded.hpp"
#include "loom_c_api.h"
#include "registry.hpp"
#include "shm.hpp"
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
    bool cooperative() const override { return true; }
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

namespace loom {
namespace {

// An operation's memory: HostMemory's copies, reductions and small scratch, and larger scratch
// blocks that the operation keeps until it is freed. A persistent request restarts its
// operation (loom_resumable_restart), and the same algorithm on the same call asks for the
// same sizes in the same order, so a restart finds its blocks and allocates nothing.
class KeptMemory final : public MemoryOps {
public:
    KeptMemory() = default;
    KeptMemory(const KeptMemory&) = delete;
    KeptMemory& operator=(const KeptMemory&) = delete;
    ~KeptMemory() { release(); }

    void copy(void* dst, const void* src, std::size_t bytes) override { host_->copy(dst, src, bytes); }
    void reduce(const Reduction& op, const void* in, void* inout, std::size_t count) override
    {
        host_->reduce(op, in, inout, count);
    }
    void reduce_into(const Reduction& op, const void* in, const void* in2, void* out, std::size_t count) override
    {
        host_->reduce_into(op, in, in2, out, count);
    }
    Scratch scratch(std::size_t bytes) override
    {
        if (bytes <= kSmall) return host_->scratch(bytes); // its inline buffer, as on the blocking path
        for (std::byte* raw : blocks_) {
            auto* h = reinterpret_cast<Header*>(raw);
            if (!h->in_use && h->bytes >= bytes) {
                h->in_use = true;
                return Scratch(raw + kHeader, &give_back);
            }
        }
        const std::size_t rounded = (bytes + kHeader - 1) / kHeader * kHeader;
        auto* raw = static_cast<std::byte*>(std::aligned_alloc(kHeader, kHeader + rounded));
        if (raw == nullptr) throw std::bad_alloc();
        try {
            blocks_.push_back(raw);
        } catch (...) {
            std::free(raw);
            throw;
        }
        new (raw) Header{rounded, true};
        return Scratch(raw + kHeader, &give_back);
    }
    // A run starts: HostMemory's inline buffer is empty again (the blocks stay).
    void new_run() { host_.emplace(); }
    // Frees the blocks (none may be in use by a running algorithm).
    void release()
    {
        for (std::byte* raw : blocks_) std::free(raw);
        blocks_.clear();
    }
    std::size_t kept_bytes() const
    {
        std::size_t n = 0;
        for (const std::byte* raw : blocks_) n += reinterpret_cast<const Header*>(raw)->bytes;
        return n;
    }

private:
    static constexpr std::size_t kSmall = 1024; // HostMemory's inline buffer
    static constexpr std::size_t kHeader = 64;  // keeps the block 64-byte aligned
    struct Header {
        std::size_t bytes;
        bool in_use;
    };
    static void give_back(std::byte* p) { reinterpret_cast<Header*>(p - kHeader)->in_use = false; }
    std::vector<std::byte*> blocks_;
    std::optional<HostMemory> host_;
};

} // namespace
} // namespace loom

struct loom_resumable {
    loom_transport_t transport;
    loom_call_t call;
    loom::ResumableTransport net{transport};
    loom::KeptMemory mem;
    std::optional<loom::Fiber> fiber;
    int rc = LOOM_SUCCESS;
    bool stood_in = false; // the last run ran the call's stand-in
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

// The call's algorithm, or its stand-in if the segment it needs could not be set up.
void run_or_stand_in(const Algorithm& algo, Transport& net, MemoryOps& mem, const loom_call_t& call, bool& stood_in)
{
    try {
        run_call(algo, net, mem, call);
    } catch (const ShmUnavailable&) {
        if (call.stand_in.algorithm == nullptr) throw;
        loom_call_t instead = call;
        loom_call_as_stand_in(&instead);
        stood_in = true;
        run_call(*static_cast<const Algorithm*>(instead.chosen), net, mem, instead);
    }
}

// Arms op to run body over transport from the start (a new fiber; the kept memory stays).
template <class Body>
void arm_body(loom_resumable* op, const loom_transport_t* transport, Body body)
{
    if (transport->test_all == nullptr) throw std::invalid_argument("not resumable");
    op->transport = *transport;
    op->rc = LOOM_SUCCESS;
    op->stood_in = false;
    op->net.reset();
    op->mem.new_run();
    // A pooled operation's fiber finished its last run: the same stack runs the next one.
    if (op->fiber && op->fiber->rearm(body)) return;
    op->fiber.reset();
    op->fiber.emplace(body);
}

// Arms op to run call over transport.
void arm(loom_resumable* op, const loom_transport_t* transport, const loom_call_t* call)
{
    const auto* algo = static_cast<const Algorithm*>(call->chosen);
    if (algo == nullptr || call->copier != nullptr) throw std::invalid_argument("not resumable");
    op->call = *call;
    arm_body(op, transport, [op, algo] {
        op->rc = guarded([&] { run_or_stand_in(*algo, op->net, op->mem, op->call, op->stood_in); });
    });
}

loom_resumable* take_operation()
{
    std::unique_ptr<loom_resumable> made;
    if (!operations.free.empty()) {
        made.reset(operations.free.back());
        operations.free.pop_back();
    } else {
        made.reset(new loom_resumable); // default-initialised: nothing zeroed
    }
    return made.release();
}
} // namespace

extern "C" loom_resumable_t* loom_resumable_create(const loom_transport_t* transport, const loom_call_t* call)
{
    loom_resumable_t* op = nullptr;
    const int rc = guarded([&] {
        std::unique_ptr<loom_resumable> made(take_operation());
        arm(made.get(), transport, call);
        op = made.release();
    });
    return rc == LOOM_SUCCESS ? op : nullptr;
}

extern "C" loom_resumable_t* loom_resumable_create_setup(const loom_transport_t* transport, int single_copy)
{
    loom_resumable_t* op = nullptr;
    const SingleCopy allow = single_copy_from(single_copy);
    const int rc = guarded([&] {
        std::unique_ptr<loom_resumable> made(take_operation());
        made->call = loom_call_t{};
        loom_resumable* raw = made.get();
        arm_body(raw, transport, [raw, allow] { raw->rc = guarded([&] { shm_setup_in_turn(raw->net, allow); }); });
        op = made.release();
    });
    return rc == LOOM_SUCCESS ? op : nullptr;
}

extern "C" int loom_resumable_restart(loom_resumable_t* op, const loom_transport_t* transport, const loom_call_t* call)
{
    return guarded([&] { arm(op, transport, call); });
}

extern "C" int loom_resumable_stood_in(const loom_resumable_t* op) { return op->stood_in ? 1 : 0; }

extern "C" std::size_t loom_resumable_kept_bytes(const loom_resumable_t* op) { return op->mem.kept_bytes(); }

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
    // A finished fiber stays with the operation for its next run (arm re-arms it); one that
    // stopped midway holds that run's frames, and its stack is unmapped.
    if (op->fiber && !op->fiber->finished()) op->fiber.reset();
    op->mem.release();
    if (operations.free.size() < kOperationPoolLimit) {
        try {
            operations.free.push_back(op);
            return;
        } catch (...) {}
    }
    delete op;
}

extern "C" std::size_t loom_resumable_stack_bytes(void) { return Fiber::kDefaultStack; }
