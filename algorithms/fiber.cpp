// glibc's fortified longjmp refuses a jump to another stack ("longjmp causes uninitialized
// stack frame"), which is what a fiber switch is.
#undef _FORTIFY_SOURCE
#include "fiber.hpp"

#include <csetjmp>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

// Under valgrind, a switch between stacks closer than its --max-stackframe (2 MB) looks like
// a huge stack frame: memcheck then marks the other stack's live frames inaccessible and
// reports hundreds of thousands of false errors (nonblocking_check --threads, whose thread
// stacks lie near the fiber stacks). Registering each stack tells it where stacks are. The
// client requests are a few no-op instructions outside valgrind; header only, no library.
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define LOOM_STACK_REGISTER(lo, hi) VALGRIND_STACK_REGISTER(lo, hi)
#define LOOM_STACK_DEREGISTER(id)   VALGRIND_STACK_DEREGISTER(id)
#else
#define LOOM_STACK_REGISTER(lo, hi) 0u
#define LOOM_STACK_DEREGISTER(id)   (void)(id)
#endif

namespace loom {

struct Fiber::Context {
    void* stack = nullptr;
    std::size_t mapped = 0;
    unsigned valgrind_id = 0; // the stack as registered with valgrind
    bool started = false;     // its run loop is on the stack (parked or running a fiber)
    Fiber* fiber = nullptr;
    ucontext_t start{}, starter{};
    std::jmp_buf in{}, out{}; // where the fiber goes on; where its resumer goes on

    explicit Context(std::size_t stack_bytes)
    {
        const auto page = std::size_t(sysconf(_SC_PAGESIZE));
        mapped = (stack_bytes + page - 1) / page * page + page; // + the guard page
        stack = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (stack == MAP_FAILED) throw std::bad_alloc();
        mprotect(stack, page, PROT_NONE); // stacks grow down: the guard is the lowest page
        valgrind_id = LOOM_STACK_REGISTER(static_cast<char*>(stack) + page, static_cast<char*>(stack) + mapped);
    }
    ~Context()
    {
        LOOM_STACK_DEREGISTER(valgrind_id);
        munmap(stack, mapped);
    }

    // The run loop, on the context's own stack: run a fiber's body, park, run the next.
    // Nothing here reads a thread_local: a parked context may be resumed on another thread.
    static void run(unsigned hi, unsigned lo)
    {
        auto* self = reinterpret_cast<Context*>((std::uintptr_t(hi) << 32) | std::uintptr_t(lo));
        for (;;) {
            Fiber* f = self->fiber;
            try {
                f->body_();
            } catch (...) {
                f->failure_ = std::current_exception();
            }
            f->finished_ = true;
            if (_setjmp(self->in) == 0) _longjmp(self->out, 1);
        }
    }
};

namespace {
thread_local Fiber* current = nullptr;

// Contexts of the default size are kept for the next fiber of this thread: a simulation
// creates one per rank and a non-blocking collective one per call, and mapping a stack or
// starting a context costs more than a short run. The pool stays until the thread ends.
struct ContextPool {
    std::vector<Fiber::Context*> free;
    ~ContextPool()
    {
        for (Fiber::Context* c : free) delete c;
    }
};
thread_local ContextPool pool;
constexpr std::size_t kPoolLimit = 1 << 15;
} // namespace

Fiber::Fiber(std::function<void()> body, std::size_t stack_bytes) : body_(std::move(body))
{
    if (stack_bytes == kDefaultStack && !pool.free.empty()) {
        context_ = pool.free.back();
        pool.free.pop_back();
    } else {
        context_ = new Context(stack_bytes);
    }
    context_->fiber = this;
}

Fiber::~Fiber()
{
    // A context whose fiber stopped midway holds that fiber's frames: it cannot run another.
    const bool parked = finished_ || !context_->started;
    const auto page = std::size_t(sysconf(_SC_PAGESIZE));
    const bool default_size = context_->mapped == (kDefaultStack + page - 1) / page * page + page;
    if (parked && default_size && pool.free.size() < kPoolLimit) {
        context_->fiber = nullptr;
        pool.free.push_back(context_);
    } else {
        delete context_;
    }
}

void Fiber::resume()
{
    if (finished_) return;
    Fiber* outer = current;
    current = this;
    Context* c = context_;
    if (_setjmp(c->out) == 0) {
        if (!c->started) {
            c->started = true;
            getcontext(&c->start);
            c->start.uc_stack.ss_sp = c->stack;
            c->start.uc_stack.ss_size = c->mapped;
            c->start.uc_link = nullptr;
            const auto p = reinterpret_cast<std::uintptr_t>(c);
            makecontext(&c->start, reinterpret_cast<void (*)()>(&Context::run), 2, unsigned(p >> 32),
                        unsigned(p & 0xffffffffu));
            swapcontext(&c->starter, &c->start); // never returns here: the context jumps to c->out
        }
        _longjmp(c->in, 1);
    }
    current = outer;
    if (failure_) {
        auto e = failure_;
        failure_ = nullptr;
        std::rethrow_exception(e);
    }
}

void Fiber::yield()
{
    Fiber* self = current;
    if (self == nullptr) throw std::logic_error("Fiber::yield outside a fiber");
    Context* c = self->context_;
    if (_setjmp(c->in) == 0) _longjmp(c->out, 1);
}

} // namespace loom
